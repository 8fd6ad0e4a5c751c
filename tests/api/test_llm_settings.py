"""The Models page's server side (issue 14, defects 2 and 3): `/api/v1/llm/providers` per user,
"Test connection" (`/api/v1/llm/test`) against a real OpenAI-compatible HTTP server on 127.0.0.1
(model list, a refused key, an unreachable port, a server that is not OpenAI-compatible), keys
never given back, and runs that say which provider and model answered."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from plait_testing import free_port

KEY = "sk-models-page-0123456789"
MODELS = ["smol-a", "smol-b"]
ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "ANTHROPIC_API_KEY", "GROQ_API_KEY")


class ModelServer(BaseHTTPRequestHandler):
    """`GET /v1/models` (the key checked when the server has one) and a one-line chat answer
    (streamed as server-sent events when asked). tests/web/test_settings.py uses it too."""

    protocol_version = "HTTP/1.1"

    def _authorized(self) -> bool:
        key = getattr(self.server, "key", None)
        return key is None or self.headers.get("authorization") == f"Bearer {key}"

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook
        if self.path != "/v1/models":
            self._send(404, {"error": "not found"})
        elif not self._authorized():
            self._send(
                401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
            )
        else:
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        if body.get("stream"):
            self._stream(body["model"])
            return
        message = {"role": "assistant", "content": f"answered by {body['model']}"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        self._send(
            200,
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [choice],
                "usage": usage,
            },
        )

    def _stream(self, model: str) -> None:
        chunks = [{"role": "assistant", "content": "answered "}, {"content": f"by {model}"}]
        lines = [
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
            for delta in chunks
        ]
        lines.append(
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        )
        data = "".join(f"data: {json.dumps(line)}\n\n" for line in lines) + "data: [DONE]\n\n"
        raw = data.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@contextmanager
def serve_models(key: str | None = KEY) -> Iterator[Any]:
    """A ModelServer on 127.0.0.1 (`.url` is its base URL, ending in /v1; `.key` the key it wants)."""
    httpd: Any = ThreadingHTTPServer(("127.0.0.1", 0), ModelServer)
    httpd.key = key
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    with serve_models() as httpd:
        yield httpd


async def _set(client: httpx.AsyncClient, name: str, value: str, *, secret: bool = False) -> None:
    r = await client.put(f"/api/v1/variables/{name}", json={"value": value, "is_secret": secret})
    assert r.status_code in (200, 201), r.text


def _by_name(providers: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in providers}


async def test_without_settings_only_scripted_is_configured(
    client: httpx.AsyncClient, model_server: Any
) -> None:
    r = await client.get("/api/v1/llm/providers")
    assert r.status_code == 200, r.text
    providers = _by_name(r.json())
    assert list(providers) == ["openai", "anthropic", "groq", "ollama", "scripted"]
    assert providers["scripted"] == {
        **providers["scripted"],
        "label": "scripted (no model)",
        "configured": True,
    }
    openai = providers["openai"]
    assert (
        not openai["configured"] and openai["models_source"] == "known" and "gpt-4o-mini" in openai["models"]
    )
    assert openai["key_variable"] == "OPENAI_API_KEY" and openai["base_url_variable"] == "OPENAI_BASE_URL"
    assert not providers["ollama"]["configured"]  # its default URL alone configures nothing


async def test_a_configured_endpoint_lists_its_models_and_never_its_key(
    client: httpx.AsyncClient, model_server: Any
) -> None:
    await _set(client, "OPENAI_BASE_URL", model_server.url)
    await _set(client, "OPENAI_API_KEY", KEY, secret=True)
    r = await client.get("/api/v1/llm/providers")
    assert r.status_code == 200 and KEY not in r.text
    openai = _by_name(r.json())["openai"]
    assert openai["configured"] and openai["key_set"] and openai["base_url"] == model_server.url
    assert openai["models"] == MODELS and openai["models_source"] == "endpoint"
    assert openai["default_model"] == "smol-a"
    await _set(client, "OPENAI_MODEL", "smol-b")
    openai = _by_name((await client.get("/api/v1/llm/providers")).json())["openai"]
    assert openai["default_model"] == "smol-b"
    variables = (await client.get("/api/v1/variables")).text
    assert KEY not in variables


async def test_providers_are_per_user(app: Any, client: httpx.AsyncClient, model_server: Any) -> None:
    await _set(client, "OPENAI_BASE_URL", model_server.url)
    r = await client.post("/api/v1/users", json={"email": "eve@example.com", "role": "editor"})
    assert r.status_code == 201, r.text
    r = await client.post(
        f"/api/v1/users/{r.json()['id']}/api-keys", json={"name": "k", "scopes": ["read", "write"]}
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://test", headers={"x-api-key": r.json()["key"]}
    ) as eve:
        theirs = _by_name((await eve.get("/api/v1/llm/providers")).json())
        assert not theirs["openai"]["configured"]
        # Another user reaches loopback only through PLAIT_HTTP_ALLOW: the guard refuses it.
        r = await eve.post("/api/v1/llm/test", json={"provider": "openai", "base_url": model_server.url})
        assert r.status_code == 200 and r.json()["reason"] == "blocked", r.text
        assert "PLAIT_HTTP_ALLOW" in r.json()["hint"]
    mine = _by_name((await client.get("/api/v1/llm/providers")).json())
    assert mine["openai"]["configured"]


async def test_test_connection_lists_the_models_the_server_reports(
    client: httpx.AsyncClient, model_server: Any
) -> None:
    body = {"provider": "openai", "base_url": model_server.url, "api_key": KEY}
    r = await client.post("/api/v1/llm/test", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "ok": True,
        "provider": "openai",
        "base_url": model_server.url,
        "models": MODELS,
        "reason": None,
        "error": None,
        "hint": None,
    }
    # Stored settings are used when the body gives none.
    await _set(client, "OPENAI_BASE_URL", model_server.url)
    await _set(client, "OPENAI_API_KEY", KEY, secret=True)
    r = await client.post("/api/v1/llm/test", json={"provider": "openai"})
    assert r.json()["ok"] and r.json()["models"] == MODELS and KEY not in r.text


@pytest.mark.parametrize(
    ("case", "reason", "words"),
    [
        ("wrong key", "unauthorized", "refused the key (HTTP 401)"),
        ("closed port", "unreachable", "cannot reach"),
        ("no /v1", "not_compatible", "not an OpenAI-compatible API"),
    ],
)
async def test_test_connection_says_what_is_wrong(
    client: httpx.AsyncClient, model_server: Any, case: str, reason: str, words: str
) -> None:
    body = {"provider": "openai", "base_url": model_server.url, "api_key": "sk-wrong"}
    if case == "closed port":
        body = {**body, "base_url": f"http://127.0.0.1:{free_port()}/v1", "api_key": KEY}
    elif case == "no /v1":
        body = {**body, "base_url": model_server.url.removesuffix("/v1"), "api_key": KEY}
    r = await client.post("/api/v1/llm/test", json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert not answer["ok"] and answer["reason"] == reason and words in answer["error"], answer
    assert "sk-wrong" not in r.text and KEY not in r.text


async def test_test_connection_of_an_unknown_provider_is_a_400(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/llm/test", json={"provider": "gpt4"})
    assert r.status_code in (400, 422) and "openai" in r.text


async def test_a_made_up_provider_is_a_live_validation_problem(client: httpx.AsyncClient) -> None:
    """Defect 3: `gpt4` is refused by the editor's validation, naming the field and the known
    providers; a script next to a real provider (even `[]`) is not a problem."""
    node = {"id": "ask", "type": "llm", "config": {"provider": "gpt4", "prompt": "hi"}}
    doc = {"id": "v", "nodes": [node], "edges": []}
    r = await client.post("/api/v1/flows/validate", json={"document": doc})
    problems = r.json()["problems"]
    assert any(
        p["field"] == "config.provider" and "did you mean provider 'openai' with model 'gpt4'" in p["message"]
        for p in problems
    ), problems
    assert "anthropic" in json.dumps(problems)
    node["config"] = {"provider": "openai", "model": "gpt-4o-mini", "prompt": "hi", "script": []}
    r = await client.post("/api/v1/flows/validate", json={"document": doc})
    assert r.json()["valid"], r.json()


async def test_a_run_records_the_provider_and_model_that_answered(
    client: httpx.AsyncClient, model_server: Any
) -> None:
    """Defect 2: the stored run detail and its events name who answered each model node."""
    await _set(client, "OPENAI_BASE_URL", model_server.url)
    await _set(client, "OPENAI_API_KEY", KEY, secret=True)
    node = {
        "id": "ask",
        "type": "llm",
        "config": {"provider": "openai", "model": "smol-b", "prompt": "hi", "stream": False},
    }
    r = await client.post("/api/v1/flows", json={"document": {"id": "rec", "nodes": [node], "edges": []}})
    assert r.status_code == 201, r.text
    r = await client.post("/api/v1/flows/rec/runs", params={"version": "draft"}, json={"inputs": {}})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    run_id = r.json()["id"]
    detail = (await client.get(f"/api/v1/runs/{run_id}")).json()
    assert detail["nodes"]["ask"]["output"] == "answered by smol-b"
    assert detail["nodes"]["ask"]["model"] == {"provider": "openai", "model": "smol-b"}
    events = (await client.get(f"/api/v1/runs/{run_id}/events")).text
    assert '"model":{"provider":"openai","model":"smol-b"}' in events.replace(" ", "")
