"""One turn of the assistant: classify the message, do what it asks, stream what happens.

    assistant = Assistant(memory=ConversationBuffer(), components=registry)
    async for event in assistant.stream(request, models):
        ...                                   # Progress, Token, ..., then Complete | Error | Cancelled

The turn is a task of its own that puts events on a queue; `stream` yields them. Whoever stops
reading (a client that disconnects: the HTTP edge closes the generator) cancels the task, so no
model call outlives its listener. Every turn ends with exactly one terminal event, and every
`complete` carries `usage` (summed over the classifier and every attempt) and `duration_seconds`
(the whole request), whatever the path: answer, refusal, generated component, exhausted retries.

Routing (spec B17): `off_topic` gets a refusal without the main model being called; `question`
streams an answer token by token; `generate_component` runs the generation pipeline
(`plait.assistant.codegen`) and registers what validates for the user and session. The flow
intents (`build_flow`, `component_then_flow`, `run_flow`, `manage_files`) belong to the
flow-builder agent (`FlowAgent`); without one they are answered as questions, with their own
progress label (spec B94, what a rolled-back backend does).

The conversation memory records a turn only when it completes with text, under the user's own
words (not the framed prompt), keyed by (user, session).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from plait.assistant import codegen, guard, intent, prompts, texts
from plait.assistant.events import AssistantEvent, Cancelled, Complete, Error, Progress, Token
from plait.assistant.memory import ConversationBuffer
from plait.assistant.models import TurnModels, friendly_error
from plait.assistant.ports import ComponentRegistry, Emit, NoTelemetry, Telemetry
from plait.llm.base import ProviderError
from plait.sandbox.components import ComponentValidation

log = logging.getLogger("plait.assistant")

DEFAULT_MAX_ATTEMPTS = 3
MAX_ATTEMPTS_LIMIT = 10
FLOW_INTENTS = frozenset({"build_flow", "component_then_flow", "run_flow", "manage_files"})


@dataclass(slots=True)
class AssistantRequest:
    """What one message asks. `flow` is the caller's current flow document (the draft on the
    canvas), already read with the caller's rights; `available_models` the providers (and their
    models) the caller can use, for the prompt's models block."""

    input_value: str
    session_id: str
    flow_id: str
    user_id: str | None = None
    flow: dict[str, Any] | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    available_models: list[tuple[str, list[str]]] = field(default_factory=list)


@dataclass(slots=True)
class TurnState:
    """What the turn did so far: the answer text (for the memory) and the `complete` data."""

    request: AssistantRequest
    started: float
    intent: str = "question"
    result_text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


class FlowAgent(Protocol):
    """The flow-builder agent (part 2): works on a copy of `request.flow`, emits `flow_update`,
    `flow_preview`, `file_written` and progress events through `emit`, and returns the fields of
    its `complete` (at least `result`)."""

    async def run(
        self, request: AssistantRequest, intent: str, text: str, models: TurnModels, emit: Emit
    ) -> dict[str, Any]: ...


class EventSink:
    """Where a turn puts its events: awaitable (`await sink(event)`, an `Emit`) for the pipeline
    steps, and synchronous (`sink.put(event)`) for token callbacks. The queue is unbounded: a turn
    produces at most a few thousand events, and the reader is the client's connection."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[AssistantEvent] = asyncio.Queue()

    def put(self, event: AssistantEvent) -> None:
        self.queue.put_nowait(event)

    async def __call__(self, event: AssistantEvent) -> None:
        self.queue.put_nowait(event)


class Assistant:
    """The assistant of one process: its conversation memory, where validated components are
    registered, its counters, and (optionally) the flow-builder agent."""

    def __init__(
        self,
        *,
        memory: ConversationBuffer | None = None,
        components: ComponentRegistry | None = None,
        telemetry: Telemetry | None = None,
        flow_agent: FlowAgent | None = None,
        intent_timeout_s: float = 20.0,
        answer_max_tokens: int = 2048,
        validate: Callable[[str], Awaitable[ComponentValidation]] | None = None,
    ) -> None:
        self.memory = memory or ConversationBuffer()
        self.components = components
        self.telemetry: Telemetry = telemetry or NoTelemetry()
        self.flow_agent = flow_agent
        self.intent_timeout_s = intent_timeout_s
        self.answer_max_tokens = answer_max_tokens  # an answer, not an essay: bounded model time
        self.validate = validate

    async def stream(
        self, request: AssistantRequest, models: TurnModels, *, flow_agent: FlowAgent | None = None
    ) -> AsyncGenerator[AssistantEvent, None]:
        """The events of the turn, ending with one `Complete`, `Error` or `Cancelled`.
        `flow_agent`: this request's flow builder (it holds per-request state: the working flow),
        else the assistant's own, if any."""
        sink = EventSink()
        task = asyncio.create_task(self._turn(request, models, sink, flow_agent or self.flow_agent))
        try:
            while True:
                event = await sink.queue.get()
                yield event
                if isinstance(event, Complete | Error | Cancelled):
                    break
        finally:
            if not task.done():
                task.cancel()
                log.info(
                    "assistant.request.cancelled reason=client_disconnected session_id=%s",
                    request.session_id,
                )
            try:
                await task
            except BaseException:  # noqa: BLE001 - the turn already reported (or was cancelled)
                pass

    # ------------------------------------------------------------------------------- the turn
    async def _turn(
        self, request: AssistantRequest, models: TurnModels, emit: EventSink, flow_agent: FlowAgent | None
    ) -> None:
        state = TurnState(request, time.perf_counter())
        log.info(
            "assistant.request.started user_id=%s flow_id=%s provider=%s model_name=%s",
            request.user_id,
            request.flow_id,
            models.choice.provider_name,
            models.choice.models[0] if models.choice.models else "",
        )
        outcome = "error"
        try:
            await self._route(state, models, emit, flow_agent)
            await emit(Complete(self._complete_data(state, models)))
            outcome = "complete"
            if state.intent != "blocked":  # a refused takeover attempt is not quoted back later
                await self.memory.push(
                    request.user_id, request.session_id, request.input_value, state.result_text
                )
            log.info(
                "assistant.request.completed duration_ms=%d validated=%s attempts=%s",
                self._elapsed(state) * 1000,
                state.data.get("validated", False),
                state.data.get("validation_attempts", 0),
            )
        except asyncio.CancelledError:
            outcome = "cancelled"
            log.info(
                "assistant.request.cancelled reason=cancelled duration_ms=%d", self._elapsed(state) * 1000
            )
            await emit(Cancelled(texts.CANCELLED))
            raise
        except ProviderError as exc:
            log.warning("assistant.request.failed error_type=%s error=%s", type(exc).__name__, exc)
            await emit(Error(friendly_error(exc)))
        except Exception as exc:  # noqa: BLE001 - every turn ends with an event a person can read
            log.exception("assistant.request.failed error_type=%s", type(exc).__name__)
            await emit(Error(friendly_error(exc)))
        finally:
            self.telemetry.finished(outcome, self._elapsed(state))  # type: ignore[arg-type]

    async def _route(
        self, state: TurnState, models: TurnModels, emit: EventSink, flow_agent: FlowAgent | None
    ) -> None:
        request = state.request
        text = request.input_value
        reason = guard.blocked(text)
        if reason is not None:  # refused before any model call
            log.warning("assistant.input.blocked reason=%s session_id=%s", reason, request.session_id)
            state.intent = "blocked"
            self.telemetry.request("blocked", models.choice.provider_name)
            state.result_text = texts.BLOCKED_REFUSAL
            await emit(Token(texts.BLOCKED_REFUSAL))
            state.data = {"result": texts.BLOCKED_REFUSAL, "blocked": reason}
            return
        found = intent.shortcut(text)
        if found is None:
            found = await intent.classify(text, models, timeout_s=self.intent_timeout_s)
        state.intent = found.intent
        log.info(
            "assistant.intent.classified intent=%s source=%s session_id=%s",
            found.intent,
            found.source,
            request.session_id,
        )
        self.telemetry.request(found.intent, models.choice.provider_name)

        if found.intent == "off_topic":
            state.result_text = texts.OFF_TOPIC_REFUSAL
            await emit(Token(texts.OFF_TOPIC_REFUSAL))
            state.data = {"result": texts.OFF_TOPIC_REFUSAL}
            return
        if found.intent == "generate_component":
            await self._component(state, models, emit, found.intent)
            return
        if found.intent in FLOW_INTENTS:
            continuation = found.source == "shortcut"
            step = intent.decide_progress_step(found.intent, continuation=continuation)
            if step is not None:
                await emit(Progress(step[0], message=step[1]))  # type: ignore[arg-type]
            if flow_agent is not None:
                framed = self._framed(request)
                state.data = await flow_agent.run(request, found.intent, framed, models, emit)
                state.result_text = str(state.data.get("result") or "")
                return
            if found.intent == "component_then_flow":
                await self._component(state, models, emit, found.intent)
                return
        await self._answer(state, models, emit)

    async def _answer(self, state: TurnState, models: TurnModels, emit: EventSink) -> None:
        """A question: the framed prompt, streamed token by token (no code extraction)."""
        request = state.request
        framed = self._framed(request)
        pieces: list[str] = []

        def on_delta(chunk: str) -> None:
            pieces.append(chunk)
            emit.put(Token(chunk))

        reply = await models(
            prompts.question_messages(framed),
            phase="main",
            max_tokens=self.answer_max_tokens,
            on_delta=on_delta,
        )
        text = reply.content or "".join(pieces)
        if not pieces and text:  # a backend that does not stream: one token with the whole text
            await emit(Token(text))
        state.result_text = text
        state.data = {"result": text}

    async def _component(self, state: TurnState, models: TurnModels, emit: Emit, found_intent: str) -> None:
        """Generate, validate (with retries) and register a component."""
        request = state.request
        max_attempts = max(1, min(request.max_attempts, MAX_ATTEMPTS_LIMIT))
        step = intent.decide_progress_step(found_intent) or (
            "generating_component",
            "Generating component...",
        )
        await emit(Progress(step[0], 1, max_attempts, message=step[1]))  # type: ignore[arg-type]
        history = self.memory.recent(request.user_id, request.session_id)
        kwargs: dict[str, Any] = {"max_attempts": max_attempts, "history": history}
        if self.validate is not None:
            kwargs["validate"] = self.validate
        outcome = await codegen.generate_component(request.input_value, models, emit, **kwargs)
        self.telemetry.attempts(outcome.attempts, outcome.validated)
        if outcome.code is None:  # the model answered in words: a plain reply
            state.result_text = outcome.text
            state.data = {"result": outcome.text, "validated": False, "validation_attempts": outcome.attempts}
            return
        registered = False
        if outcome.validated and outcome.validation is not None and self.components is not None:
            registered = await self.components.register(
                request.user_id, request.session_id, outcome.validation, outcome.code
            )
        state.result_text = outcome.text
        state.data = {
            "result": outcome.text if outcome.validated else texts.GENERATION_FAILED,
            "validated": outcome.validated,
            "class_name": outcome.class_name,
            "component_code": outcome.code,
            "validation_attempts": outcome.attempts,
        }
        if outcome.validated:
            state.data["registered"] = registered
            await emit(
                Progress(
                    "generation_complete",
                    outcome.attempts,
                    max_attempts,
                    class_name=outcome.class_name,
                    message="Component ready",
                )
            )
        else:
            state.data["error"] = outcome.error

    # ------------------------------------------------------------------------------- helpers
    def _framed(self, request: AssistantRequest) -> str:
        """The user's input inside its framing blocks: canvas, then models, then history."""
        text = prompts.with_canvas(prompts.canvas_summary(request.flow), request.input_value)
        text = prompts.with_models(request.available_models, text)
        turns = self.memory.recent(request.user_id, request.session_id)
        return prompts.with_history(turns, text)

    def _complete_data(self, state: TurnState, models: TurnModels) -> dict[str, Any]:
        data = {
            "result": "",
            "validated": False,
            "class_name": None,
            "component_code": None,
            "validation_attempts": 0,
            **{k: v for k, v in state.data.items() if k != "_metrics"},
            "intent": state.intent,
            "provider": models.choice.provider_name,
            "model": models.model_used,
        }
        # The turn's own accounting wins over anything a tool put in its result (spec B84).
        data["usage"] = models.usage.as_dict()
        data["duration_seconds"] = round(self._elapsed(state), 4)
        return data

    @staticmethod
    def _elapsed(state: TurnState) -> float:
        return time.perf_counter() - state.started
