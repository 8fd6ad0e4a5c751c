"""OpenAI-compatible chat completions through the official `openai` SDK.

One implementation serves OpenAI itself and every server that speaks its API (Groq, vLLM, Ollama,
LM Studio, llama.cpp's server...): only the base URL and key differ. Streaming is used whenever
the caller wants deltas, with `stream_options.include_usage` so token usage is known for streamed
replies too. SDK errors become the `ProviderError` family carrying the server's own message.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from plait.llm.base import (
    AuthenticationError,
    ChatRequest,
    ChatResponse,
    DeltaSink,
    Message,
    ModelNotFoundError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitError,
    ToolCall,
    Usage,
)
from plait.llm.sdk_common import SDK_MAX_RETRIES, blocked_cause, blocked_endpoint, deepest_message
from plait.net.guard import BlockedURLError


def _is_model_missing(exc: openai.APIStatusError, message: str) -> bool:
    if exc.code == "model_not_found":
        return True
    text = message.lower()
    return "model" in text and any(s in text for s in ("not found", "does not exist", "not exist", "unknown"))


def map_error(exc: Exception, *, provider: str, model: str) -> ProviderError:
    """The ProviderError for an `openai` SDK exception."""
    message = deepest_message(exc)
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return ProviderUnavailableError(message, provider=provider, model=model)
    if isinstance(exc, openai.APIStatusError):
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return AuthenticationError(message, provider=provider, model=model)
        if isinstance(exc, openai.RateLimitError):
            return RateLimitError(message, provider=provider, model=model)
        if exc.status_code in (400, 404, 422) and _is_model_missing(exc, message):
            return ModelNotFoundError(message, provider=provider, model=model)
        if exc.status_code >= 500:
            return ProviderUnavailableError(message, provider=provider, model=model)
        return ProviderError(message, provider=provider, model=model)
    return ProviderError(message, provider=provider, model=model)


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.role == "assistant" and m.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c in m.tool_calls
            ]
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id
            item["content"] = m.content or ""
        elif m.content is None:
            item["content"] = ""  # llama.cpp's server refuses null, even next to tool calls
        if m.name and m.role in ("user", "system"):
            item["name"] = m.name
        out.append(item)
    return out


def _tool_choice(choice: str | dict[str, Any] | None) -> Any:
    if isinstance(choice, dict):
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def _response_format(fmt: dict[str, Any] | None, json_schema: bool = True) -> Any:
    if not fmt or fmt.get("type") != "json_schema":
        return fmt
    if not json_schema:
        return {"type": "json_object", "schema": fmt.get("schema") or {}}
    return {
        "type": "json_schema",
        "json_schema": {"name": fmt.get("name") or "output", "schema": fmt.get("schema") or {}},
    }


def _parse_arguments(raw: str | None, name: str, *, provider: str, model: str) -> dict[str, Any]:
    if not raw or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"the model called tool {name!r} with arguments that are not JSON ({exc.msg}): {raw[:200]!r}",
            provider=provider,
            model=model,
        ) from exc
    if not isinstance(value, dict):
        raise ProviderError(
            f"the model called tool {name!r} with arguments that are not an object: {raw[:200]!r}",
            provider=provider,
            model=model,
        )
    return value


def _estimate_usage(request: ChatRequest, chunks: int) -> Usage:
    """Usage for a stream whose server ignored `stream_options.include_usage` (llama.cpp's server
    does): one token per streamed chunk out, about four characters per token in."""
    chars = sum(
        len(m.content or "") + len(json.dumps([c.arguments for c in m.tool_calls])) for m in request.messages
    )
    return Usage(max(1, chars // 4), max(0, chunks - 1))  # the last chunk only carries finish_reason


def _json_schema_unsupported(exc: openai.APIStatusError) -> bool:
    text = deepest_message(exc)
    return exc.status_code in (400, 422, 500) and "response_format" in text and "json_schema" in text


class OpenAICompatProvider:
    """A `Provider` for any OpenAI-compatible endpoint (`base_url`; None means api.openai.com).

    `http_client`: an `httpx2.AsyncClient` (the registry passes a guarded one,
    plait.net.sdk_client, for endpoints from a user's variables). The SDK makes one HTTP call per `chat` (`max_retries` None: `SDK_MAX_RETRIES`, none; see
    plait.llm.sdk_common): retries are the node's."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        name: str = "openai",
        max_retries: int | None = None,
        timeout_s: float = 600.0,
        http_client: Any = None,
        base_url_var: str | None = None,
    ) -> None:
        self.name = name
        self.base_url_var = base_url_var  # the variable that chose `base_url`, named in a guard's refusal
        self._json_schema = True  # False once the server refused response_format json_schema
        self.client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=SDK_MAX_RETRIES if max_retries is None else max_retries,
            timeout=timeout_s,
            http_client=http_client,
        )

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {"model": request.model, "messages": to_openai_messages(request.messages)}
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
            if request.tool_choice is not None:
                params["tool_choice"] = _tool_choice(request.tool_choice)
        if request.response_format:
            params["response_format"] = _response_format(request.response_format, self._json_schema)
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.max_tokens is not None:
            params["max_tokens"] = request.max_tokens
        return params

    async def chat(self, request: ChatRequest, *, on_delta: DeltaSink | None = None) -> ChatResponse:
        params = self._params(request)
        try:
            try:
                return await self._send(params, request, on_delta)
            except openai.APIStatusError as exc:
                fmt = request.response_format or {}
                if fmt.get("type") != "json_schema" or not _json_schema_unsupported(exc):
                    raise
                # Servers without `json_schema` (llama.cpp's) constrain `json_object` by a `schema`.
                self._json_schema = False
                return await self._send(self._params(request), request, on_delta)
        except (openai.OpenAIError, BlockedURLError) as exc:  # the guard's refusal is raised as it is
            blocked = blocked_cause(exc)
            if blocked is not None:
                raise blocked_endpoint(
                    blocked, provider=self.name, model=request.model, variable=self.base_url_var
                ) from exc
            raise map_error(exc, provider=self.name, model=request.model) from exc

    async def _send(
        self, params: dict[str, Any], request: ChatRequest, on_delta: DeltaSink | None
    ) -> ChatResponse:
        if on_delta is None:
            return self._from_completion(await self.client.chat.completions.create(**params), request)
        return await self._stream(params, request, on_delta)

    def _from_completion(self, completion: Any, request: ChatRequest) -> ChatResponse:
        if not completion.choices:
            raise ProviderError("the server returned no choices", provider=self.name, model=request.model)
        choice = completion.choices[0]
        msg = choice.message
        calls = [
            ToolCall(
                c.id or f"call_{i}",
                c.function.name,
                _parse_arguments(
                    c.function.arguments, c.function.name, provider=self.name, model=request.model
                ),
            )
            for i, c in enumerate(msg.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        usage = completion.usage
        return ChatResponse(
            content=msg.content,
            tool_calls=calls,
            usage=Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0) if usage else Usage(),
            model=completion.model or request.model,
            finish_reason=choice.finish_reason,
        )

    async def _stream(
        self, params: dict[str, Any], request: ChatRequest, on_delta: DeltaSink
    ) -> ChatResponse:
        stream = await self.client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = Usage()
        reported = False
        chunks = 0
        finish_reason = None
        model = request.model
        async for chunk in stream:
            if chunk.model:
                model = chunk.model
            if chunk.usage is not None:
                usage = Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                reported = True
            for choice in chunk.choices or []:
                chunks += 1
                delta = choice.delta
                if choice.finish_reason:
                    finish_reason = choice.finish_reason
                if delta is None:
                    continue
                if delta.content:
                    text.append(delta.content)
                    on_delta(delta.content)
                for tc in delta.tool_calls or []:
                    slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        # OpenAI sends the name once; some servers (llama.cpp) repeat it per chunk.
                        if tc.function.name and tc.function.name != slot["name"]:
                            slot["name"] += tc.function.name
                        if tc.function.arguments:
                            slot["arguments"] += tc.function.arguments
        if not reported:
            usage = _estimate_usage(request, chunks)
        tool_calls = [
            ToolCall(
                slot["id"] or f"call_{index}",
                slot["name"],
                _parse_arguments(slot["arguments"], slot["name"], provider=self.name, model=request.model),
            )
            for index, slot in sorted(calls.items())
        ]
        return ChatResponse(
            content="".join(text) if text or not tool_calls else None,
            tool_calls=tool_calls,
            usage=usage,
            model=model,
            finish_reason=finish_reason,
        )
