"""`retry.max_attempts` is the absolute number of calls to the model server (seed 003): the SDK
clients do not retry on their own. A real HTTP server on 127.0.0.1 answers 503 and counts the
calls; `llm` and `agent` nodes on the OpenAI-compatible and Anthropic providers call it exactly
`max_attempts` times."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import plait


class _Overloaded(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    calls: list[str]

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.server.calls.append(self.path)  # type: ignore[attr-defined]
        body = json.dumps({"error": {"message": "the server is overloaded", "type": "overloaded_error"}})
        data = body.encode()
        self.send_response(503)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class CountingServer:
    """A model server that answers every call with 503 and keeps the paths it was called on."""

    def __init__(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Overloaded)
        self.httpd.calls = []  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def calls(self) -> list[str]:
        return self.httpd.calls  # type: ignore[attr-defined]


@pytest.fixture
def server() -> Iterator[CountingServer]:
    srv = CountingServer()
    srv.thread.start()
    try:
        yield srv
    finally:
        srv.httpd.shutdown()
        srv.httpd.server_close()


PROVIDERS = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1", "/v1/chat/completions"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "", "/v1/messages"),
}


def _flow(node_type: str, provider: str, attempts: int) -> dict[str, Any]:
    config: dict[str, Any] = {"provider": provider, "model": "m", "prompt": "hi"}
    return {
        "schema": "plait/flow@1",
        "id": f"{node_type}-retries",
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "ask",
                "type": node_type,
                "config": config,
                "retry": {"max_attempts": attempts, "delay_s": 0},
            },
        ],
        "edges": [{"source": "start", "target": "ask"}],
    }


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("node_type", ["llm", "agent"])
@pytest.mark.parametrize("attempts", [1, 2, 3])
async def test_max_attempts_is_the_number_of_calls_to_the_server(
    server: CountingServer, node_type: str, provider: str, attempts: int
) -> None:
    key_var, url_var, suffix, path = PROVIDERS[provider]
    env = {key_var: "sk-test", url_var: server.url + suffix}
    result = await plait.run(_flow(node_type, provider, attempts), {}, env=env)
    assert result.status == "failed"
    assert "overloaded" in (result.error or "")
    assert server.calls == [path] * attempts
    assert result.nodes["ask"].attempts == attempts
    retried = [e for e in result.events if e.type == "node_retrying"]
    assert [e.data.attempt for e in retried] == list(range(1, attempts))
