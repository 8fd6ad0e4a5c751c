"""A redirect to another origin drops the credential headers a flow set for the first host
(`X-Api-Key`, `Api-Key`, `Authorization`, `Cookie`, `Proxy-Authorization`...); a same-origin
redirect keeps them. Real servers on 127.0.0.1, two ports = two origins."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _http_context import CLIENTS, FakeContext, LocalServer

from plait.nodes.builtin.http import HttpNode

CREDENTIALS = {
    "X-Api-Key": "k-123456",
    "Api-Key": "k-234567",
    "Authorization": "Bearer t-345678",
    "Cookie": "sid=s-456789",
    "Proxy-Authorization": "Basic cC13ZWFr",
    "X-Auth-Token": "t-567890",
}


@pytest.fixture(scope="module")
def first() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture(scope="module")
def second() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture(autouse=True)
def allow_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")


@pytest.fixture(autouse=True)
async def close_clients() -> Any:
    yield
    await CLIENTS.aclose()


async def _echoed_headers(url: str, target: str) -> dict[str, str]:
    node = HttpNode(
        "call",
        HttpNode.Config.model_validate(
            {"url": url, "query": {"to": target}, "headers": {**CREDENTIALS, "X-Trace": "kept"}}
        ),
    )
    out = await node.run(FakeContext())
    assert out["status"] == 200, out
    return out["body"]["headers"]


async def test_cross_origin_redirect_drops_credential_headers(
    first: LocalServer, second: LocalServer
) -> None:
    headers = await _echoed_headers(first.url("/redirect"), second.url("/echo"))
    for name in CREDENTIALS:
        assert name.lower() not in headers, name
    assert headers["x-trace"] == "kept"


async def test_same_origin_redirect_keeps_them(first: LocalServer) -> None:
    headers = await _echoed_headers(first.url("/redirect"), first.url("/echo"))
    for name, value in CREDENTIALS.items():
        if name != "Cookie":  # httpx takes cookies from its (empty) jar on every redirect
            assert headers[name.lower()] == value, name
