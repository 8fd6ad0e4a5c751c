"""The provider contract every model backend implements, and the errors they raise.

Nodes (`llm`, `agent`, `categorize`), the edge-LLM decider and the assistant talk to models only
through `Provider.chat`, so a flow runs unchanged against OpenAI-compatible servers, Anthropic or
the deterministic `scripted` provider.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from plait.errors import PlaitError

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(slots=True)
class ToolCall:
    """A model's request to call a tool; `arguments` is already parsed JSON."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class Message:
    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None  # set on role="tool" replies
    name: str | None = None


@dataclass(slots=True)
class ToolSpec:
    """A tool offered to the model: `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@dataclass(slots=True)
class ChatRequest:
    model: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    # None/"auto", "none", "required", or {"name": tool} to force one tool.
    tool_choice: str | dict[str, Any] | None = None
    # None: text. {"type": "json_object"} or {"type": "json_schema", "schema": {...}, "name": ...}.
    response_format: dict[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(slots=True)
class ChatResponse:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None


DeltaSink = Callable[[str], None]


@runtime_checkable
class Provider(Protocol):
    """One model backend. `on_delta` receives text deltas as they stream (the full reply is returned)."""

    name: str

    async def chat(self, request: ChatRequest, *, on_delta: DeltaSink | None = None) -> ChatResponse: ...


class ProviderError(PlaitError):
    """A model call failed; `message` is the deepest meaningful message from the backend."""

    code = "provider_error"

    def __init__(self, message: str, *, provider: str = "", model: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model


class ModelNotFoundError(ProviderError):
    """The model does not exist on this provider: the only error that falls back to the next candidate.

    `models_tried` lists the candidates tried when fallback gave up (set by `plait.llm.chat`).
    """

    code = "model_not_found"

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        model: str | None = None,
        models_tried: list[str] | None = None,
    ) -> None:
        super().__init__(message, provider=provider, model=model)
        self.models_tried = list(models_tried or ([model] if model else []))


class AuthenticationError(ProviderError):
    """The provider refused the API key (or the key may not use this model)."""

    code = "provider_auth_failed"


class RateLimitError(ProviderError):
    """The provider asked to slow down (HTTP 429)."""

    code = "rate_limited"


class ProviderUnavailableError(ProviderError):
    """Network errors, timeouts, 5xx: the backend could not answer."""

    code = "provider_unavailable"


class MissingKeyError(ProviderError):
    """No API key: `variable` names the stored variable / environment variable to set."""

    code = "missing_key"

    def __init__(self, variable: str, *, provider: str = "") -> None:
        super().__init__(
            f"no API key for provider {provider!r}: set the variable {variable} "
            "(Settings > Variables, or the environment)",
            provider=provider,
        )
        self.variable = variable
