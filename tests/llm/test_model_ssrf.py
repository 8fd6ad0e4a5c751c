"""The SSRF guard on model calls: a server run's endpoint from a user's variables goes through it
(`ModelEgress`, plait.llm.registry; the SDKs' httpx2 client from plait.net.sdk_client), with
`PLAIT_HTTP_ALLOW`, loopback for an administrator's runs, and the operator's own endpoint trusted.
A real OpenAI-compatible server listens on 127.0.0.1 and counts the requests that reach it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

import plait
from api import conftest as api_conftest
from plait.engine.services import RunServices
from plait.llm import ChatRequest, Message
from plait.llm.registry import ModelEgress, ProviderRegistry
from plait.llm.sdk_common import BlockedEndpointError
from plait_testing import flow


class _OpenAI(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook
        server: Any = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        server.requests += 1
        data = json.dumps(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def server() -> Iterator[Any]:
    httpd: Any = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAI)
    httpd.requests = 0
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "ANTHROPIC_BASE_URL",
        "PLAIT_HTTP_ALLOW",
    ):
        monkeypatch.delenv(name, raising=False)


def _doc(provider: str = "openai") -> dict[str, Any]:
    node = {"id": "ask", "type": "llm", "config": {"provider": provider, "model": "m", "prompt": "hello"}}
    return flow(
        [
            {"id": "start", "type": "start"},
            node,
            {"id": "out", "type": "output", "config": {"name": "answer"}},
        ],
        [("start", "ask"), ("ask", "out")],
    )


async def _run(env: dict[str, str], *, admin: bool = False, provider: str = "openai") -> Any:
    services = RunServices(providers=ModelEgress(owner_is_admin=admin))
    return await plait.run(_doc(provider), env=env, services=services)


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/v1", "http://10.1.2.3:8080/v1", "loopback"],
    ids=["metadata", "private", "loopback"],
)
async def test_a_users_internal_endpoint_fails_the_node_before_any_request(server: Any, url: str) -> None:
    url = server.url if url == "loopback" else url
    result = await _run({"OPENAI_BASE_URL": url})
    assert result.status == "failed"
    error = result.nodes["ask"].error or result.error or ""
    assert "OPENAI_BASE_URL" in error and "PLAIT_HTTP_ALLOW" in error, error
    assert server.requests == 0


async def test_the_refusal_is_a_blocked_endpoint_error_for_anthropic_too(server: Any) -> None:
    registry = ProviderRegistry(
        {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "k"}.get, egress=ModelEgress()
    )
    provider = registry.get("anthropic")
    with pytest.raises(BlockedEndpointError, match="ANTHROPIC_BASE_URL.*PLAIT_HTTP_ALLOW"):
        await provider.chat(ChatRequest(model="m", messages=[Message("user", "hi")]))
    assert server.requests == 0


async def test_plait_http_allow_opens_the_endpoint(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    result = await _run({"OPENAI_BASE_URL": server.url})
    assert result.status == "completed", result.error
    assert server.requests == 1


async def test_the_operators_endpoint_from_the_environment_is_trusted(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    result = await _run({})  # the run's variables name no endpoint: the operator's is used
    assert result.status == "completed", result.error
    assert server.requests == 1


async def test_an_administrators_loopback_endpoint_works(server: Any) -> None:
    result = await _run({"OPENAI_BASE_URL": server.url}, admin=True)
    assert result.status == "completed", result.error
    assert server.requests == 1


async def test_an_administrator_may_not_reach_private_or_metadata_addresses() -> None:
    result = await _run({"OPENAI_BASE_URL": "http://169.254.169.254/v1"}, admin=True)
    assert result.status == "failed"
    assert "PLAIT_HTTP_ALLOW" in (result.nodes["ask"].error or "")


async def test_a_client_built_for_an_administrator_is_not_reused_for_a_user(server: Any) -> None:
    assert (await _run({"OPENAI_BASE_URL": server.url}, admin=True)).status == "completed"
    assert (await _run({"OPENAI_BASE_URL": server.url})).status == "failed"
    assert server.requests == 1


async def test_a_library_run_without_a_policy_is_the_operators_and_unguarded(server: Any) -> None:
    result = await plait.run(_doc(), env={"OPENAI_BASE_URL": server.url})
    assert result.status == "completed", result.error


# --------------------------------------------------------------------------- server runs (API)

# The API tests' server fixtures (tests/api/conftest.py), for the runs the launcher starts.
database_url = api_conftest.database_url
settings = api_conftest.settings
app = api_conftest.app
client = api_conftest.client


async def _api_run(api: httpx.AsyncClient, flow_id: str) -> dict[str, Any]:
    r = await api.post("/api/v1/flows/import", json={"document": _doc(), "id": flow_id, "publish": True})
    assert r.status_code == 201, r.text
    r = await api.post(f"/api/v1/flows/{flow_id}/runs?wait=true", json={"inputs": {}})
    assert r.status_code in (200, 201), r.text
    return dict(r.json())


async def test_a_server_run_of_the_administrator_reaches_their_loopback_endpoint(
    client: httpx.AsyncClient, server: Any
) -> None:
    r = await client.put("/api/v1/variables/OPENAI_BASE_URL", json={"value": server.url, "is_secret": False})
    assert r.status_code in (200, 201), r.text
    run = await _api_run(client, "admin-model")
    assert run["status"] == "completed", run
    assert server.requests == 1


async def test_a_server_run_of_a_user_is_refused_their_loopback_endpoint(
    app: Any, client: httpx.AsyncClient, server: Any
) -> None:
    r = await client.post("/api/v1/users", json={"email": "eve@example.com", "role": "editor"})
    assert r.status_code == 201, r.text
    r = await client.post(
        f"/api/v1/users/{r.json()['id']}/api-keys", json={"name": "k", "scopes": ["read", "write", "run"]}
    )
    assert r.status_code == 201, r.text
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://test", headers={"x-api-key": r.json()["key"]}, timeout=30
    ) as eve:
        r = await eve.put("/api/v1/variables/OPENAI_BASE_URL", json={"value": server.url, "is_secret": False})
        assert r.status_code in (200, 201), r.text
        run = await _api_run(eve, "eve-model")
    assert run["status"] == "failed", run
    assert "OPENAI_BASE_URL" in str(run) and "PLAIT_HTTP_ALLOW" in str(run), run
    assert server.requests == 0
