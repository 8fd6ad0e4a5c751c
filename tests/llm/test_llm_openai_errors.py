"""OpenAI-compatible provider: error mapping to the ProviderError family with the server's own
message, against `httpx2.MockTransport` answering in OpenAI's error wire format. (Replies,
streaming and tool calls are tested against a real llama.cpp server in test_llm_server.py.)"""

from __future__ import annotations

import httpx2
import pytest

from plait.llm import (
    AuthenticationError,
    ChatRequest,
    Message,
    ModelNotFoundError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitError,
)
from plait.llm.openai_compat import OpenAICompatProvider


def openai_error(status: int, message: str, code: str | None = None, kind: str = "invalid_request_error"):
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return lambda request: httpx2.Response(status, json=body)


def provider(handler) -> OpenAICompatProvider:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return OpenAICompatProvider(
        api_key="sk-test", base_url="http://llm.test/v1", max_retries=0, http_client=client
    )


@pytest.mark.parametrize(
    ("handler", "exc", "message"),
    [
        (
            openai_error(
                404, "The model `gpt-9` does not exist or you do not have access to it.", "model_not_found"
            ),
            ModelNotFoundError,
            "The model `gpt-9` does not exist or you do not have access to it.",
        ),
        (openai_error(404, "model 'llama9' not found"), ModelNotFoundError, "model 'llama9' not found"),
        (
            openai_error(401, "Incorrect API key provided: sk-test.", "invalid_api_key"),
            AuthenticationError,
            "Incorrect API key provided: sk-test.",
        ),
        (
            openai_error(429, "Rate limit reached for gpt-4o", "rate_limit_exceeded"),
            RateLimitError,
            "Rate limit",
        ),
        (
            openai_error(503, "The server is overloaded", kind="server_error"),
            ProviderUnavailableError,
            "overloaded",
        ),
        (openai_error(400, "messages must not be empty"), ProviderError, "messages must not be empty"),
    ],
)
async def test_errors_carry_the_server_message(handler, exc: type, message: str) -> None:
    with pytest.raises(exc) as info:
        await provider(handler).chat(ChatRequest("gpt-9", [Message("user", "hi")]))
    assert type(info.value) is exc
    assert message in info.value.message
    assert "Error code" not in info.value.message
    assert (info.value.provider, info.value.model) == ("openai", "gpt-9")


async def test_connection_refused_is_unavailable_with_the_socket_error() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    with pytest.raises(ProviderUnavailableError, match="Connection refused"):
        await provider(refuse).chat(ChatRequest("m", [Message("user", "hi")]), on_delta=lambda d: None)


async def test_server_tracebacks_are_cut_from_the_message() -> None:
    text = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type')}\n\n"
        '  File "/srv/llama_cpp/server/app.py", line 376, in create_chat_completion\n'
    )
    handler = lambda request: httpx2.Response(500, json={"message": text})  # noqa: E731
    with pytest.raises(ProviderUnavailableError) as info:
        await provider(handler).chat(ChatRequest("m", [Message("user", "hi")]))
    assert info.value.message == text.split("\n\n")[0]
