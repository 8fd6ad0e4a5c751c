"""The assistant over a real model server: llama.cpp's OpenAI-compatible server with SmolLM2-135M
(the session fixture `llama_server`, tests/llama_fixture.py), configured as a user configures it:
`OPENAI_BASE_URL` and `OPENAI_MODEL` stored as the caller's variables, no key.

SmolLM2-135M is far too small to classify reliably, which is the point of the second check: its
classifier reply is not the JSON asked for, and the turn goes on as a question."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from .conftest import linear_flow
from .test_assistant_api import complete, parse_sse, tokens


@pytest.fixture
async def llama_caller(
    client: httpx.AsyncClient, app: Any, llama_server: str, monkeypatch: pytest.MonkeyPatch
) -> str:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "ANTHROPIC_API_KEY",
        "PLAIT_ASSISTANT_SCRIPT",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in (("OPENAI_BASE_URL", llama_server), ("OPENAI_MODEL", "smollm2")):
        r = await client.put(f"/api/v1/variables/{name}", json={"value": value})
        assert r.status_code in (200, 201), r.text
    app.state.services.assistant.assistant.answer_max_tokens = 48  # a tiny model rambles
    r = await client.post("/api/v1/flows", json={"document": linear_flow("llama-canvas", 1)})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


@pytest.mark.timeout(600)  # a 135M model on two busy cores
async def test_a_question_streams_an_answer_and_an_unparseable_classification_is_a_question(
    client: httpx.AsyncClient, app: Any, llama_caller: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's two checks against the real server, in one turn: the classifier's reply (asked
    at temperature 0, so the same on every run) is not the JSON asked for, so the message is a
    question; the answer then streams token by token from the server."""
    config = (await client.get("/api/v1/assistant/config")).json()
    assert config["default_provider"] == "openai" and config["default_model"] == "smollm2"
    app.state.services.assistant.assistant.intent_timeout_s = 300  # a loaded CI machine is slow
    body = {
        "flow_id": llama_caller,
        "input_value": "Write one sentence about the sea, in plain prose.",
        "session_id": "agentic_llama",
    }
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        r = await client.post("/api/v1/assistant/stream", json=body, timeout=600)
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    data = complete(events)
    classified = next(m for m in caplog.messages if m.startswith("assistant.intent.classified"))
    assert "assistant.intent.unparsed" in caplog.text and "source=fallback" in classified
    assert data["intent"] == "question"
    assert data["provider"] == "openai" and data["model"] == "smollm2"
    assert data["usage"]["input_tokens"] > 0 and data["usage"]["output_tokens"] > 0
    streamed = [e for e in events if e["event"] == "token"]
    assert len(streamed) > 1 and tokens(events) == data["result"] and data["result"].strip()
    assert "assistant.tokens.phase phase=intent" in caplog.text
    assert "assistant.tokens.phase phase=main" in caplog.text


@pytest.mark.timeout(600)
def test_a_real_server_streams_tokens_as_they_come_and_a_disconnect_ends_the_turn(
    tmp_path: Any, llama_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`plait serve` in its own process: the answer's tokens reach the client while the model is
    still writing (not in one block at the end), and a client that goes away ends the turn: the
    session takes the next message at once instead of answering 409."""
    import time

    from .conftest import linear_flow as flow
    from .test_server import Server

    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PLAIT_ASSISTANT_SCRIPT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server)
    monkeypatch.setenv("OPENAI_MODEL", "smollm2")
    monkeypatch.setenv("PLAIT_ASSISTANT_ANSWER_MAX_TOKENS", "96")
    server = Server(tmp_path).start()
    try:
        with server.client() as c:
            assert c.post("/api/v1/flows", json={"document": flow("real", 1)}).status_code == 201
            body = {
                "flow_id": "real",
                "input_value": "Write one sentence about the sea, in plain prose.",
                "session_id": "agentic_real",
            }
            arrivals: list[tuple[float, str]] = []
            with c.stream("POST", "/api/v1/assistant/stream", json=body, timeout=300) as r:
                assert r.status_code == 200
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        arrivals.append((time.monotonic(), line[7:]))
            names = [n for _, n in arrivals]
            assert names[-1] == "complete" and names.count("token") > 3, names
            first_token = next(t for t, n in arrivals if n == "token")
            assert arrivals[-1][0] - first_token > 0.05  # streamed over time, not flushed at the end

            with c.stream("POST", "/api/v1/assistant/stream", json=body, timeout=300) as r:
                for line in r.iter_lines():
                    if line == "event: token":
                        break  # the client goes away mid-answer
            deadline = time.monotonic() + 10
            while True:
                r = c.post("/api/v1/assistant/stream", json={**body, "input_value": "hi"}, timeout=300)
                if r.status_code != 409 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert r.status_code == 200, r.text
            metrics = c.get("/metrics").text
            assert "assistant_cancellations_total 1.0" in metrics  # the server cancelled the turn
    finally:
        server.stop()
