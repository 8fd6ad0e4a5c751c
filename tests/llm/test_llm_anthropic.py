"""The Anthropic provider against `httpx2.MockTransport` speaking the documented Messages API wire
format: JSON replies, SSE streaming (text and tool_use with input_json_delta), usage and errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from plait.llm import (
    AuthenticationError,
    ChatRequest,
    Message,
    ModelNotFoundError,
    ProviderUnavailableError,
    RateLimitError,
    ToolCall,
    ToolSpec,
)
from plait.llm.anthropic_provider import AnthropicProvider

WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def provider(handler: Callable[[httpx2.Request], httpx2.Response]) -> tuple[AnthropicProvider, list[dict]]:
    seen: list[dict[str, Any]] = []

    def record(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/messages"
        # The key travels as x-api-key or (SDK 2.x) a bearer token.
        assert "sk-ant-test" in (
            request.headers.get("x-api-key"),
            request.headers.get("authorization", "")[7:],
        )
        seen.append(json.loads(request.content))
        return handler(request)

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(record))
    return AnthropicProvider(api_key="sk-ant-test", max_retries=0, http_client=client), seen


def sse(events: list[dict[str, Any]]) -> httpx2.Response:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": "claude-test-1",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 6},
        },
    )


def error(status: int, kind: str, text: str) -> httpx2.Response:
    return httpx2.Response(status, json={"type": "error", "error": {"type": kind, "message": text}})


async def test_text_reply_with_system_prompt_and_usage() -> None:
    p, seen = provider(lambda r: message([{"type": "text", "text": "Hello!"}]))
    r = await p.chat(
        ChatRequest(
            "claude-test-1",
            [Message("system", "Be brief."), Message("user", "Hi")],
            max_tokens=50,
        )
    )
    assert (r.content, r.finish_reason, r.model) == ("Hello!", "end_turn", "claude-test-1")
    assert r.usage.as_dict() == {"input_tokens": 12, "output_tokens": 6, "total_tokens": 18}
    body = seen[0]
    assert body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert body["max_tokens"] == 50


async def test_tool_use_reply_and_tool_results_sent_back() -> None:
    p, seen = provider(
        lambda r: message(
            [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
            ],
            "tool_use",
        )
    )
    history = [
        Message("user", "Weather in Paris and Rome?"),
        Message("assistant", None, [ToolCall("toolu_00", "get_weather", {"city": "Rome"})]),
        Message("tool", "sunny", tool_call_id="toolu_00"),
    ]
    r = await p.chat(
        ChatRequest("claude-test-1", history, tools=[WEATHER], tool_choice={"name": "get_weather"})
    )
    assert r.content == "Checking."
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [
        ("toolu_01", "get_weather", {"city": "Paris"})
    ]
    assert r.finish_reason == "tool_use"
    body = seen[0]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city",
            "input_schema": WEATHER.parameters,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_00", "name": "get_weather", "input": {"city": "Rome"}}],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_00", "content": "sunny"}],
    }


async def test_required_tool_choice_and_json_output_instruction() -> None:
    p, seen = provider(lambda r: message([{"type": "text", "text": '{"a": 1}'}]))
    await p.chat(
        ChatRequest(
            "m",
            [Message("user", "x")],
            tools=[WEATHER],
            tool_choice="required",
            response_format={"type": "json_schema", "schema": {"type": "object"}},
        )
    )
    assert seen[0]["tool_choice"] == {"type": "any"}
    assert "JSON" in seen[0]["system"]
    assert seen[0]["output_config"] == {"format": {"type": "json_schema", "schema": {"type": "object"}}}


STREAM = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test-1",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 25, "output_tokens": 1},
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "ping"},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "check."}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {}},
    },
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}},
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
    },
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'},
    },
    {"type": "content_block_stop", "index": 1},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 42},
    },
    {"type": "message_stop"},
]


async def test_streaming_text_deltas_tool_use_and_usage() -> None:
    p, seen = provider(lambda r: sse(STREAM))
    deltas: list[str] = []
    r = await p.chat(
        ChatRequest("claude-test-1", [Message("user", "Oslo?")], tools=[WEATHER]), on_delta=deltas.append
    )
    assert seen[0]["stream"] is True
    assert deltas == ["Let me ", "check."]
    assert r.content == "Let me check."
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [
        ("toolu_9", "get_weather", {"city": "Oslo"})
    ]
    assert (r.usage.input_tokens, r.usage.output_tokens, r.finish_reason) == (25, 42, "tool_use")


@pytest.mark.parametrize(
    ("response", "exc", "message"),
    [
        (error(404, "not_found_error", "model: claude-nope"), ModelNotFoundError, "model: claude-nope"),
        (error(401, "authentication_error", "invalid x-api-key"), AuthenticationError, "invalid x-api-key"),
        (
            error(429, "rate_limit_error", "Number of requests has exceeded"),
            RateLimitError,
            "Number of requests has exceeded",
        ),
        (error(529, "overloaded_error", "Overloaded"), ProviderUnavailableError, "Overloaded"),
    ],
)
async def test_errors_carry_the_api_message(response: httpx2.Response, exc: type, message: str) -> None:
    p, _ = provider(lambda r: response)
    with pytest.raises(exc) as info:
        await p.chat(ChatRequest("claude-nope", [Message("user", "x")]))
    assert info.value.message == message  # the API's own text, not "Error code: 404 - {...}"
    assert (info.value.provider, info.value.model) == ("anthropic", "claude-nope")


async def test_connection_errors_are_unavailable_with_the_socket_message() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    p, _ = provider(refuse)
    with pytest.raises(ProviderUnavailableError, match="Connection refused"):
        await p.chat(ChatRequest("m", [Message("user", "x")]))
