"""The assistant use cases: a turn (streamed or not), the caller's model configuration, a session
reset. The routes under `/api/v1/assistant/` are thin wrappers around `AssistantService`.

What the service adds to the assistant layer (`plait.assistant`) is who the caller is and what
they may read: the flow the message is about is read with the caller's rights (404 when they may
not see it), model keys come from the caller's variables over the deployment's (never another
user's), the scripted provider's script from the caller's `PLAIT_ASSISTANT_SCRIPT` variable or the
operator's environment, and validated components are registered under the caller and the session
(`AssistantComponents`). The memory, scripted providers and registered components of a session are
keyed by (user, session): two users with the same session id never meet.

One message streams at a time per (user, session), as the panel promises (spec B9): a second
request while one is running is a 409, not a second, interleaved conversation.

`PLAIT_ASSISTANT=off` turns the assistant off; its routes then answer 404.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from plait.assistant.catalog import RegistryCatalog
from plait.assistant.events import AssistantEvent, Complete, Error, RunStarted
from plait.assistant.files import FileSandbox
from plait.assistant.flow_agent import FlowBuilderAgent
from plait.assistant.generator import TurnComponentGenerator
from plait.assistant.guard import normalize
from plait.assistant.memory import ConversationBuffer
from plait.assistant.models import (
    AssistantSetupError,
    ScriptedProviders,
    SecretLookup,
    TurnModels,
    assistant_config,
    choose_model,
    load_script,
    provider_infos,
)
from plait.assistant.ports import Emit, ModelCall
from plait.assistant.toolkit import Toolkit
from plait.assistant.turn import DEFAULT_MAX_ATTEMPTS, Assistant, AssistantRequest
from plait.assistant.working_flow import WorkingFlow
from plait.engine.context import lookup_secret
from plait.llm.registry import ModelEgress
from plait.service.access import Access, AccessService, Principal, Role, Scope
from plait.service.assistant_components import AssistantComponents
from plait.service.assistant_metrics import AssistantMetrics
from plait.service.assistant_runner import AssistantFlowRunner
from plait.service.components import catalog_entries
from plait.service.errors import Conflict, Invalid, NotFound, ServiceError
from plait.service.restore_points import RestorePointService
from plait.service.runs import RunService
from plait.service.runs.secrets import RunSecrets
from plait.store import Store

log = logging.getLogger("plait.assistant")

ASSISTANT_ENV = "PLAIT_ASSISTANT"
SESSION_PREFIX = "agentic_"  # what the panel's session ids start with (spec B3); not required
MAX_SESSION_ID = 128
MAX_INPUT_CHARS = 50_000


ANSWER_TOKENS_ENV = "PLAIT_ASSISTANT_ANSWER_MAX_TOKENS"
FILES_ENV = "PLAIT_ASSISTANT_FILES_DIR"  # the flow builder's file workspaces, one per user and session
DEFAULT_FILES_DIR = ".plait/assistant-files"
VERIFY_ENV = "PLAIT_ASSISTANT_VERIFY_FLOWS"


def _on_off(name: str, default: bool) -> bool:
    value = (os.environ.get(name) or "").strip().lower()
    if not value:
        return default
    if value in ("on", "1", "true", "yes"):
        return True
    if value in ("off", "0", "false", "no"):
        return False
    raise ValueError(f"{name} must be on or off, not {value!r}")


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    try:
        value = int(raw) if raw else default
    except ValueError as exc:
        raise ValueError(f"{name} must be a whole number, not {raw!r}") from exc
    if value < 1:
        raise ValueError(f"{name} must be 1 or more, not {value}")
    return value


def assistant_enabled_from_env() -> bool:
    """`PLAIT_ASSISTANT`: on (default) or off."""
    value = (os.environ.get(ASSISTANT_ENV) or "on").strip().lower()
    if value in ("on", "1", "true", "yes"):
        return True
    if value in ("off", "0", "false", "no"):
        return False
    raise ValueError(f"{ASSISTANT_ENV} must be on or off, not {value!r}")


class AssistantOff(NotFound):
    code = "assistant_off"


class SetupRequired(ServiceError):
    """The caller's model configuration cannot serve the request (no provider, no key...)."""

    status = 400
    code = "assistant_not_configured"


class AssistantFailed(ServiceError):
    """The turn ended in an error (the model provider failed...): the friendly message."""

    status = 502
    code = "assistant_failed"


@dataclass(slots=True)
class TurnInput:
    """A message to the assistant, as the routes received it."""

    flow_id: str
    input_value: str
    session_id: str | None = None
    provider: str | None = None
    model_name: str | None = None
    max_retries: int | None = None


class AssistantService:
    def __init__(
        self,
        store: Store,
        access: AccessService,
        runs: RunService | None = None,
        *,
        enabled: bool | None = None,
        files_dir: Path | None = None,
        restore_points: RestorePointService | None = None,
    ) -> None:
        self.restore_points = restore_points  # None: no "undo the assistant's changes"
        self.store = store
        self.access = access
        self.runs = runs  # None: the flow builder cannot run flows
        self.enabled = assistant_enabled_from_env() if enabled is None else enabled
        self.files_dir = files_dir or Path(os.environ.get(FILES_ENV) or DEFAULT_FILES_DIR)
        self.verify_flows = _on_off(VERIFY_ENV, True)
        self.metrics = AssistantMetrics()
        self.secrets = RunSecrets(store.variables)
        self.components = AssistantComponents(store, on_refused=self.metrics.component_refused)
        self.assistant = Assistant(
            memory=ConversationBuffer(),
            components=self.components,
            telemetry=self.metrics,
            answer_max_tokens=_positive_int(ANSWER_TOKENS_ENV, 2048),
        )
        self.scripted = ScriptedProviders()
        self._active: set[tuple[str, str]] = set()

    # ------------------------------------------------------------------------------ use cases
    async def stream(self, who: Principal, body: TurnInput) -> AsyncGenerator[AssistantEvent, None]:
        """The turn's events. Checks (flow access, model configuration, one turn per session)
        happen before the first event, so their errors are plain HTTP errors."""
        request, models = await self._prepare(who, body)
        key = (who.user_id, request.session_id)
        if key in self._active:
            raise Conflict(
                "a reply is still streaming in this session: wait for it to finish (or stop it), "
                "then send the next message"
            )
        self._active.add(key)
        return self._events(key, request, models, who)

    async def _events(
        self, key: tuple[str, str], request: AssistantRequest, models: TurnModels, who: Principal
    ) -> AsyncGenerator[AssistantEvent, None]:
        agent = self._flow_agent(who, request)
        try:
            async with aclosing(self.assistant.stream(request, models, flow_agent=agent)) as events:
                async for event in events:
                    yield event
        finally:
            self._active.discard(key)

    async def reply(self, who: Principal, body: TurnInput) -> dict[str, Any]:
        """The non-streaming turn: the `complete` data, or the turn's error as a 502."""
        async for event in await self.stream(who, body):
            if isinstance(event, Complete):
                return event.data
            if isinstance(event, Error):
                raise AssistantFailed(event.message)
        raise AssistantFailed("the assistant stopped without an answer")

    async def config(self, who: Principal) -> dict[str, Any]:
        """The providers the caller can use, with their models and the default choice."""
        self._check_enabled()
        secret = await self._secret_lookup(who.user_id)
        return assistant_config(secret, scripted_available=self._script(secret) is not None)

    async def reset(self, who: Principal, session_id: str | None) -> dict[str, Any]:
        """Forget the session's conversation, scripted replay and registered components (all the
        caller's assistant components when no session is named)."""
        self._check_enabled()
        if session_id is not None:
            session_id = self._session_id(session_id)
            self.assistant.memory.clear(who.user_id, session_id)
            self.scripted.drop(who.user_id, session_id)
        cleared = await self.components.clear(who.user_id, session_id)
        self.metrics.session_reset(cleared)
        log.info(
            "assistant.session.reset user_id=%s session_id=%s components_cleared=%d",
            who.user_id,
            session_id,
            cleared,
        )
        return {"status": "ok", "components_cleared": cleared, "session_id": session_id}

    # ------------------------------------------------------------------------------- helpers
    def _flow_agent(self, who: Principal, request: AssistantRequest) -> FlowBuilderAgent:
        """The flow builder of one request: its toolkit works on a copy of the canvas, sees the
        caller's components, writes files in the caller's session workspace, and runs flows only
        when the caller may run them (the `run` scope)."""

        async def toolkit(models: ModelCall, emit: Emit) -> Toolkit:
            catalog = RegistryCatalog(user_components=await catalog_entries(self.store, who.user_id))
            generator = TurnComponentGenerator(
                models,
                emit,
                user_id=who.user_id,
                session_id=request.session_id,
                registry=self.components,
                max_attempts=request.max_attempts,
            )
            runner = None
            if self.runs is not None and Scope.RUN in who.scopes:

                async def started(run_id: str) -> None:
                    await emit(RunStarted(run_id, request.flow_id))

                runner = AssistantFlowRunner(
                    self.runs, flow_id=request.flow_id, owner_id=who.user_id, on_started=started
                )
            return Toolkit(
                WorkingFlow(request.flow, catalog),
                catalog,
                FileSandbox.for_session(self.files_dir, who.user_id, request.session_id),
                generator,
                runner,
            )

        async def restore_point() -> int | None:
            if self.restore_points is None or request.flow is None:
                return None
            return await self.restore_points.save(
                request.flow_id, request.flow, note="before the assistant's changes", created_by=who.user_id
            )

        return FlowBuilderAgent(
            toolkit, verify=self.verify_flows, restore_point=restore_point, telemetry=self.metrics
        )

    def _check_enabled(self) -> None:
        if not self.enabled:
            raise AssistantOff(f"the assistant is turned off on this server ({ASSISTANT_ENV}=off)")

    async def _prepare(self, who: Principal, body: TurnInput) -> tuple[AssistantRequest, TurnModels]:
        self._check_enabled()
        body.input_value = normalize(body.input_value or "")
        if not body.input_value:
            raise Invalid("input_value is empty: write a message", code="invalid_input")
        if len(body.input_value) > MAX_INPUT_CHARS:
            raise Invalid(
                f"input_value is {len(body.input_value)} characters long; the limit is {MAX_INPUT_CHARS}",
                code="invalid_input",
            )
        flow = await self.access.flow(who, body.flow_id, Access.VIEW)
        session_id = self._session_id(body.session_id or f"{SESSION_PREFIX}{uuid.uuid4().hex}")
        secret = await self._secret_lookup(who.user_id)
        script = self._script(secret)
        scripted = self.scripted.get(who.user_id, session_id, script) if script is not None else None
        try:
            # the user's endpoints go through the SSRF guard, as their runs' model calls do
            egress = ModelEgress(owner_is_admin=who.role is Role.ADMIN)
            choice = choose_model(body.provider, body.model_name, secret, scripted=scripted, egress=egress)
        except AssistantSetupError as exc:
            raise SetupRequired(exc.message, hint=exc.hint) from exc
        available = [
            (info.name, [m["name"] for m in info.models])
            for info in provider_infos(secret, scripted_available=False)
            if info.configured
        ]
        request = AssistantRequest(
            input_value=body.input_value,
            session_id=session_id,
            flow_id=flow.id,
            user_id=who.user_id,
            flow=flow.draft,
            max_attempts=body.max_retries or DEFAULT_MAX_ATTEMPTS,
            available_models=available,
        )
        return request, TurnModels(choice, self.metrics, who.user_id, session_id)

    def _script(self, secret: SecretLookup) -> list[Any] | None:
        try:
            return load_script(secret)
        except AssistantSetupError as exc:
            raise SetupRequired(exc.message, hint=exc.hint) from exc

    @staticmethod
    def _session_id(session_id: str) -> str:
        if len(session_id) > MAX_SESSION_ID or not session_id.isprintable():
            raise Invalid(
                f"session_id must be at most {MAX_SESSION_ID} printable characters", code="invalid_input"
            )
        return session_id

    async def _secret_lookup(self, user_id: str | None) -> SecretLookup:
        """Names resolve in the caller's variables, then the deployment's, then (model keys and
        endpoints only) the operator's environment: what a run of this user would read."""
        values, _mask = await self.secrets.for_run(user_id)
        return partial(lookup_secret, values)
