"""Every shipped example with an agent runs as shipped (scripted) and against an OpenAI-compatible
server (a local one speaking the chat-completions wire format, streaming included)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import plait

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def agent_examples() -> list[Path]:
    out = []
    for path in sorted(EXAMPLES.iterdir()):
        if path.suffix in (".json", ".yaml", ".yml"):
            doc = plait.load_flow(path).doc
            if any(n.type == "agent" for n in doc.nodes):
                out.append(path)
    return out


def test_there_is_an_agent_example():
    assert [p.name for p in agent_examples()] == ["agent.json"]


@pytest.fixture
def offline(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("path", agent_examples(), ids=lambda p: p.name)
async def test_agent_examples_run_as_shipped(path, offline):
    events: list = []
    result = await plait.run(
        plait.load_flow(path), {"message": "I was charged twice"}, on_event=events.append
    )
    assert result.status == "completed", result.error
    assert result.outputs["reply"]
    assert any(e.type == "node_tool_call" for e in events)
    assert any(e.type == "node_token" for e in events)


async def test_support_agent_uses_the_triage_flow(offline):
    result = await plait.run(plait.load_flow(EXAMPLES / "agent.json"), {"message": "refund"})
    (call,) = result.outputs["tools_used"]
    assert call["name"] == "triage" and call["result"]["route"] == "billing"
    assert result.outputs["reply"].startswith("Thanks for reaching out!")


class _OpenAI(ThreadingHTTPServer):
    """OpenAI chat completions (JSON or SSE when `stream` is set), replying with `replies` in turn."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies
        self.bodies: list[dict[str, Any]] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _OpenAI

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.bodies.append({"auth": self.headers.get("authorization"), **body})
        reply = self.server.replies.pop(0)
        base = {"id": "chatcmpl-1", "created": 0, "model": body["model"]}
        usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
        calls = [
            {"index": i, "id": f"call_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for i, c in enumerate(reply.get("tool_calls", []))
        ]  # fmt: skip
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": reply.get("content")}
            if calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
            data = json.dumps({**base, "object": "chat.completion", "usage": usage,
                               "choices": [{"index": 0, "message": message, "finish_reason": finish}]})  # fmt: skip
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())
            return
        chunks = [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
        for word in (reply.get("content") or "").split(" "):
            chunks.append({"index": 0, "delta": {"content": word + " "}, "finish_reason": None})
        if calls:
            chunks.append({"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None})
        chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for choice in chunks:
            event = {**base, "object": "chat.completion.chunk", "choices": [choice]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        final = {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
        self.wfile.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())


async def test_support_agent_against_an_openai_compatible_server(monkeypatch):
    server = _OpenAI(
        [
            {"tool_calls": [{"name": "triage", "arguments": {"query": "The app shows an error"}}]},
            {"content": "Engineering filed a bug report for you."},
        ]
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.setenv("OPENAI_MODEL", "local-model")
    events: list = []
    try:
        result = await plait.run(
            plait.load_flow(EXAMPLES / "agent.json"),
            {"message": "The app shows an error"},
            on_event=events.append,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert result.status == "completed", result.error
    assert result.outputs["reply"].strip() == "Engineering filed a bug report for you."
    assert result.outputs["tools_used"][0]["result"]["route"] == "bug"
    first, second = server.bodies
    assert first["model"] == "local-model" and first["auth"] == "Bearer sk-local"
    assert {t["function"]["name"] for t in first["tools"]} == {"triage", "wikipedia"}
    assert second["messages"][-1]["role"] == "tool"
    assert "Engineering" in second["messages"][-1]["content"]
    assert "".join(e.data["delta"] for e in events if e.type == "node_token").strip() == (
        "Engineering filed a bug report for you."
    )
    assert result.nodes["agent"].usage == {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
