"""The assistant's model fallback and errors against a real HTTP server that speaks the OpenAI
chat-completions protocol (on 127.0.0.1): the SDK-backed provider, its error mapping and the
assistant's fallback together (spec A-S29, A-S30, A-S31). The server answers per model: a model
in `missing` gets OpenAI's 404 `model_not_found`, every other one the classifier's JSON; with
`status` set, every call gets that error instead."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from .conftest import linear_flow
from .test_assistant_api import complete, parse_sse


class _OpenAI(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook
        server: Any = self.server
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        server.models.append(body["model"])
        if server.status is not None:
            self._send(server.status, {"error": {"message": server.message, "type": "error", "code": None}})
        elif body["model"] in server.missing:
            error = {
                "message": f"The model `{body['model']}` does not exist or you do not have access to it.",
                "type": "invalid_request_error",
                "code": "model_not_found",
            }
            self._send(404, {"error": error})
        else:
            content = json.dumps({"translation": "how does n8n work?", "intent": "off_topic"})
            self._send(
                200,
                {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
                },
            )

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def openai_server() -> Iterator[Any]:
    httpd: Any = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAI)
    httpd.models, httpd.missing, httpd.status, httpd.message = [], set(), None, ""
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
async def flow_id(client: httpx.AsyncClient, openai_server: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "ANTHROPIC_API_KEY",
        "PLAIT_ASSISTANT_SCRIPT",
    ):
        monkeypatch.delenv(name, raising=False)
    url = f"http://127.0.0.1:{openai_server.server_address[1]}/v1"
    for name, value in (("OPENAI_BASE_URL", url), ("OPENAI_API_KEY", "sk-test-0123456789")):
        r = await client.put(f"/api/v1/variables/{name}", json={"value": value, "is_secret": True})
        assert r.status_code in (200, 201), r.text
    r = await client.post("/api/v1/flows", json={"document": linear_flow("providers", 1)})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def turn(client: httpx.AsyncClient, flow_id: str) -> list[dict[str, Any]]:
    body = {"flow_id": flow_id, "input_value": "how does n8n work?", "provider": "openai", "session_id": "p"}
    r = await client.post("/api/v1/assistant/stream", json=body)
    assert r.status_code == 200, r.text
    return parse_sse(r.text)


async def test_a_s29_a_missing_model_falls_back_to_the_next_one(
    client: httpx.AsyncClient, flow_id: str, openai_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.missing = {"gpt-4o-mini"}
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        data = complete(await turn(client, flow_id))
    assert openai_server.models == ["gpt-4o-mini", "gpt-4o"]
    assert data["intent"] == "off_topic" and data["model"] == "gpt-4o"
    assert data["usage"] == {"input_tokens": 40, "output_tokens": 12, "total_tokens": 52}
    assert (
        "assistant.model_fallback from=gpt-4o-mini to=gpt-4o provider=openai tried_so_far=[gpt-4o-mini]"
        in (caplog.text)
    )


async def test_a_s30_every_model_missing_names_the_provider_and_the_models_tried(
    client: httpx.AsyncClient, flow_id: str, openai_server: Any
) -> None:
    openai_server.missing = {"gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"}
    events = await turn(client, flow_id)
    assert events[-1]["event"] == "error"
    message = events[-1]["message"]
    assert "openai" in message and all(m in message for m in openai_server.missing)
    assert "Error building" not in message


@pytest.mark.parametrize(
    ("status", "message", "words"),
    [
        (401, "Incorrect API key provided", ("OPENAI_API_KEY",)),
        # rate limits and outages never fall back, whatever their text says
        (429, "the model does not exist: slow down", ("rate limit",)),
        (503, "model not available right now", ("openai",)),
    ],
)
async def test_a_s31_auth_rate_limit_and_outages_do_not_fall_back(
    client: httpx.AsyncClient,
    flow_id: str,
    openai_server: Any,
    status: int,
    message: str,
    words: tuple[str, ...],
) -> None:
    openai_server.status, openai_server.message = status, message
    events = await turn(client, flow_id)
    assert events[-1]["event"] == "error"
    assert all(w.lower() in events[-1]["message"].lower() for w in words), events[-1]
    assert "sk-test-0123456789" not in json.dumps(events)
    assert set(openai_server.models) == {"gpt-4o-mini"}  # never another model
