"""The public Python API: load a flow, run it, resume it, cancel it, retry it from a node.

`run`, `resume`, `retry` and the sub-flow resolver build their runner in one place (`_runner`:
the flow's policy, its services, its checkpointer and sinks) and drive it to a result in one
place (`_drive`: watching the run's cancel source while it executes). They differ only in how the
runner's state begins: empty (`run`), restored from a checkpoint (`resume`), or with the recorded
outputs upstream of a node (`retry`).

Cancellation reaches a run through its `CancelSource` (`services.cancels`). Runs started without
one watch `default_cancels`, the process's `LocalCancels`, which is what `cancel(run_id)` uses.
Likewise runs started without an HTTP client pool (`services.http`) or an MCP connection pool
(`services.mcp`) share `default_http` and `default_mcp`.
"""

from __future__ import annotations

import asyncio
import copy
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from plait.engine import events as ev
from plait.engine.cancel import CancelSource, LocalCancels
from plait.engine.checkpoint import Checkpoint, Checkpointer, InMemoryCheckpointer
from plait.engine.children import find_child, let_go
from plait.engine.errors import ResumeError, RunInputError, RunNotFoundError
from plait.engine.events import Event, EventSink
from plait.engine.flow import Flow, FlowLike, PlanCache, load_flow, validate_inputs
from plait.engine.limits import DEFAULT_MAX_SUBFLOW_DEPTH, ExecutionCount, subflow_too_deep
from plait.engine.policy import DataflowPolicy, SchedulingPolicy
from plait.engine.policy_edge import EdgeLLMPolicy
from plait.engine.results import RunResult
from plait.engine.runner import Runner
from plait.engine.services import ProviderSource, RunServices, SubflowCall
from plait.engine.status import NodeStatus, RunStatus
from plait.net.http import HttpClients
from plait.nodes.base import InterruptRequest, NodeError
from plait.spec.loader import read_document_data
from plait.spec.problems import FlowValidationError
from plait.tools.base import ToolRegistry
from plait.tools.mcp import MCPConnections

MAX_SUBFLOW_DEPTH = DEFAULT_MAX_SUBFLOW_DEPTH  # the default of `RunLimits.max_subflow_depth`

# Where sub-flows named by id come from: a mapping, or an async lookup (the server's flow library).
FlowLoader = Callable[[str], Awaitable[FlowLike | None]]
FlowSource = Mapping[str, FlowLike] | FlowLoader

# The cancel source of runs started without one (`services.cancels`): `cancel(run_id)` reaches
# them. One per process, documented here; callers that cancel across processes pass their own.
default_cancels = LocalCancels()

# The connection pools of runs started without their own (`services.http`, `services.mcp`): those
# runs reuse connections across runs (per event loop: a guarded HTTP client costs tens of
# milliseconds to build, an MCP server is a process to start). The server passes, and closes, its
# own; an embedder may close these on its loop at shutdown (`await default_http.aclose()`, and
# `await default_mcp.aclose()`, which also stops the MCP servers plait started).
default_http = HttpClients()
default_mcp = MCPConnections()

_DATAFLOW = DataflowPolicy()


# ---------------------------------------------------------------------------- one runner factory
def _runner(
    flow: Flow,
    run_id: str,
    inputs: dict[str, Any],
    *,
    variables: dict[str, Any] | None,
    services: RunServices,
    checkpointer: Checkpointer | None,
    on_event: EventSink | None,
    env: Mapping[str, Any] | None,
    flows: FlowSource | None,
    timeout_s: float | None,
    cache: PlanCache | None = None,
) -> Runner:
    """A runner for `flow` under its policy, with the run's services bound to this flow."""
    policy: SchedulingPolicy = (
        EdgeLLMPolicy(flow.doc, flow.plan) if flow.doc.settings.policy == "edge_llm" else _DATAFLOW
    )
    if variables is None:
        variables = copy.deepcopy(flow.doc.variables) if flow.doc.variables else {}
    bound = services.child(
        mcp_servers=flow.doc.settings.mcp_servers or {},
        http=services.http if services.http is not None else default_http,
        mcp=services.mcp if services.mcp is not None else default_mcp,
        resolve_flow=services.resolve_flow or SubflowResolver(flow, flows, env, cache),
        registry=flow.registry,
        # A top-level run counts its node executions afresh; a sub-flow's count with its parent's.
        executions=services.executions if services.depth else ExecutionCount(),
    )
    return Runner(
        flow.plan,
        run_id,
        flow_id=flow.id,
        inputs=inputs,
        variables=variables,
        env=env,
        checkpointer=checkpointer,
        sinks=(on_event,) if on_event else (),
        services=bound,
        policy=policy,
        timeout_s=timeout_s or flow.doc.settings.timeout_s,
    )


def _services(
    services: RunServices | None, providers: ProviderSource | None, tools: ToolRegistry | None
) -> RunServices:
    """The caller's services, with the `providers=` / `tools=` shortcuts applied."""
    if services is None:
        return RunServices(providers=providers, tools=tools)
    if providers is None and tools is None:
        return services
    return services.child(
        providers=providers if providers is not None else services.providers,
        tools=tools if tools is not None else services.tools,
    )


# ---------------------------------------------------------------------------- one drive helper
async def _drive(runner: Runner, work: Awaitable[RunResult], cancels: CancelSource | None) -> RunResult:
    """Await the runner's work to its result, cancelling it when its cancel source says so."""
    if cancels is None:
        return await work
    unwatch = cancels.watch(runner.run_id, runner.cancel)
    try:
        return await work
    finally:
        unwatch()


_UUID4_CLEAR = ~(0xF000 << 64 | 0xC000 << 48) & ((1 << 128) - 1)
_UUID4_SET = 0x4000 << 64 | 0x8000 << 48


def random_run_id() -> str:
    """A random run id: `uuid.uuid4().hex`, built without the UUID object (a third of the time)."""
    return "%032x" % (int.from_bytes(os.urandom(16), "big") & _UUID4_CLEAR | _UUID4_SET)


def _cancels_of(services: RunServices) -> CancelSource:
    return services.cancels if services.cancels is not None else default_cancels


async def _checkpoint(checkpointer: Checkpointer, run_id: str) -> Checkpoint:
    """The run's checkpoint (without its events); RunNotFoundError when there is none."""
    cp = await checkpointer.load(run_id, events=False)
    if cp is None:
        raise RunNotFoundError(f"no checkpoint for run {run_id!r}")
    return cp


async def _restored(flow: Flow, run_id: str, checkpointer: Checkpointer, **options: Any) -> Runner:
    return _restored_from(flow, await _checkpoint(checkpointer, run_id), checkpointer, **options)


def _restored_from(flow: Flow, cp: Checkpoint, checkpointer: Checkpointer, **options: Any) -> Runner:
    run_id = cp.run.run_id
    runner = _runner(
        flow,
        run_id,
        dict(cp.run.inputs),
        variables=copy.deepcopy(cp.run.variables),
        checkpointer=checkpointer,
        **options,
    )
    runner.created_at = cp.run.created_at
    runner.parent_run_id = cp.run.parent_run_id
    runner.restore(cp)
    return runner


# ---------------------------------------------------------------------------- the public calls
async def run(
    flow: FlowLike,
    inputs: Mapping[str, Any] | None = None,
    *,
    checkpointer: Checkpointer | None = None,
    on_event: EventSink | None = None,
    run_id: str | None = None,
    env: Mapping[str, Any] | None = None,
    flows: FlowSource | None = None,
    timeout_s: float | None = None,
    providers: ProviderSource | None = None,
    tools: ToolRegistry | None = None,
    services: RunServices | None = None,
) -> RunResult:
    """Run a flow to completion (or until it waits for input). `env` holds flow secrets for `{{env.X}}`.

    `services` carries what the run needs from outside (providers, tools, component source,
    cancel source); `providers=` and `tools=` are shortcuts that override its fields.
    """
    flow = load_flow(flow)
    data = validate_inputs(flow, inputs)
    svc = _services(services, providers, tools)
    runner = _runner(
        flow,
        run_id or random_run_id(),
        data,
        variables=None,
        services=svc,
        checkpointer=checkpointer,
        on_event=on_event,
        env=env,
        flows=flows,
        timeout_s=timeout_s,
    )
    return await _drive(runner, runner.execute(ev.RunStarted(flow.id, data)), _cancels_of(svc))


async def resume(
    flow: FlowLike,
    run_id: str,
    data: Any = None,
    *,
    checkpointer: Checkpointer,
    node_id: str | None = None,
    on_event: EventSink | None = None,
    env: Mapping[str, Any] | None = None,
    flows: FlowSource | None = None,
    timeout_s: float | None = None,
    providers: ProviderSource | None = None,
    tools: ToolRegistry | None = None,
    services: RunServices | None = None,
) -> RunResult:
    """Continue a run from its checkpoint: after a crash, or answering a waiting node.

    With neither `data` nor `node_id` the run just continues (crash recovery): nodes that were
    running run again and waiting nodes keep waiting. With `data`, `node_id` names the waiting node
    (the interrupt id); it may be omitted when only one waits. An expired task fails the node and
    the run.
    """
    flow = load_flow(flow)
    svc = _services(services, providers, tools)
    runner = await _restored(
        flow,
        run_id,
        checkpointer,
        services=svc,
        on_event=on_event,
        env=env,
        flows=flows,
        timeout_s=timeout_s,
    )
    interrupts = runner.state.interrupts
    if node_id is None and data is not None and interrupts:
        if len(interrupts) > 1:
            names = ", ".join(runner.plan.nodes[i].id for i in interrupts)
            raise ResumeError(f"several nodes are waiting ({names}); say which one with node_id")
        node_id = runner.plan.nodes[next(iter(interrupts))].id
    if node_id is not None:
        try:
            await runner.deliver_resume(node_id, data)
        except ResumeError as exc:
            if exc.expired:
                return await _drive(runner, runner.expire(node_id), _cancels_of(svc))
            raise
    return await _drive(runner, runner.execute(), _cancels_of(svc))


async def retry(
    flow: FlowLike,
    run_id: str,
    from_node: str,
    *,
    checkpointer: Checkpointer,
    new_run_id: str | None = None,
    on_event: EventSink | None = None,
    env: Mapping[str, Any] | None = None,
    flows: FlowSource | None = None,
    timeout_s: float | None = None,
    providers: ProviderSource | None = None,
    tools: ToolRegistry | None = None,
    services: RunServices | None = None,
) -> RunResult:
    """A new run that reuses the recorded outputs of run `run_id` except `from_node` and what follows."""
    flow = load_flow(flow)
    cp = await _checkpoint(checkpointer, run_id)
    if from_node.lower() not in flow.plan.by_key:
        raise ValueError(f"retry: flow {flow.id!r} has no node {from_node!r}")
    svc = _services(services, providers, tools)
    start = flow.plan.by_key[from_node.lower()]
    redo_ids = {flow.plan.nodes[i].key for i in {start} | flow.plan.descendants(start)}
    runner = _runner(
        flow,
        new_run_id or random_run_id(),
        dict(cp.run.inputs),
        variables=copy.deepcopy(cp.run.variables),
        services=svc,
        checkpointer=checkpointer,
        on_event=on_event,
        env=env,
        flows=flows,
        timeout_s=timeout_s,
    )
    reuse = [
        replace(d, reused=True)
        for d in cp.deltas
        if d.status == NodeStatus.OK and d.node_id.lower() not in redo_ids
    ]
    started = ev.RunStarted(flow.id, runner.inputs, retry_of=run_id, from_node=from_node)
    return await _drive(runner, runner.execute(started, reuse), _cancels_of(svc))


def cancel(run_id: str) -> bool:
    """Cancel a run executing in this process that watches `default_cancels` (every run started
    without its own cancel source); running nodes stop at their next await."""
    return default_cancels.cancel(run_id)


# ---------------------------------------------------------------------------- sub-flows
# Node-level events only: run_started/run_finished are the node's own, a `waiting` would make the
# server open a second task (the subflow node's interrupt carries the child's), and edge labels
# could collide with the parent's.
_FORWARDED_CHILD_EVENTS = frozenset(
    {ev.NODE_STARTED, ev.NODE_TOKEN, ev.NODE_TOOL_CALL, ev.NODE_RETRYING, ev.NODE_FINISHED, ev.NODE_SKIPPED}
)


class SubflowResolver:
    """Runs the sub-flows of one flow's subflow nodes (`RunServices.resolve_flow`).

    Children are found in `flows` (a mapping or an async loader), then as files beside the parent
    flow's file, and run with the parent's services one level deeper (at most
    `RunLimits.max_subflow_depth` levels; their node executions count with the parent's). In a
    checkpointed run a child is a run of its own in the parent's checkpointer, which the subflow
    node finds again and continues after a crash or an answer (plait.engine.children). Otherwise
    its checkpoint stays in memory: when it waits for people its state travels in the parent's
    interrupt (checkpointed with the parent), and the answer brings it back. Documents given as
    dicts are compiled once per top-level run (`cache`, shared with the children's resolvers).
    """

    __slots__ = ("parent", "flows", "env", "cache")

    def __init__(
        self,
        parent: Flow,
        flows: FlowSource | None,
        env: Mapping[str, Any] | None,
        cache: PlanCache | None = None,
    ) -> None:
        self.parent = parent
        self.flows = flows
        self.env = env
        self.cache = cache

    async def __call__(self, ref: str, inputs: dict[str, Any], call: SubflowCall) -> dict[str, Any]:
        depth = call.services.depth + 1
        limit = call.services.limits.max_subflow_depth
        if limit and depth > limit:
            raise subflow_too_deep(limit)
        if self.cache is None:
            self.cache = PlanCache(32, registry=self.parent.registry)
        child_flow = await self._find(ref)

        def forward(event: Event) -> None:  # the child's node events, as `sub/<node>` in the parent's log
            if event.data is not None and event.type in _FORWARDED_CHILD_EVENTS:
                call.forward(event.data, f"{call.node_id}/{event.node_id}" if event.node_id else call.node_id)

        options: dict[str, Any] = {
            "services": call.services.child(depth=depth, resolve_flow=None),
            "on_event": forward,
            "env": self.env,
            "flows": self.flows,
            "timeout_s": None,
            "cache": self.cache,
        }
        resume = call.resume
        state = resume.get("subflow") if isinstance(resume, dict) else None
        if call.checkpointer is not None and call.key is not None and not (state and "checkpoint" in state):
            return await self._own_run(ref, child_flow, inputs, call, options, state)
        # In memory (a run without a checkpointer; a child that waited before children had rows).
        child_id = f"{call.run_id}.{call.node_id}"
        memory = InMemoryCheckpointer()
        started: ev.RunStarted | None = None
        if state:
            memory.runs[child_id] = Checkpoint.from_dict(state["checkpoint"])
            child = await _restored(child_flow, child_id, memory, **options)
            await _answer(child, ref, state, resume)
        else:
            child = self._new_child(ref, child_flow, child_id, inputs, memory, options)
            started = ev.RunStarted(child_flow.id, child.inputs)
        child.checkpointer = None  # its own children stay in memory too (their state travels with it)
        result = await _execute_child(child, started, None)
        return _child_outputs(ref, result, lambda: {"checkpoint": memory.runs[child_id].to_dict()})

    async def _own_run(
        self,
        ref: str,
        child_flow: Flow,
        inputs: dict[str, Any],
        call: SubflowCall,
        options: dict[str, Any],
        state: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The child as a run of its own in the parent's checkpointer (plait.engine.children):
        answered, continued, or started."""
        checkpointer, key = call.checkpointer, call.key
        assert checkpointer is not None and key is not None
        started: ev.RunStarted | None = None
        if state:  # answering a person the child waits for
            cp = await checkpointer.load(str(state["run_id"]), events=False)
            if cp is None:
                raise NodeError(f"sub-flow {ref!r}: its run {state['run_id']!r} is gone", retryable=False)
            child = _restored_from(child_flow, cp, checkpointer, **options)
            if _waits_at(child, str(state["node"])):  # else it had the answer before a crash
                await _answer(child, ref, state, call.resume)
        else:
            found = await find_child(checkpointer, call.run_id, key, continuing=call.continuing)
            if found.done:
                return found.outputs  # it finished before the parent could record the node's end
            if found.checkpoint is not None:  # cut short, or waiting: it continues
                child = _restored_from(child_flow, found.checkpoint, checkpointer, **options)
            else:
                child = self._new_child(ref, child_flow, found.run_id, inputs, checkpointer, options)
                started = ev.RunStarted(child_flow.id, child.inputs)
        child.parent_run_id = call.run_id
        result = await _execute_child(child, started, checkpointer)
        return _child_outputs(ref, result, lambda: {"run_id": child.run_id})

    def _new_child(
        self,
        ref: str,
        child_flow: Flow,
        child_id: str,
        inputs: dict[str, Any],
        checkpointer: Checkpointer,
        options: dict[str, Any],
    ) -> Runner:
        try:
            data = validate_inputs(child_flow, inputs)
        except RunInputError as exc:
            raise NodeError(f"sub-flow {ref!r}: {exc}", retryable=False) from exc
        return _runner(child_flow, child_id, data, variables=None, checkpointer=checkpointer, **options)

    async def _find(self, ref: str) -> Flow:
        parent, flows = self.parent, self.flows
        found: FlowLike | None = None
        if isinstance(flows, Mapping):
            found = flows.get(ref)
        elif flows is not None:
            found = await flows(ref)
        if found is not None:
            return self._load(found)
        candidates = [Path(ref)] if Path(ref).is_absolute() else []
        if parent.base_dir is not None:
            candidates.append(parent.base_dir / ref)
        candidates.append(Path.cwd() / ref)
        for path in candidates:
            if path.is_file():
                return load_flow(path, registry=parent.registry)
        if parent.base_dir is not None:  # a flow id: a sibling file whose document has that id
            for path in sorted(parent.base_dir.iterdir()):
                if path.suffix in (".json", ".yaml", ".yml") and _document_id(path) == ref:
                    return load_flow(path, registry=parent.registry)
        raise NodeError(
            f"sub-flow {ref!r} not found",
            retryable=False,
            hint="give a path relative to the parent flow file, or pass the flow in `flows=`",
        )

    def _load(self, found: FlowLike) -> Flow:
        if isinstance(found, dict) and self.cache is not None:
            return self.cache.load(found)
        return load_flow(found, registry=self.parent.registry)


def _document_id(path: Path) -> str | None:
    try:
        data = read_document_data(path)
    except FlowValidationError:
        return None
    return data.get("id") if isinstance(data.get("id"), str) else None


async def _execute_child(
    child: Runner, started: ev.RunStarted | None, kept: Checkpointer | None
) -> RunResult:
    """Run a child to its end. When the parent stops meanwhile (cancelled, or its process shuts
    down) the child's node tasks stop with it; a child run of its own (`kept` by that checkpointer)
    stays as its checkpoint says, for the parent to continue, or for the service to close."""
    try:
        return await child.execute(started)
    except asyncio.CancelledError:
        child.cancel()
        if kept is not None:
            let_go(kept, child.run_id)
        raise


def _waits_at(child: Runner, node_id: str) -> bool:
    """Whether the restored child still waits at `node_id` (not when the answer was delivered to
    it already and the parent stopped before its subflow node ended)."""
    idx = child.plan.by_key.get(node_id.lower())
    return idx is not None and idx in child.state.interrupts


async def _answer(child: Runner, ref: str, state: dict[str, Any], resume: Any) -> None:
    """Hand the answer for the person it waits for to a restored child."""
    try:
        await child.deliver_resume(state["node"], resume.get("answer"))
    except ResumeError as exc:
        raise NodeError(f"sub-flow {ref!r}: {exc}", retryable=False) from exc


def _child_outputs(ref: str, result: RunResult, where: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The outputs of a child that completed; what the subflow node raises otherwise. `where`:
    how the answer finds a waiting child again (its run id, or its state kept in the interrupt)."""
    if result.status == RunStatus.WAITING:
        raise _child_waiting(ref, result, where())
    if result.status != RunStatus.COMPLETED:
        raise NodeError(f"sub-flow {ref!r} ended {result.status}: {result.error or ''}".rstrip(": "))
    return result.outputs


def _child_waiting(ref: str, result: RunResult, where: dict[str, Any]) -> Exception:
    """What the subflow node raises for a child waiting for people: an interrupt with the child's
    task as it is, plus `subflow` (the child's waiting node and where the child is: its `run_id`,
    or in memory its `checkpoint`) for `SubflowNode.accept_resume`."""
    pending = result.interrupt
    assert pending is not None
    if len(result.interrupts) > 1:
        names = ", ".join(str(i["node_id"]) for i in result.interrupts)
        return NodeError(
            f"sub-flow {ref!r} waits for several people at once ({names})",
            hint="make its human steps blocking, or put them in this flow",
            retryable=False,
        )
    expires = pending.get("expires_at")
    payload = {**pending["payload"], "subflow": {"flow": ref, "node": pending["node_id"], **where}}
    return InterruptRequest(
        payload,
        kind=pending["kind"],
        blocking=True,
        timeout_s=max(expires - time.time(), 0.001) if expires else None,
    )


# ---------------------------------------------------------------------------- blocking shortcuts
def run_sync(flow: FlowLike, inputs: Mapping[str, Any] | None = None, **kwargs: Any) -> RunResult:
    return asyncio.run(run(flow, inputs, **kwargs))


def resume_sync(flow: FlowLike, run_id: str, data: Any = None, **kwargs: Any) -> RunResult:
    return asyncio.run(resume(flow, run_id, data, **kwargs))


def retry_sync(flow: FlowLike, run_id: str, from_node: str, **kwargs: Any) -> RunResult:
    return asyncio.run(retry(flow, run_id, from_node, **kwargs))


# What this module defines (the names it only imports live in, and are exported by, their own modules).
__all__ = [
    "MAX_SUBFLOW_DEPTH",
    "FlowLoader",
    "FlowSource",
    "SubflowResolver",
    "cancel",
    "default_cancels",
    "default_http",
    "default_mcp",
    "random_run_id",
    "resume",
    "resume_sync",
    "retry",
    "retry_sync",
    "run",
    "run_sync",
]
