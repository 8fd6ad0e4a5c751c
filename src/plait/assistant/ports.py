"""What the assistant needs from the layers around it, as narrow protocols.

The assistant layer sits below `service/`: it cannot read the store's tables or the process'
Prometheus registry itself. The service hands it these instead:

- `ModelCall`: one model call of the turn (provider, model candidates and same-provider fallback
  already decided; every call's usage counted into the turn, by phase). `plait.assistant.models`
  implements it for real providers and the scripted one.
- `ComponentRegistry`: where a validated component is registered for the user and session (so a
  later flow can use it as a `component` node) and wiped on a session reset.
- `Telemetry`: counters and histograms (Prometheus in the server, nothing in tests by default).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from plait.assistant.events import AssistantEvent
from plait.llm.base import ChatResponse, DeltaSink, Message, ToolSpec
from plait.sandbox.components import ComponentValidation

Phase = Literal["intent", "main"]
Emit = Callable[[AssistantEvent], Awaitable[None]]


class ModelCall(Protocol):
    """One model call within the turn. Raises `plait.llm.ProviderError` subclasses; a
    `ModelNotFoundError` only once every candidate model of the provider was tried."""

    async def __call__(
        self,
        messages: list[Message],
        *,
        phase: Phase,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_delta: DeltaSink | None = None,
        tools: list[ToolSpec] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResponse: ...


class ComponentRegistry(Protocol):
    async def register(
        self, owner_id: str | None, session_id: str, validation: ComponentValidation, source: str
    ) -> bool:
        """Register the validated component for the user and session; False (and a log line)
        when it is refused (anonymous user, a name the user already uses for a component of
        their own). Infrastructure errors propagate."""
        ...

    async def clear(self, owner_id: str | None, session_id: str | None) -> int:
        """Remove what the assistant registered for the user (in that session; in every session
        when `session_id` is None). Returns how many; 0 for an anonymous user."""
        ...


class Telemetry(Protocol):
    """Counts for `/metrics` (spec B90). Label values are bounded: intents, steps, phases,
    provider names, outcomes."""

    def request(self, intent: str, provider: str) -> None: ...
    def tokens(self, phase: Phase, provider: str, input_tokens: int, output_tokens: int) -> None: ...
    def attempts(self, count: int, validated: bool) -> None: ...
    def finished(self, outcome: Literal["complete", "error", "cancelled"], seconds: float) -> None: ...
    def flow_builder(self, what: str, action: str = "") -> None:
        """A flow-builder fact: `update` (with the flow_update action), `proposal_ready`,
        `orphan_rejection`, `tool_failed` (with the tool name)."""
        ...


class NoTelemetry:
    """A `Telemetry` that counts nothing (library use, unit tests)."""

    def request(self, intent: str, provider: str) -> None:
        pass

    def tokens(self, phase: Phase, provider: str, input_tokens: int, output_tokens: int) -> None:
        pass

    def attempts(self, count: int, validated: bool) -> None:
        pass

    def finished(self, outcome: Literal["complete", "error", "cancelled"], seconds: float) -> None:
        pass

    def flow_builder(self, what: str, action: str = "") -> None:
        pass
