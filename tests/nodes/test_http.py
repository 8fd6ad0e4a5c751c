"""The http and delay nodes against a real HTTP server on 127.0.0.1 (no other address is contacted)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from _http_context import CLIENTS, FakeContext, LocalServer

import plait
from plait import RunServices
from plait.net import guard
from plait.net import http as net_http
from plait.net.http import html_to_text
from plait.nodes import NodeError, default_registry
from plait.nodes.builtin import http as http_mod
from plait.nodes.builtin.http import HttpNode
from plait.nodes.builtin.timing import DelayNode


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture(scope="module")
def other_server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture(autouse=True)
def allow_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")


@pytest.fixture(autouse=True)
async def close_clients() -> Any:
    yield
    await CLIENTS.aclose()


def key() -> str:
    return uuid.uuid4().hex


def make(**config: Any) -> HttpNode:
    return HttpNode("call", HttpNode.Config.model_validate(config))


async def call(ctx: FakeContext | None = None, **config: Any) -> Any:
    return await make(**config).run(ctx or FakeContext())


# --------------------------------------------------------------------------- SSRF


async def test_loopback_is_blocked_by_default(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLAIT_HTTP_ALLOW")
    before = server.hits["/json"]
    with pytest.raises(NodeError) as info:
        await call(url=server.url("/json"))
    err = info.value
    assert err.retryable is False
    assert "127.0.0.1" in err.message and "loopback" in err.message and "PLAIT_HTTP_ALLOW" in err.message
    assert server.hits["/json"] == before  # nothing reached the server


async def test_localhost_name_is_blocked_by_default(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLAIT_HTTP_ALLOW")
    with pytest.raises(NodeError, match="localhost.*loopback"):
        await call(url=f"http://localhost:{server.port}/json")


async def test_allowlisted_port_only(server: LocalServer, other_server: LocalServer, monkeypatch) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server.port}")
    assert (await call(url=server.url("/json")))["status"] == 200
    with pytest.raises(NodeError, match="PLAIT_HTTP_ALLOW"):
        await call(url=other_server.url("/json"))


async def test_redirect_to_a_disallowed_destination_is_blocked(
    server: LocalServer, other_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = other_server.url("/json")
    # Control: with both servers allowed the redirect is followed to the other server.
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server.port},127.0.0.1:{other_server.port}")
    out = await call(url=server.url("/redirect"), query={"to": target})
    assert out["url"] == target and out["body"] == {"hello": "world", "n": 1}
    hits = other_server.hits["/json"]
    # Only the first server allowed: the hop to the other one must be re-checked and refused.
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server.port}")
    with pytest.raises(NodeError) as info:
        await call(url=server.url("/redirect"), query={"to": target})
    assert info.value.retryable is False
    assert "PLAIT_HTTP_ALLOW" in info.value.message and str(other_server.port) in info.value.message
    assert other_server.hits["/json"] == hits


async def test_redirect_to_other_loopback_address_is_blocked(server: LocalServer) -> None:
    with pytest.raises(NodeError, match=r"127\.0\.0\.2 is a loopback address"):
        await call(url=server.url("/redirect"), query={"to": f"http://127.0.0.2:{server.port}/json"})


@pytest.mark.parametrize("location", ["file:///etc/passwd", "gopher://127.0.0.1:70/x"])
async def test_redirect_to_other_scheme_is_blocked(server: LocalServer, location: str) -> None:
    with pytest.raises(NodeError, match="only http:// and https://") as info:
        await call(url=server.url("/redirect"), query={"to": location})
    assert info.value.retryable is False


async def test_too_many_redirects(server: LocalServer) -> None:
    with pytest.raises(NodeError, match="more than 5 times"):
        await call(url=server.url("/loop"))
    assert (await call(url=server.url("/loop"), follow_redirects=False))["status"] == 302


async def test_relative_redirect_is_followed(server: LocalServer) -> None:
    out = await call(url=server.url("/redirect"), query={"to": "/text", "code": 301})
    assert out["url"] == server.url("/text") and out["body"] == "just   some\ntext"


async def test_connection_goes_to_the_checked_address(server: LocalServer, monkeypatch) -> None:
    """DNS pinning: the name is resolved once by the guard and the connection uses that address."""
    seen: list[str] = []

    async def fake_resolve(host: str, port: int) -> list[Any]:
        seen.append(host)
        assert host == "pinned.test"
        return [ipaddress.ip_address("127.0.0.1")]

    monkeypatch.setattr(guard, "aresolve", fake_resolve)
    out = await call(url=f"http://pinned.test:{server.port}/echo")
    assert out["status"] == 200 and seen == ["pinned.test"]
    assert out["body"]["headers"]["host"] == f"pinned.test:{server.port}"


async def test_any_blocked_address_blocks_the_host(server: LocalServer, monkeypatch) -> None:
    async def fake_resolve(host: str, port: int) -> list[Any]:
        return [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("10.1.2.3")]

    monkeypatch.setattr(guard, "aresolve", fake_resolve)
    before = server.hits["/json"]
    with pytest.raises(
        NodeError, match=r"mixed\.test:\d+: it resolves to 10\.1\.2\.3, which is a private address"
    ):
        await call(url=f"http://mixed.test:{server.port}/json")
    assert server.hits["/json"] == before


async def test_invalid_allowlist_is_a_clear_error(server: LocalServer, monkeypatch) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1,10.0.0.0/33")
    with pytest.raises(NodeError, match="10.0.0.0/33"):
        await call(url=server.url("/json"))


# --------------------------------------------------------------------------- requests and responses


async def test_get_json(server: LocalServer) -> None:
    out = await call(url=server.url("/json"))
    assert out["status"] == 200
    assert out["body"] == {"hello": "world", "n": 1}
    assert out["headers"]["content-type"] == "application/json"
    assert out["headers"]["x-custom"] == "Yes"
    assert all(name == name.lower() for name in out["headers"])
    assert out["url"] == server.url("/json")
    assert isinstance(out["elapsed_ms"], float) and out["elapsed_ms"] > 0


async def test_templates_in_url_headers_query_and_body(server: LocalServer) -> None:
    ctx = FakeContext(
        {
            "inputs": {"path": "echo", "token": "t0k", "id": 7, "tags": ["a", "b"]},
            "prev": {"item": {"x": 1, "y": [True, None]}},
        }
    )
    out = await call(
        ctx,
        method="post",
        url=server.base + "/{{inputs.path}}?fixed=1",
        headers={"Authorization": "Bearer {{inputs.token}}", "X-Id": "{{inputs.id}}"},
        query={"id": "{{inputs.id}}", "tag": "{{inputs.tags}}", "skip": None},
        body={"item": "{{prev.item}}", "n": "{{inputs.id}}", "text": "id={{inputs.id}}"},
    )
    echo = out["body"]
    assert echo["method"] == "POST"
    assert echo["query"] == {"fixed": ["1"], "id": ["7"], "tag": ["a", "b"]}
    assert echo["headers"]["authorization"] == "Bearer t0k"
    assert echo["headers"]["x-id"] == "7"
    assert echo["headers"]["content-type"] == "application/json"
    assert json.loads(echo["body"]) == {"item": {"x": 1, "y": [True, None]}, "n": 7, "text": "id=7"}
    assert out["url"].startswith(server.url("/echo?"))


async def test_string_json_body_is_sent_as_is(server: LocalServer) -> None:
    ctx = FakeContext({"inputs": {"name": "Ann"}})
    out = await call(ctx, method="PUT", url=server.url("/echo"), body='{"name": "{{inputs.name}}"}')
    assert out["body"]["body"] == '{"name": "Ann"}'
    assert out["body"]["headers"]["content-type"] == "application/json"


async def test_text_and_form_bodies(server: LocalServer) -> None:
    ctx = FakeContext({"inputs": {"q": "a&b c"}})
    text = await call(ctx, method="POST", url=server.url("/echo"), body="q={{inputs.q}}", body_type="text")
    assert text["body"]["body"] == "q=a&b c"
    assert text["body"]["headers"]["content-type"] == "text/plain; charset=utf-8"
    form = await call(
        ctx,
        method="PATCH",
        url=server.url("/echo"),
        body={"q": "{{inputs.q}}", "n": [1, 2]},
        body_type="form",
    )
    assert form["body"]["body"] == "q=a%26b+c&n=1&n=2"
    assert form["body"]["headers"]["content-type"] == "application/x-www-form-urlencoded"
    custom = await call(
        method="DELETE",
        url=server.url("/echo"),
        headers={"content-type": "application/vnd.custom+json"},
        body={"a": 1},
    )
    assert custom["body"]["headers"]["content-type"] == "application/vnd.custom+json"
    assert custom["body"]["method"] == "DELETE"


async def test_form_body_must_be_an_object(server: LocalServer) -> None:
    with pytest.raises(NodeError, match="form body"):
        await call(method="POST", url=server.url("/echo"), body=[1, 2], body_type="form")


async def test_header_with_line_break_is_refused(server: LocalServer) -> None:
    ctx = FakeContext({"inputs": {"v": "a\r\nX-Evil: 1"}})
    with pytest.raises(NodeError, match="line break"):
        await call(ctx, url=server.url("/echo"), headers={"X-Val": "{{inputs.v}}"})


async def test_head_request(server: LocalServer) -> None:
    out = await call(method="HEAD", url=server.url("/huge"), query={"n": 5000}, max_response_bytes=10)
    assert out["status"] == 200 and out["body"] == "" and out["headers"]["content-length"] == "5000"


async def test_html_becomes_text(server: LocalServer) -> None:
    out = await call(url=server.url("/html"))
    text = out["body"]
    assert text == "Plait test\nHello, world\nFirst paragraph with bold text.\nSecond\none\ntwo"
    assert "secret" not in text and "color" not in text and "enable js" not in text
    raw = await call(url=server.url("/html"), response="text")
    assert "<script>" in raw["body"]


async def test_html_charset_from_meta(server: LocalServer) -> None:
    assert (await call(url=server.url("/html-latin1")))["body"] == "café"


def test_html_to_text_tables_and_breaks() -> None:
    html = "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>x<br>y"
    assert html_to_text(html) == "a b\n1 2\nx\ny"
    html = "<!DOCTYPE html><!-- hidden comment --><pre>line 1\nline 2</pre><p>a\n  b</p>"
    assert html_to_text(html) == "line 1\nline 2\na b"


async def test_response_modes(server: LocalServer) -> None:
    assert (await call(url=server.url("/text")))["body"] == "just   some\ntext"
    assert (await call(url=server.url("/vnd")))["body"] == {"data": [1, 2]}
    assert (await call(url=server.url("/json"), response="text"))["body"] == '{"hello": "world", "n": 1}'
    assert (await call(url=server.url("/text"), response="html_text"))["body"] == "just some text"
    assert (await call(url=server.url("/bad-json")))["body"] == "this is not json"  # auto is lenient
    assert (await call(url=server.url("/empty-json")))["body"] is None
    with pytest.raises(NodeError, match="not valid JSON") as info:
        await call(url=server.url("/bad-json"), response="json")
    assert info.value.retryable is False


async def test_http_error_status(server: LocalServer) -> None:
    with pytest.raises(NodeError) as info:
        await call(url=server.url("/status"), query={"code": 404, "n": 2000})
    err = info.value
    assert "HTTP 404" in err.message and err.retryable is False
    assert "E" * 500 in err.message and "E" * 501 not in err.message and "-tail" not in err.message
    out = await call(url=server.url("/status"), query={"code": 404}, fail_on_status=False)
    assert out["status"] == 404 and out["body"] == "E" * 20 + "-tail"


# --------------------------------------------------------------------------- retries and timeouts


async def test_retries_after_5xx(server: LocalServer) -> None:
    k = key()
    out = await call(url=server.url("/flaky"), query={"key": k, "fails": 2}, retries=2, backoff_s=0.01)
    assert out["status"] == 200 and out["body"] == {"attempt": 3}
    k = key()
    with pytest.raises(NodeError, match="HTTP 500") as info:
        await call(url=server.url("/flaky"), query={"key": k, "fails": 5}, retries=1, backoff_s=0.01)
    assert info.value.retryable is True and "server error 2" in info.value.message
    assert server.httpd.counters["flaky:" + k] == 2
    assert (await call(url=server.url("/flaky"), query={"key": key()}, fail_on_status=False))["status"] == 500


async def test_backoff_grows(server: LocalServer) -> None:
    t0 = time.perf_counter()
    with pytest.raises(NodeError):
        await call(url=server.url("/flaky"), query={"key": key(), "fails": 9}, retries=2, backoff_s=0.2)
    assert time.perf_counter() - t0 >= 0.2 + 0.4 - 0.05


async def test_429_honours_retry_after(server: LocalServer) -> None:
    t0 = time.perf_counter()
    out = await call(
        url=server.url("/ratelimited"), query={"key": key(), "after": 1}, retries=1, backoff_s=0.01
    )
    assert out["status"] == 200 and out["body"] == {"attempt": 2}
    assert time.perf_counter() - t0 >= 0.95
    with pytest.raises(NodeError, match="HTTP 429") as info:
        await call(url=server.url("/ratelimited"), query={"key": key()})
    assert info.value.retryable is True


def test_retry_after_parsing() -> None:
    import httpx

    def parse(value: str) -> float:
        return http_mod._retry_after(httpx.Response(429, headers={"Retry-After": value}))

    assert parse("2") == 2.0
    assert parse("3600") == http_mod.MAX_BACKOFF_S
    assert parse("-5") == 0.0
    assert parse("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert parse("soon") == 0.0


async def test_timeout(server: LocalServer) -> None:
    t0 = time.perf_counter()
    with pytest.raises(NodeError) as info:
        await call(url=server.url("/slow"), query={"s": 3, "secret": "k"}, timeout_s=0.3)
    assert time.perf_counter() - t0 < 1.5
    assert info.value.message == f"request to {server.url('/slow')} timed out after 0.3s"  # no query shown
    hits = server.hits["/slow"]
    with pytest.raises(NodeError, match="timed out after 0.2s"):
        await call(url=server.url("/slow"), query={"s": 3}, timeout_s=0.2, retries=1, backoff_s=0.01)
    await asyncio.sleep(0.05)
    assert server.hits["/slow"] == hits + 2


async def test_connection_errors_are_retried(server: LocalServer) -> None:
    k = key()
    out = await call(url=server.url("/drop"), query={"key": k}, retries=1, backoff_s=0.01)
    assert out["body"] == {"attempt": 2}
    with pytest.raises(NodeError, match="failed"):
        await call(url=server.url("/drop"), query={"key": key()})


async def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NodeError, match=f"request to http://127.0.0.1:{port}/ failed: ConnectError") as info:
        await call(url=f"http://127.0.0.1:{port}/", retries=1, backoff_s=0.01)
    assert info.value.retryable is True


async def test_cancellation_propagates_immediately(server: LocalServer) -> None:
    task = asyncio.create_task(call(url=server.url("/slow"), query={"s": 5}, retries=3))
    await asyncio.sleep(0.2)
    t0 = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - t0 < 0.2


async def test_cancellation_during_backoff(server: LocalServer) -> None:
    task = asyncio.create_task(
        call(url=server.url("/flaky"), query={"key": key(), "fails": 9}, retries=3, backoff_s=20)
    )
    await asyncio.sleep(0.2)
    t0 = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - t0 < 0.2


# --------------------------------------------------------------------------- limits


@pytest.mark.parametrize("path", ["/huge", "/huge-stream", "/gzip"])
async def test_response_size_limit(server: LocalServer, path: str) -> None:
    with pytest.raises(NodeError, match="larger than max_response_bytes") as info:
        await call(url=server.url(path), query={"n": 3_000_000}, max_response_bytes=1_000_000)
    assert info.value.retryable is False
    out = await call(url=server.url(path), query={"n": 1000}, max_response_bytes=1000)
    assert len(out["body"]) == 1000


# --------------------------------------------------------------------------- config, client, registry


def test_registered_with_form_schemas() -> None:
    reg = default_registry()
    assert reg.get("http") is HttpNode and reg.get("delay") is DelayNode
    schema = reg.describe("http")["config_schema"]
    assert schema["required"] == ["url"]
    for name, prop in schema["properties"].items():
        assert prop.get("title") and prop.get("description"), name
    assert reg.describe("delay")["output_ports"] == ["out"]


def test_config_validation() -> None:
    from pydantic import ValidationError

    assert make(url="http://x", method="post").config.method == "POST"  # type: ignore[attr-defined]
    for bad in (
        {"url": "http://x", "method": "TRACE"},
        {"url": "http://x", "timeout": 3},
        {"url": "http://x", "retries": -1},
        {"url": "http://x", "timeout_s": 0},
        {"url": ""},
        {},
    ):
        with pytest.raises(ValidationError):
            HttpNode.Config.model_validate(bad)


@pytest.mark.parametrize("url", ["{{inputs.n}}", "ftp://{{inputs.host}}/x", "/relative/path"])
async def test_bad_rendered_url(url: str) -> None:
    ctx = FakeContext({"inputs": {"n": 5, "host": "example.com"}})
    with pytest.raises(NodeError) as info:
        await call(ctx, url=url)
    assert info.value.retryable is False


async def test_client_is_shared_per_loop_and_allowlist(server: LocalServer, monkeypatch) -> None:
    await call(url=server.url("/json"))
    await call(url=server.url("/text"))
    clients = CLIENTS  # the pool of FakeContext's services
    assert len(clients) == 1
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server.port}")
    await call(url=server.url("/json"))
    assert len(clients) == 2


async def test_a_context_without_a_pool_uses_a_client_for_the_request(server: LocalServer) -> None:
    out = await call(FakeContext(services=RunServices()), url=server.url("/json"))
    assert out["status"] == 200 and out["body"] == {"hello": "world", "n": 1}
    assert len(CLIENTS) == 0  # nothing was pooled


async def test_a_run_uses_the_pool_of_its_services(server: LocalServer) -> None:
    flow = {
        "schema": "plait/flow@1",
        "id": "fetch",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "get", "type": "http", "config": {"url": server.url("/json")}},
            {"id": "out", "type": "output", "config": {"name": "body", "value": "{{get.body}}"}},
        ],
        "edges": [{"source": "start", "target": "get"}, {"source": "get", "target": "out"}],
    }
    pool = net_http.HttpClients()
    try:
        result = await plait.run(flow, services=RunServices(http=pool))
        assert result.status == "completed", result.error
        assert result.outputs == {"body": {"hello": "world", "n": 1}}
        assert len(pool) == 1
    finally:
        await pool.aclose()
    assert len(pool) == 0


async def test_no_cookies_are_kept_between_calls(server: LocalServer) -> None:
    first = await call(url=server.url("/cookie"))
    assert first["headers"]["set-cookie"].startswith("sid=secret")
    assert (await call(url=server.url("/cookie")))["body"] == {"cookie": None}


# --------------------------------------------------------------------------- delay


def make_delay(seconds: Any) -> DelayNode:
    return DelayNode("wait", DelayNode.Config.model_validate({"seconds": seconds}))


async def test_delay_passes_input_through() -> None:
    t0 = time.perf_counter()
    assert await make_delay(0.1).run(FakeContext(input={"a": 1})) == {"a": 1}
    assert time.perf_counter() - t0 >= 0.09
    ctx = FakeContext({"inputs": {"wait": "0.05"}}, input=[1])
    assert await make_delay("{{inputs.wait}}").run(ctx) == [1]
    assert make_delay("2.5").config.seconds == 2.5  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", [-1, 86_401, "abc", float("nan")])
def test_delay_config_validation(value: Any) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        make_delay(value)


@pytest.mark.parametrize("rendered", ["soon", -3, 100_000, None, {"s": 1}])
async def test_delay_bad_template_value(rendered: Any) -> None:
    with pytest.raises(NodeError, match="seconds rendered to") as info:
        await make_delay("{{inputs.s}}").run(FakeContext({"inputs": {"s": rendered}}))
    assert info.value.retryable is False


async def test_delay_is_cancellable() -> None:
    task = asyncio.create_task(make_delay(60).run(FakeContext()))
    await asyncio.sleep(0.05)
    t0 = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - t0 < 0.2


# --------------------------------------------------------------------------- through the engine


async def test_http_and_delay_in_a_flow(server: LocalServer) -> None:
    import plait

    doc = {
        "schema": "plait/flow@1",
        "id": "http-flow",
        "inputs": {"type": "object", "properties": {"path": {"type": "string"}}},
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "wait", "type": "delay", "config": {"seconds": 0.01}},
            {
                "id": "fetch",
                "type": "http",
                "config": {"url": server.base + "/{{inputs.path}}", "query": {"via": "{{wait.path}}"}},
            },
            {"id": "out", "type": "output", "config": {"name": "greeting", "value": "{{fetch.body.hello}}"}},
        ],
        "edges": [
            {"source": "start", "target": "wait"},
            {"source": "wait", "target": "fetch"},
            {"source": "fetch", "target": "out"},
        ],
    }
    result = await plait.run(doc, {"path": "json"})
    assert result.status == "completed", result.error
    assert result.outputs == {"greeting": "world"}


async def test_blocked_request_fails_the_run_cleanly(server: LocalServer, monkeypatch) -> None:
    import plait

    monkeypatch.delenv("PLAIT_HTTP_ALLOW")
    doc = {
        "schema": "plait/flow@1",
        "id": "blocked-flow",
        "nodes": [{"id": "fetch", "type": "http", "config": {"url": server.url("/json")}}],
        "edges": [],
    }
    result = await plait.run(doc, {})
    assert result.status == "failed"
    assert "PLAIT_HTTP_ALLOW" in (result.nodes["fetch"].error or "")


async def test_cancelling_a_run_stops_a_delay() -> None:
    import plait

    doc = {
        "schema": "plait/flow@1",
        "id": "slow-flow",
        "nodes": [{"id": "wait", "type": "delay", "config": {"seconds": 60}}],
        "edges": [],
    }
    task = asyncio.create_task(plait.run(doc, {}, run_id="cancel-delay"))
    await asyncio.sleep(0.1)
    t0 = time.perf_counter()
    assert plait.cancel("cancel-delay")
    result = await task
    assert result.status == "cancelled"
    assert time.perf_counter() - t0 < 0.5
