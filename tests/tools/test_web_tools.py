"""Built-in web tools against a local server speaking each service's documented format."""

from __future__ import annotations

import json

import pytest
from _services import ToolCtx

from plait.tools import default_tools, web_search_tool, wikipedia_tool
from plait.tools.base import ToolError
from plait.tools.web import parse_duckduckgo


def test_default_registry_has_the_builtins_with_json_schemas():
    tools = default_tools()
    assert {"http_request", "web_search", "wikipedia", "arxiv", "flow"} <= tools.names()
    for tool in tools.list():
        assert tool.parameters["type"] == "object"
        assert tool.description
        assert tool.source in ("builtin", "flow")


async def test_searxng_backend(services):
    ctx = ToolCtx({"PLAIT_SEARCH_BACKEND": "searxng", "SEARXNG_URL": services.url + "/searx"})
    out = await default_tools().get("web_search").call({"query": "plait", "max_results": 5}, ctx)
    assert out["backend"] == "searxng"
    assert out["results"] == [
        {"title": "Plait - weaving flows", "url": "https://example.org/plait",
         "snippet": "Plait is a durable orchestrator."},
        {"title": "Braids", "url": "https://example.com/braid", "snippet": ""},
    ]  # fmt: skip
    assert services.requests[-1]["query"] == {"q": "plait", "format": "json"}


async def test_searxng_without_url_names_the_variable():
    with pytest.raises(ToolError) as exc:
        await web_search_tool("searxng").call({"query": "x"}, ToolCtx())
    assert "SEARXNG_URL" in str(exc.value)
    assert exc.value.fatal


async def test_tavily_backend_sends_the_key_from_secrets(services):
    tool = web_search_tool("tavily", base_url=services.url + "/tavily")
    out = await tool.call(
        {"query": "who maintains plait", "max_results": 3}, ToolCtx({"TAVILY_API_KEY": "tvly-test"})
    )
    assert out["answer"] == "The plait team."
    assert out["results"][0]["url"] == "https://example.org/about"
    sent = services.requests[-1]
    assert sent["method"] == "POST"
    assert sent["headers"]["Authorization"] == "Bearer tvly-test"
    assert json.loads(sent["body"]) == {
        "query": "who maintains plait",
        "max_results": 3,
        "search_depth": "basic",
    }


async def test_tavily_missing_and_wrong_key(services):
    tool = web_search_tool("tavily", base_url=services.url + "/tavily")
    with pytest.raises(ToolError, match="TAVILY_API_KEY"):
        await tool.call({"query": "x"}, ToolCtx())
    with pytest.raises(ToolError, match="HTTP 401") as exc:
        await tool.call({"query": "x"}, ToolCtx({"TAVILY_API_KEY": "wrong"}))
    assert "API key" in str(exc.value)


async def test_duckduckgo_backend_skips_ads_and_unwraps_links(services):
    tool = web_search_tool("duckduckgo", base_url=services.url + "/ddg/html/")
    out = await tool.call({"query": "python", "max_results": 5}, ToolCtx())
    assert out["results"] == [
        {"title": "Welcome to Python .org", "url": "https://www.python.org/",
         "snippet": "The official home of the Python Programming Language"},
        {"title": "Python (programming language) - Wikipedia",
         "url": "https://en.wikipedia.org/wiki/Python_(programming_language)",
         "snippet": "Python is a high-level, general-purpose programming language."},
    ]  # fmt: skip
    assert services.requests[-1]["method"] == "POST"
    assert "q=python" in services.requests[-1]["body"]


def test_duckduckgo_lite_layout():
    html = """<table>
      <tr><td>1.</td><td><a rel="nofollow" href="https://www.python.org/" class='result-link'>Welcome to Python.org</a></td></tr>
      <tr><td></td><td class='result-snippet'>The official home of the Python Programming Language</td></tr>
      <tr><td></td><td><span class='link-text'>www.python.org</span></td></tr>
    </table>"""
    assert parse_duckduckgo(html, 5) == [
        {"title": "Welcome to Python.org", "url": "https://www.python.org/",
         "snippet": "The official home of the Python Programming Language"}
    ]  # fmt: skip


async def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ToolError, match="PLAIT_SEARCH_BACKEND"):
        await (
            default_tools().get("web_search").call({"query": "x"}, ToolCtx({"PLAIT_SEARCH_BACKEND": "bing"}))
        )
    with pytest.raises(ValueError, match="unknown search backend"):
        web_search_tool("bing")


async def test_wikipedia_orders_by_search_rank(services):
    tool = wikipedia_tool(base_url=services.url + "/wiki")
    out = await tool.call({"query": "python", "max_results": 2}, ToolCtx())
    assert [r["title"] for r in out["results"]] == ["Python (programming language)", "Python (genus)"]
    assert out["results"][0]["summary"].startswith("Python is a high-level")
    q = services.requests[-1]["query"]
    assert q["generator"] == "search" and q["gsrsearch"] == "python" and q["gsrlimit"] == "2"


async def test_wikipedia_language_placeholder(services):
    tool = wikipedia_tool(base_url=services.url.replace("127.0.0.1", "{lang}") + "/wiki")
    with pytest.raises(ToolError, match="invalid language"):
        await tool.call({"query": "x", "lang": "../etc"}, ToolCtx())


async def test_arxiv_atom_feed(services):
    ctx = ToolCtx({"ARXIV_URL": services.url + "/arxiv/api/query"})
    out = await default_tools().get("arxiv").call({"query": "electron", "max_results": 1}, ctx)
    (paper,) = out["results"]
    assert paper["title"] == "Multi-Electron Production at High Transverse Momenta in ep Collisions at HERA"
    assert paper["authors"] == ["H1 Collaboration", "A. Aktas"]
    assert paper["pdf_url"] == "http://arxiv.org/pdf/hep-ex/0307015v1"
    assert paper["primary_category"] == "hep-ex"
    assert paper["summary"].startswith("Multi-electron production is studied")
    assert services.requests[-1]["query"]["search_query"] == "all:electron"


async def test_arxiv_error_feed(services):
    ctx = ToolCtx({"ARXIV_URL": services.url + "/arxiv/api/query"})
    with pytest.raises(ToolError, match="incorrect id format"):
        await default_tools().get("arxiv").call({"query": "id:1234.12345"}, ctx)


async def test_http_request_json_html_and_errors(services):
    tool = default_tools().get("http_request")
    out = await tool.call({"url": services.url + "/echo", "method": "POST", "body": {"a": 1}, "query": {"x": "1"}},
                          ToolCtx())  # fmt: skip
    assert out["status"] == 200
    assert out["body"] == {"method": "POST", "query": {"x": "1"}, "body": '{"a":1}'}
    page = await tool.call({"url": services.url + "/page"}, ToolCtx())
    assert page["body"] == "Hi\nthere"
    missing = await tool.call({"url": services.url + "/nope"}, ToolCtx())
    assert missing["status"] == 404
    with pytest.raises(ToolError, match="url must be"):
        await tool.call({}, ToolCtx())


async def test_http_request_goes_through_the_ssrf_guard(services, monkeypatch):
    monkeypatch.delenv("PLAIT_HTTP_ALLOW")
    with pytest.raises(ToolError, match="loopback address.*PLAIT_HTTP_ALLOW"):
        await default_tools().get("http_request").call({"url": services.url + "/echo"}, ToolCtx())
    with pytest.raises(ToolError, match="only absolute http"):
        await default_tools().get("http_request").call({"url": "file:///etc/passwd"}, ToolCtx())
