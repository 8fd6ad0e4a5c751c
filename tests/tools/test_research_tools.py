"""crawler, tavily_extract, pubmed and github against a local server speaking each API's shapes,
through the SSRF guard; each as an agent tool and as a `tool` node in a flow."""

from __future__ import annotations

import json

import pytest
from _research_services import ResearchServices
from _services import ToolCtx

import plait
from plait.tools import default_tools
from plait.tools.base import ToolError


@pytest.fixture
def research(monkeypatch):
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    with ResearchServices() as s:
        yield s


def test_the_tools_are_registered_with_schemas():
    names = default_tools().names()
    assert {"email", "crawler", "tavily_extract", "pubmed", "github", "sql"} <= names
    for name in ("email", "crawler", "tavily_extract", "pubmed", "github", "sql"):
        tool = default_tools().get(name)
        assert tool.parameters["type"] == "object" and tool.parameters["required"]


async def test_crawler_keeps_the_readable_part(research):
    out = await default_tools().get("crawler").call({"url": research.url + "/page"}, ToolCtx())
    assert out["title"] == "Plait weaving guide"
    text = out["content"]
    assert text.startswith("How to weave")
    assert "Take three strands." in text and "Cross right over middle" in text
    for hidden in ("tracking", "color:red", "Home", "footer", "secret hidden"):
        assert hidden not in text
    md = (
        await default_tools()
        .get("crawler")
        .call({"url": research.url + "/page", "format": "markdown"}, ToolCtx())
    )
    assert "# How to weave" in md["content"] and "- Cross left over middle" in md["content"]
    assert "**three**" in md["content"] and "[more](https://example.org/more)" in md["content"]


async def test_crawler_refuses_private_addresses_and_non_pages(research, monkeypatch):
    tool = default_tools().get("crawler")
    with pytest.raises(ToolError, match="not a web page"):
        await tool.call({"url": research.url + "/image.png"}, ToolCtx())
    with pytest.raises(ToolError, match="blocked request"):  # a redirect into the private network
        await tool.call({"url": research.url + "/redirect-inside"}, ToolCtx())
    monkeypatch.delenv("PLAIT_HTTP_ALLOW")
    with pytest.raises(ToolError, match="internal addresses are refused"):
        await tool.call({"url": research.url + "/page"}, ToolCtx())
    with pytest.raises(ToolError, match="format must be"):
        await tool.call({"url": research.url + "/page", "format": "pdf"}, ToolCtx())


async def test_tavily_extract(research):
    tool = default_tools().get("tavily_extract")
    ctx = ToolCtx({"TAVILY_API_KEY": "tvly-test", "TAVILY_URL": research.url + "/tavily"})
    out = await tool.call(
        {"urls": "https://en.wikipedia.org/wiki/Artificial_intelligence, https://nope.example"}, ctx
    )
    assert out["results"][0]["content"].startswith("# Artificial intelligence")
    assert out["failed_results"] == [{"url": "https://nope.example", "error": "Failed to fetch url"}]
    sent = json.loads(research.requests[-1]["body"])
    assert sent == {
        "urls": ["https://en.wikipedia.org/wiki/Artificial_intelligence", "https://nope.example"],
        "extract_depth": "basic",
        "format": "markdown",
        "include_images": False,
    }
    with pytest.raises(ToolError, match="TAVILY_API_KEY") as exc:
        await tool.call({"urls": ["https://x.example"]}, ToolCtx({"TAVILY_URL": research.url + "/tavily"}))
    assert exc.value.fatal
    with pytest.raises(ToolError, match="HTTP 401"):
        await tool.call(
            {"urls": ["https://x.example"]},
            ToolCtx({"TAVILY_API_KEY": "bad", "TAVILY_URL": research.url + "/tavily"}),
        )


async def test_pubmed_search_then_fetch(research):
    ctx = ToolCtx({"PUBMED_URL": research.url + "/eutils", "NCBI_API_KEY": "ncbi-key"})
    out = await default_tools().get("pubmed").call({"query": "crispr", "max_results": 2}, ctx)
    first, second = out["results"]
    assert first["pmid"] == "38012345"
    assert first["title"] == "Base editing with CRISPR in human cells."
    assert first["authors"] == ["Jennifer A Doudna", "CRISPR Consortium"]
    assert first["journal"] == "Nature biotechnology" and first["year"] == "2024"
    assert first["doi"] == "10.1038/s41587-023-0001-x"
    assert first["abstract"] == "Base editors convert single bases.\nThey work in human cells."
    assert first["url"] == "https://pubmed.ncbi.nlm.nih.gov/38012345/"
    assert second["abstract"] == "" and second["authors"] == ["David R Liu"]
    search, fetch = research.requests[-2:]
    assert search["path"] == "/eutils/esearch.fcgi"
    assert search["query"] == {"db": "pubmed", "api_key": "ncbi-key", "tool": "plait", "term": "crispr",
                               "retmax": "2", "retmode": "json"}  # fmt: skip
    assert fetch["query"]["id"] == "38012345,37999999" and fetch["query"]["retmode"] == "xml"


async def test_github_search(research):
    ctx = ToolCtx({"GITHUB_API_URL": research.url + "/github", "GITHUB_TOKEN": "ghp_test"})
    out = await default_tools().get("github").call({"query": "rag engine", "max_results": 5}, ctx)
    assert out["total_count"] == 2
    assert out["results"][0] == {
        "name": "infiniflow/ragflow",
        "url": "https://github.com/infiniflow/ragflow",
        "description": "RAG engine",
        "stars": 70000,
        "language": "Python",
        "updated_at": "2026-11-20T10:00:00Z",
    }
    assert out["results"][1]["description"] == ""
    sent = research.requests[-1]
    assert sent["query"] == {"q": "rag engine", "sort": "stars", "order": "desc", "per_page": "5"}
    assert sent["headers"]["Authorization"] == "Bearer ghp_test"
    assert sent["headers"]["X-GitHub-Api-Version"] == "2022-11-28"


async def test_the_tools_run_as_tool_nodes_with_stored_variables(research):
    doc = {
        "schema": "plait/flow@1",
        "id": "research",
        "nodes": [
            {"id": "gh", "type": "tool", "config": {"tool": "github", "args": {"query": "{{inputs.q}}"}}},
            {"id": "page", "type": "tool", "config": {"tool": "crawler", "input_param": "url"}},
        ],
        "edges": [],
    }
    doc["nodes"][1]["config"] = {"tool": "crawler", "args": {"url": research.url + "/page"}}
    result = await plait.run(doc, {"q": "ragflow"}, env={"GITHUB_API_URL": research.url + "/github"})
    assert result.status == "completed", result.error
    assert result.nodes["gh"].output["results"][0]["name"] == "infiniflow/ragflow"
    assert result.nodes["page"].output["title"] == "Plait weaving guide"
