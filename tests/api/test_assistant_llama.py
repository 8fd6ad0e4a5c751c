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


async def test_a_question_streams_an_answer_from_a_real_model_server(
    client: httpx.AsyncClient, llama_caller: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = (await client.get("/api/v1/assistant/config")).json()
    assert config["default_provider"] == "openai" and config["default_model"] == "smollm2"
    body = {"flow_id": llama_caller, "input_value": "What is a flow in plait?", "session_id": "agentic_llama"}
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        r = await client.post("/api/v1/assistant/stream", json=body, timeout=300)
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    data = complete(events)
    assert data["provider"] == "openai" and data["model"] == "smollm2"
    assert data["usage"]["input_tokens"] > 0 and data["usage"]["output_tokens"] > 0
    # Whatever the tiny model classified (a question, or a flow request answered as one until the
    # flow builder lands), the answer streamed token by token from the server.
    assert data["intent"] not in ("off_topic", "generate_component"), data
    streamed = [e for e in events if e["event"] == "token"]
    assert len(streamed) > 1 and tokens(events) == data["result"] and data["result"].strip()
    assert "assistant.tokens.phase phase=intent" in caplog.text
    assert "assistant.tokens.phase phase=main" in caplog.text


async def test_a_classifier_reply_that_is_not_json_falls_back_to_question(
    client: httpx.AsyncClient, app: Any, llama_caller: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Asked to answer with prose, the real model's classifier reply is not JSON: the turn is a
    question and the answer streams."""
    body = {
        "flow_id": llama_caller,
        "input_value": "Write one sentence about the sea, in plain prose.",
        "session_id": "agentic_llama2",
    }
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        r = await client.post("/api/v1/assistant/stream", json=body, timeout=300)
    data = complete(parse_sse(r.text))
    classified = next(m for m in caplog.messages if m.startswith("assistant.intent.classified"))
    # temperature 0: the model's reply is the same on every run, and it is not JSON
    assert "assistant.intent.unparsed" in caplog.text and "source=fallback" in classified
    assert data["intent"] == "question" and data["result"].strip()
