"""The node context: what one attempt of one node may see and do (`plait.nodes.base.NodeContext`).

A `NodeRunContext` is built per attempt and is cheap: plain slots, no copies. References resolve
through its `scope` (the run, or a scope a policy puts in front of it, such as the edge-LLM
policy's `{{input}}`); loop/map bodies add their aliases (`AliasScope`) in front of that. The run
itself is reached through the small `ContextHost` protocol, so this module does not depend on the
scheduler.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Mapping
from typing import Any, Protocol

import plait.engine.events as ev
from plait.engine.checkpoint import Checkpointer
from plait.engine.journal import EventLog
from plait.engine.plan import PlanNode
from plait.engine.services import RunServices, SubflowCall
from plait.expr import TemplateError, arender, render
from plait.nodes.base import InterruptRequest, NodeError
from plait.spec.model_settings import PRESETS

MISSING: Any = object()  # "no value" where None is a value (resume data, aliases)


class Scope(Protocol):
    """Resolves a reference root (a node id, inputs, vars, sys, env or an alias) to its value."""

    def lookup(self, root: str) -> Any: ...


class AliasScope:
    """Aliases (a body's item, index...) in front of another scope."""

    __slots__ = ("aliases", "parent")

    def __init__(self, aliases: Mapping[str, Any], parent: Scope) -> None:
        self.aliases = aliases
        self.parent = parent

    def lookup(self, root: str) -> Any:
        value = self.aliases.get(root, MISSING)
        if value is not MISSING:
            return value
        return self.parent.lookup(root)


class ContextHost(Protocol):
    """What a node context needs from the run it belongs to."""

    run_id: str
    env: Mapping[str, Any]
    services: RunServices
    journal: EventLog
    checkpointer: Checkpointer | None

    def run_body(
        self, ctx: NodeRunContext, body: str, scope: Scope, index: int | None
    ) -> Awaitable[dict[str, Any]]: ...

    def child_of(self, pn: PlanNode) -> tuple[str, bool] | None: ...


def _operator_settings() -> dict[str, str | None]:
    """The variables an operator may set in the server's environment instead of storing them:
    name -> the endpoint variable its value is sent to (None for settings that are not keys)."""
    out: dict[str, str | None] = {"OPENAI_MODEL": None}
    for preset in PRESETS.values():
        out[preset.key_var] = preset.base_url_var
        out[preset.base_url_var] = None
    # What the web tools (plait.tools.web) read.
    out.update(
        TAVILY_API_KEY="TAVILY_URL",
        TAVILY_URL=None,
        SEARXNG_URL=None,
        DUCKDUCKGO_URL=None,
        WIKIPEDIA_URL=None,
        ARXIV_URL=None,
        PLAIT_SEARCH_BACKEND=None,
    )
    return out


# See `lookup_secret`.
OPERATOR_SETTINGS: Mapping[str, str | None] = _operator_settings()


def operator_keys() -> list[str]:
    """The values of the keys among `OPERATOR_SETTINGS` set in the environment: a run's
    providers and tools use them, so they are masked like stored secrets (plait.net.redact)."""
    names = [name for name, endpoint in OPERATOR_SETTINGS.items() if endpoint is not None]
    return [value for value in (os.environ.get(name) for name in names) if value]


def lookup_secret(variables: Mapping[str, Any], name: str) -> str | None:
    """A secret by name, as nodes, tools and providers read it (`ctx.secret`).

    The stored variables first. The process environment only for `OPERATOR_SETTINGS`: the model
    providers' keys and base URLs and the web tools' settings, which an operator may configure
    there for every run. Any other name (`PLAIT_API_KEY`, `PLAIT_SECRET_KEY`, `AWS_*`...) is never
    read from the environment, so a flow cannot name a server variable and send it somewhere. A
    key from the environment is not given out either when its endpoint (`OPENAI_BASE_URL`...) is a
    stored variable: the operator's key goes only to the operator's endpoint, never to one a flow
    owner chose. Flow templates (`{{env.X}}`) and flow MCP settings (`${X}`) read the stored
    variables only (`Runner.lookup`, plait.tools.mcp).
    """
    value = variables.get(name)
    if value is not None:
        return str(value)
    if name not in OPERATOR_SETTINGS:
        return None
    endpoint = OPERATOR_SETTINGS[name]
    if endpoint is not None and variables.get(endpoint) is not None:
        return None
    return os.environ.get(name)


class NodeRunContext:
    """The `NodeContext` the engine gives a node for one attempt."""

    __slots__ = (
        "host",
        "pn",
        "run_id",
        "node_id",
        "attempt",
        "input",
        "inputs",
        "vars",
        "_vars",
        "scope",
        "var_changes",
        "_resume",
    )

    run_id: str
    node_id: str
    attempt: int
    input: Any
    inputs: Mapping[str, Any]
    vars: Mapping[str, Any]

    def __init__(
        self,
        host: ContextHost,
        pn: PlanNode,
        attempt: int,
        value: Any,
        ports: Mapping[str, Any],
        variables: dict[str, Any],
        scope: Scope,
        resume: Any = MISSING,
    ) -> None:
        self.host = host
        self.pn = pn
        self.run_id = host.run_id
        self.node_id = pn.id
        self.attempt = attempt
        self.input = value
        self.inputs = ports
        self.vars = self._vars = variables
        self.scope = scope
        self.var_changes: dict[str, Any] | None = None
        self._resume = resume

    @property
    def resume_value(self) -> Any:
        """The answer delivered to this node after it waited (`MISSING` when there is none)."""
        return self._resume

    def lookup(self, root: str) -> Any:
        return self.scope.lookup(root)

    def render(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        """Render synchronously: a template with loops or calls may hold the event loop for up to
        PLAIT_TEMPLATE_INLINE_TIMEOUT_S (plait.expr.template); async code awaits `arender`."""
        scope = AliasScope({k.lower(): v for k, v in extra.items()}, self.scope) if extra else self.scope
        try:
            return render(value, scope.lookup, timeout_s=self.pn.timeout_s)
        except TemplateError as exc:
            raise NodeError(exc.message, hint=exc.hint, retryable=False) from exc

    async def arender(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        """Render without blocking the event loop: templates with loops or calls render on a render
        thread, within PLAIT_TEMPLATE_TIMEOUT_S and this node's timeout."""
        scope = AliasScope({k.lower(): v for k, v in extra.items()}, self.scope) if extra else self.scope
        try:
            return await arender(value, scope.lookup, timeout_s=self.pn.timeout_s)
        except TemplateError as exc:
            raise NodeError(exc.message, hint=exc.hint, retryable=False) from exc

    def set_var(self, name: str, value: Any) -> None:
        self._vars[name] = value  # `vars` is the same dict, shown read-only to nodes
        if self.var_changes is None:
            self.var_changes = {}
        self.var_changes[name] = value

    def interrupt(
        self,
        payload: dict[str, Any],
        *,
        kind: str = "human",
        blocking: bool = True,
        timeout_s: float | None = None,
    ) -> Any:
        if self._resume is not MISSING:
            return self._resume
        raise InterruptRequest(payload, kind=kind, blocking=blocking, timeout_s=timeout_s)

    def emit_token(self, delta: str) -> None:
        self.host.journal.emit(ev.NodeToken(delta), self.node_id)

    def emit_tool_call(self, name: str, args: Any) -> None:
        self.host.journal.emit(ev.NodeToolCall(name, args), self.node_id)

    @property
    def services(self) -> RunServices:
        return self.host.services

    def secret(self, name: str) -> str | None:
        return lookup_secret(self.host.env, name)

    async def run_body(self, body: str, *, aliases: Mapping[str, Any], inputs: Any = None) -> dict[str, Any]:
        """Run one of this node's bodies to completion; returns its outputs. Body failures raise NodeError.

        An int `index` alias makes the body run one item (a loop iteration, a map item): in a
        checkpointed run it is recorded once finished, and when the node runs again after a
        restore a recorded item is not run again (see plait.engine.items)."""
        lowered = {k.lower(): v for k, v in aliases.items()}
        index = lowered.get("index")
        scope = AliasScope(lowered, self.scope)
        return await self.host.run_body(self, body, scope, index if type(index) is int else None)

    async def run_flow(self, ref: str, inputs: Mapping[str, Any], *, resume: Any = None) -> dict[str, Any]:
        resolve = self.host.services.resolve_flow
        if resolve is None:
            raise NodeError(
                "sub-flows are not available in this run", hint="pass `flows=` or load from a file"
            )
        host = self.host
        call = SubflowCall(self.run_id, self.node_id, host.services, host.journal.emit, resume)
        home = host.child_of(self.pn)  # a run of its own (plait.engine.children), or in memory
        if home is not None:
            call.checkpointer, (call.key, call.continuing) = host.checkpointer, home
        return await resolve(ref, dict(inputs), call)


__all__ = [
    "MISSING",
    "OPERATOR_SETTINGS",
    "AliasScope",
    "ContextHost",
    "NodeRunContext",
    "Scope",
    "lookup_secret",
    "operator_keys",
]
