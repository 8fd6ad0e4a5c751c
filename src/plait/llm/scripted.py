"""The `scripted` provider: replays a fixed script of replies, tool calls and failures.

It makes flows testable without a model server: unit tests, the shipped examples and a flow's own
tests get the same answers on every run, with streaming and token usage like a real backend.

A script is a list of steps. Each `chat` call takes the first unused step that matches the request
and turns it into a reply. A step is a plain string (the reply text) or a dict with:

- ``content``: reply text. Streamed to ``on_delta`` in word-sized deltas (or ``chunks``: an
  explicit list of deltas whose concatenation is the text).
- ``json``: any JSON value; the reply text is its JSON encoding (for JSON-output nodes and
  deciders).
- ``tool_calls``: ``[{"name": ..., "arguments": {...}, "id": optional}]``; ids default to
  ``call_<step>_<n>``. May be combined with ``content``.
- ``error``: raise instead of replying. One of ``model_not_found``, ``auth``, ``rate_limit``,
  ``unavailable`` or ``error`` (a plain ProviderError); ``message`` overrides the text.
- ``match``: only use this step when the last user message contains this text (case-insensitive).
- ``model``: only use this step for requests to this model (handy for fallback tests).
- ``repeat``: true keeps the step instead of consuming it (a default answer, or a matched one that
  may be asked many times).
- ``usage``: ``{"input_tokens": n, "output_tokens": m}`` overrides the counted usage.
- ``finish_reason``: reported as is (default ``stop``, or ``tool_calls`` when there are some).

Usage is counted deterministically: input tokens are the whitespace-separated words of every
request message (content and tool-call arguments), output tokens those of the reply.

From Python::

    ScriptedProvider(["hello", {"json": {"answer": 42}},
                      {"tool_calls": [{"name": "search", "arguments": {"q": "plait"}}]},
                      {"error": "model_not_found"}])

In a flow document, set ``"provider": "scripted"`` and put the steps in the node's ``script``
(or ``settings.decider.script`` for the edge-LLM decider); see docs/llm.md.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

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
from plait.spec.model_settings import SCRIPT_ERRORS, normalize_step

# What each scripted `error` name raises (the names are the document's, SCRIPT_ERRORS).
ERRORS: dict[str, type[ProviderError]] = {
    "model_not_found": ModelNotFoundError,
    "auth": AuthenticationError,
    "rate_limit": RateLimitError,
    "unavailable": ProviderUnavailableError,
    "error": ProviderError,
}
assert tuple(ERRORS) == SCRIPT_ERRORS, "a scripted error name without its ProviderError class"
_WORD = re.compile(r"\S+\s*|\s+")


def _normalize(step: Any, index: int) -> dict[str, Any]:
    """The document's step format (plait.spec.model_settings) with its tool calls as `ToolCall`s."""
    out = normalize_step(step, index)
    out["tool_calls"] = [ToolCall(c["id"], c["name"], c["arguments"]) for c in out["tool_calls"]]
    return out


def _words(text: str | None) -> int:
    return len(text.split()) if text else 0


def count_tokens(messages: Iterable[Message]) -> int:
    """The scripted provider's deterministic token count of a list of messages."""
    total = 0
    for m in messages:
        total += _words(m.content)
        for call in m.tool_calls:
            total += _words(call.name) + _words(json.dumps(call.arguments))
    return total


def _last_user_text(messages: Sequence[Message]) -> str:
    for m in reversed(messages):
        if m.role == "user":
            return m.content or ""
    return ""


class ScriptedProvider:
    """Replays `script` (see the module docstring for the step format). `requests` records each call."""

    def __init__(self, script: Iterable[Any] = (), *, name: str = "scripted", delay_s: float = 0.0) -> None:
        self.name = name
        self.delay_s = delay_s  # awaited before each reply, for cancellation tests
        self._steps = [_normalize(s, i) for i, s in enumerate(script)]
        self._used = [False] * len(self._steps)
        self.requests: list[ChatRequest] = []

    @property
    def remaining(self) -> int:
        """How many non-repeating steps have not been used yet."""
        return sum(1 for s, u in zip(self._steps, self._used, strict=True) if not u and not s.get("repeat"))

    def _pick(self, request: ChatRequest) -> tuple[int, dict[str, Any]]:
        text = _last_user_text(request.messages).lower()
        for i, step in enumerate(self._steps):
            if self._used[i]:
                continue
            if "model" in step and step["model"] != request.model:
                continue
            if "match" in step and str(step["match"]).lower() not in text:
                continue
            if not step.get("repeat"):
                self._used[i] = True
            return i, step
        raise ProviderError(
            f"the scripted provider has no step left for this request (script of {len(self._steps)} "
            f"step(s), {len(self.requests)} call(s) so far; last user message: {text[:80]!r}); "
            "add a step to the script",
            provider=self.name,
            model=request.model,
        )

    async def chat(self, request: ChatRequest, *, on_delta: DeltaSink | None = None) -> ChatResponse:
        self.requests.append(request)
        _, step = self._pick(request)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if "error" in step:
            kind = ERRORS[step["error"]]
            default = {
                "model_not_found": f"The model `{request.model}` does not exist",
                "auth": "Incorrect API key provided",
                "rate_limit": "Rate limit reached",
                "unavailable": "Connection error: the scripted backend is unavailable",
            }.get(step["error"], "scripted provider error")
            raise kind(str(step.get("message") or default), provider=self.name, model=request.model)
        content: str | None = step.get("content")
        if content and on_delta is not None:
            for delta in step.get("chunks") or _WORD.findall(content):
                on_delta(delta)
                await asyncio.sleep(0)  # let event consumers see tokens as they stream
        calls: list[ToolCall] = step["tool_calls"]
        usage = step.get("usage") or {}
        output_tokens = _words(content) + sum(_words(c.name) + _words(json.dumps(c.arguments)) for c in calls)
        return ChatResponse(
            content=content,
            tool_calls=list(calls),
            usage=Usage(
                int(usage.get("input_tokens", count_tokens(request.messages))),
                int(usage.get("output_tokens", output_tokens)),
            ),
            model=request.model,
            finish_reason=step.get("finish_reason") or ("tool_calls" if calls else "stop"),
        )
