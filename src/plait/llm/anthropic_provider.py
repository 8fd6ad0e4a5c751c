"""Anthropic's Messages API through the official `anthropic` SDK.

The differences from the OpenAI shape are handled here so nodes never see them: system messages
go to the `system` parameter, tool results are `tool_result` blocks in a user turn (consecutive
turns of one role are merged, as the API requires alternation), `tool_choice` "required" is
`any`; a JSON Schema output uses structured outputs (`output_config.format`) and plain JSON is
asked for in the system prompt. `temperature` is not sent: the current Messages API (SDK 2.x) has
no such parameter.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic

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

DEFAULT_MAX_TOKENS = 4096


def map_error(exc: Exception, *, provider: str, model: str) -> ProviderError:
    """The ProviderError for an `anthropic` SDK exception."""
    message = deepest_message(exc)
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderUnavailableError(message, provider=provider, model=model)
    if isinstance(exc, anthropic.APIStatusError):
        if isinstance(exc, (anthropic.AuthenticationError, anthropic.PermissionDeniedError)):
            return AuthenticationError(message, provider=provider, model=model)
        if isinstance(exc, anthropic.RateLimitError):
            return RateLimitError(message, provider=provider, model=model)
        if isinstance(exc, anthropic.NotFoundError) and "model" in message.lower():
            return ModelNotFoundError(message, provider=provider, model=model)
        if exc.status_code >= 500:
            return ProviderUnavailableError(message, provider=provider, model=model)
    return ProviderError(message, provider=provider, model=model)


def _json_instruction(fmt: dict[str, Any] | None) -> str | None:
    if not fmt or fmt.get("type") not in ("json_object", "json_schema"):
        return None
    return "Reply with a single JSON value only: no prose, no code fences."


def to_anthropic(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system prompt, messages) in the Messages API shape."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            if m.content:
                system.append(m.content)
            continue
        if m.role == "tool":
            role = "user"
            blocks: list[dict[str, Any]] = [
                {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content or ""}
            ]
        else:
            role = m.role
            blocks = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls
            ]
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return ("\n\n".join(system) or None), out


def _tool_choice(choice: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, dict):
        return {"type": "tool", "name": choice["name"]}
    return {"type": {"required": "any"}.get(choice, choice)}


class AnthropicProvider:
    """A `Provider` for Anthropic (or a compatible endpoint at `base_url`).

    `http_client`: an `httpx2.AsyncClient` (the registry passes a guarded one,
    plait.net.sdk_client, for endpoints from a user's variables). The SDK makes one HTTP call per `chat` (`max_retries` None: `SDK_MAX_RETRIES`, none; see
    plait.llm.sdk_common): retries are the node's."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        name: str = "anthropic",
        max_retries: int | None = None,
        timeout_s: float = 600.0,
        http_client: Any = None,
        base_url_var: str | None = None,
    ) -> None:
        self.name = name
        self.base_url_var = base_url_var  # the variable that chose `base_url`, named in a guard's refusal
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=SDK_MAX_RETRIES if max_retries is None else max_retries,
            timeout=timeout_s,
            http_client=http_client,
        )

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        system, messages = to_anthropic(request.messages)
        instruction = _json_instruction(request.response_format)
        if instruction:
            system = f"{system}\n\n{instruction}" if system else instruction
        params: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            choice = _tool_choice(request.tool_choice)
            if choice is not None:
                params["tool_choice"] = choice
        fmt = request.response_format or {}
        if fmt.get("type") == "json_schema" and fmt.get("schema"):
            params["output_config"] = {"format": {"type": "json_schema", "schema": fmt["schema"]}}
        return params

    async def chat(self, request: ChatRequest, *, on_delta: DeltaSink | None = None) -> ChatResponse:
        params = self._params(request)
        try:
            if on_delta is None:
                return self._from_message(await self.client.messages.create(**params), request)
            return await self._stream(params, request, on_delta)
        except (anthropic.AnthropicError, BlockedURLError) as exc:  # the guard's refusal is raised as it is
            blocked = blocked_cause(exc)
            if blocked is not None:
                raise blocked_endpoint(
                    blocked, provider=self.name, model=request.model, variable=self.base_url_var
                ) from exc
            raise map_error(exc, provider=self.name, model=request.model) from exc

    def _from_message(self, message: Any, request: ChatRequest) -> ChatResponse:
        text = [b.text for b in message.content if b.type == "text"]
        calls = [ToolCall(b.id, b.name, dict(b.input or {})) for b in message.content if b.type == "tool_use"]
        return ChatResponse(
            content="".join(text) if text or not calls else None,
            tool_calls=calls,
            usage=Usage(message.usage.input_tokens or 0, message.usage.output_tokens or 0),
            model=message.model or request.model,
            finish_reason=message.stop_reason,
        )

    async def _stream(
        self, params: dict[str, Any], request: ChatRequest, on_delta: DeltaSink
    ) -> ChatResponse:
        stream = await self.client.messages.create(**params, stream=True)
        text: list[str] = []
        blocks: dict[int, dict[str, Any]] = {}
        input_tokens = output_tokens = 0
        model, stop_reason = request.model, None
        async for event in stream:
            kind = event.type
            if kind == "message_start":
                model = event.message.model or model
                input_tokens = event.message.usage.input_tokens or 0
                output_tokens = event.message.usage.output_tokens or 0
            elif kind == "content_block_start":
                block = event.content_block
                if block.type == "tool_use":
                    blocks[event.index] = {"id": block.id, "name": block.name, "json": ""}
                elif block.type == "text" and block.text:
                    text.append(block.text)
                    on_delta(block.text)
            elif kind == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    text.append(delta.text)
                    on_delta(delta.text)
                elif delta.type == "input_json_delta" and event.index in blocks:
                    blocks[event.index]["json"] += delta.partial_json
            elif kind == "message_delta":
                stop_reason = event.delta.stop_reason or stop_reason
                if event.usage is not None:
                    output_tokens = event.usage.output_tokens or output_tokens
                    if getattr(event.usage, "input_tokens", None):
                        input_tokens = event.usage.input_tokens
        calls = []
        for _, b in sorted(blocks.items()):
            try:
                args = json.loads(b["json"]) if b["json"].strip() else {}
            except json.JSONDecodeError as exc:
                raise ProviderError(
                    f"the model called tool {b['name']!r} with arguments that are not JSON ({exc.msg})",
                    provider=self.name,
                    model=request.model,
                ) from exc
            calls.append(ToolCall(b["id"], b["name"], args))
        return ChatResponse(
            content="".join(text) if text or not calls else None,
            tool_calls=calls,
            usage=Usage(input_tokens, output_tokens),
            model=model,
            finish_reason=stop_reason,
        )
