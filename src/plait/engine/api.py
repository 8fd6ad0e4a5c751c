"""The public Python API: load a flow, run it, resume it, cancel it, retry it from a node."""

from __future__ import annotations

import asyncio
import copy
import functools
import hashlib
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from plait.engine import events as ev
from plait.engine.checkpoint import Checkpoint, Checkpointer, InMemoryCheckpointer, NodeDelta
from plait.engine.events import Event, EventSink
from plait.engine.plan import Plan, compile_flow
from plait.engine.policy_edge import EdgeRunner
from plait.engine.runner import ProviderSource, ResumeError, Runner, RunResult, RunServices
from plait.nodes.base import InterruptRequest, NodeError
from plait.nodes.registry import NodeRegistry, default_registry
from plait.spec.loader import parse_document, read_document_data
from plait.spec.models import FlowDocument
from plait.spec.problems import FlowValidationError, Problem
from plait.tools.base import ToolRegistry

MAX_SUBFLOW_DEPTH = 16

_active: dict[str, Runner] = {}


class RunInputError(ValueError):
    """Run inputs do not match the flow's input schema; `problems` lists each field."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("invalid run inputs:\n" + "\n".join(f"  - {p}" for p in problems))


class RunNotFoundError(LookupError):
    pass


@dataclass(slots=True, eq=False)
class Flow:
    """A validated, compiled flow: load it once, run it many times."""

    doc: FlowDocument
    plan: Plan
    base_dir: Path | None = None
    registry: NodeRegistry | None = None

    @property
    def id(self) -> str:
        return self.doc.id


FlowLike = Flow | FlowDocument | dict[str, Any] | str | Path
# Where sub-flows named by id come from: a mapping, or an async lookup (the server's flow library).
FlowLoader = Callable[[str], Awaitable[FlowLike | None]]
FlowSource = Mapping[str, FlowLike] | FlowLoader


_PLAN_CACHE: OrderedDict[tuple[int, str], Flow] = OrderedDict()
_PLAN_CACHE_SIZE = 256


def load_flow(source: FlowLike, *, registry: NodeRegistry | None = None) -> Flow:
    """Parse, validate and compile a flow. Raises FlowValidationError listing every problem.

    Documents given as dicts are compiled once and cached by content hash, so running the same
    document repeatedly (as the server does per version) does not re-validate it.
    """
    if isinstance(source, Flow):
        return source
    reg = registry or default_registry()
    if isinstance(source, dict):
        key = (id(reg), hashlib.sha256(json.dumps(source, sort_keys=True, default=str).encode()).hexdigest())
        cached = _PLAN_CACHE.get(key)
        if cached is not None:
            _PLAN_CACHE.move_to_end(key)
            return cached
        flow = Flow(doc := parse_document(source), compile_flow(doc, reg), None, reg)
        _PLAN_CACHE[key] = flow
        if len(_PLAN_CACHE) > _PLAN_CACHE_SIZE:
            _PLAN_CACHE.popitem(last=False)
        return flow
    base_dir = None
    if isinstance(source, FlowDocument):
        doc = source
    else:
        if isinstance(source, (str, Path)) and not isinstance(source, dict):
            candidate = Path(source)
            if "\n" not in str(source) and candidate.suffix in (".json", ".yaml", ".yml"):
                base_dir = candidate.resolve().parent
        doc = parse_document(read_document_data(source))
    return Flow(doc, compile_flow(doc, reg), base_dir, reg)


def validate_inputs(flow: Flow, inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check inputs against the flow's input schema (defaults applied); raises RunInputError."""
    data = dict(inputs or {})
    schema = flow.doc.inputs
    if not schema:
        return data
    for name, prop in (schema.get("properties") or {}).items():
        if name not in data and isinstance(prop, dict) and "default" in prop:
            data[name] = copy.deepcopy(prop["default"])
    problems = []
    for err in sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path)):
        field = ".".join(str(p) for p in err.absolute_path) or None
        if err.validator == "required":
            missing = err.message.split("'")[1] if "'" in err.message else None
            field = missing or field
        problems.append(
            Problem(
                "invalid_input",
                err.message,
                None,
                f"inputs.{field}" if field else "inputs",
                "pass it with --input name=value" if err.validator == "required" else None,
            )
        )
    if problems:
        raise RunInputError(problems)
    return data


def _make_runner(
    flow: Flow,
    run_id: str,
    inputs: dict[str, Any],
    *,
    checkpointer: Checkpointer | None,
    on_event: EventSink | None,
    env: Mapping[str, Any] | None,
    flows: FlowSource | None,
    timeout_s: float | None,
    depth: int = 0,
    variables: dict[str, Any] | None = None,
    providers: ProviderSource | None = None,
    tools: ToolRegistry | None = None,
) -> Runner:
    services = RunServices(
        _subflow_resolver(flow, checkpointer=None, env=env, flows=flows),
        flow.registry,
        depth,
        providers=providers,
        tools=tools,
        mcp_servers=flow.doc.settings.mcp_servers,
    )
    # The scheduling policy: dataflow (the Runner itself) or a model deciding each step.
    make: Any = (
        functools.partial(EdgeRunner, doc=flow.doc) if flow.doc.settings.policy == "edge_llm" else Runner
    )
    return make(
        flow.plan,
        run_id,
        flow_id=flow.id,
        inputs=inputs,
        variables=copy.deepcopy(flow.doc.variables) if variables is None else variables,
        env=env,
        checkpointer=checkpointer,
        sinks=[on_event] if on_event else None,
        services=services,
        timeout_s=timeout_s or flow.doc.settings.timeout_s,
    )


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
) -> RunResult:
    """Run a flow to completion (or until it waits for input). `env` holds flow secrets for `{{env.X}}`."""
    flow = load_flow(flow)
    data = validate_inputs(flow, inputs)
    runner = _make_runner(
        flow,
        run_id or uuid.uuid4().hex,
        data,
        checkpointer=checkpointer,
        on_event=on_event,
        env=env,
        flows=flows,
        timeout_s=timeout_s,
        providers=providers,
        tools=tools,
    )
    return await _tracked(runner, runner.start())


async def _tracked(runner: Runner, coro: Any) -> RunResult:
    _active[runner.run_id] = runner
    try:
        return await coro
    finally:
        _active.pop(runner.run_id, None)


async def _restored(flow: Flow, run_id: str, checkpointer: Checkpointer, **kwargs: Any) -> Runner:
    cp = await checkpointer.load(run_id, events=False)
    if cp is None:
        raise RunNotFoundError(f"no checkpoint for run {run_id!r}")
    runner = _make_runner(
        flow,
        run_id,
        dict(cp.run.inputs),
        checkpointer=checkpointer,
        variables=copy.deepcopy(cp.run.variables),
        **kwargs,
    )
    runner.created_at = cp.run.created_at
    runner.restore(cp)
    return runner


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
) -> RunResult:
    """Continue a run from its checkpoint: after a crash, or answering a waiting node.

    With neither `data` nor `node_id` the run just continues (crash recovery): nodes that were
    running run again and waiting nodes keep waiting. With `data`, `node_id` names the waiting node
    (the interrupt id); it may be omitted when only one waits. An expired task fails the node and
    the run.
    """
    flow = load_flow(flow)
    runner = await _restored(
        flow,
        run_id,
        checkpointer,
        on_event=on_event,
        env=env,
        flows=flows,
        timeout_s=timeout_s,
        providers=providers,
        tools=tools,
    )
    if node_id is None and data is not None and runner.interrupts:
        if len(runner.interrupts) > 1:
            names = ", ".join(runner.plan.nodes[i].id for i in runner.interrupts)
            raise ResumeError(f"several nodes are waiting ({names}); say which one with node_id")
        node_id = runner.plan.nodes[next(iter(runner.interrupts))].id
    if node_id is not None:
        try:
            await runner.deliver_resume(node_id, data)
        except ResumeError as exc:
            if exc.expired:
                return await _tracked(runner, runner.expire(node_id))
            raise
    return await _tracked(runner, runner.continue_())


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
) -> RunResult:
    """A new run that reuses the recorded outputs of run `run_id` except `from_node` and what follows."""
    flow = load_flow(flow)
    cp = await checkpointer.load(run_id, events=False)
    if cp is None:
        raise RunNotFoundError(f"no checkpoint for run {run_id!r}")
    if from_node.lower() not in flow.plan.by_key:
        raise ValueError(f"retry: flow {flow.id!r} has no node {from_node!r}")
    start = flow.plan.by_key[from_node.lower()]
    redo = {start} | flow.plan.descendants(start)
    redo_ids = {flow.plan.nodes[i].key for i in redo}
    runner = _make_runner(
        flow,
        new_run_id or uuid.uuid4().hex,
        dict(cp.run.inputs),
        checkpointer=checkpointer,
        on_event=on_event,
        env=env,
        flows=flows,
        timeout_s=timeout_s,
        variables=copy.deepcopy(cp.run.variables),
        providers=providers,
        tools=tools,
    )
    runner.emit(ev.RunStarted(flow.id, runner.inputs, retry_of=run_id, from_node=from_node))
    await checkpointer.begin(runner.record(), runner._take_unsaved())
    for delta in cp.deltas:
        if delta.status == "ok" and delta.node_id.lower() not in redo_ids:
            reused = NodeDelta(**{k: getattr(delta, k) for k in NodeDelta.__slots__})
            reused.reused = True
            runner.apply_delta(reused)
            await checkpointer.save(runner.run_id, reused, ())
    return await _tracked(runner, runner.continue_())


def cancel(run_id: str) -> bool:
    """Cancel a run executing in this process; running nodes stop at their next await."""
    runner = _active.get(run_id)
    if runner is None:
        return False
    runner.cancel()
    return True


def _subflow_resolver(
    parent: Flow,
    *,
    checkpointer: Checkpointer | None,
    env: Mapping[str, Any] | None,
    flows: FlowSource | None,
) -> Any:
    async def resolve(ref: str, inputs: dict[str, Any], ctx: Any, resume: Any = None) -> dict[str, Any]:
        depth = ctx.runner.services.depth + 1
        if depth > MAX_SUBFLOW_DEPTH:
            raise NodeError(
                f"sub-flows are nested deeper than {MAX_SUBFLOW_DEPTH} levels",
                hint="check for a flow that calls itself",
                retryable=False,
            )
        child_flow = await _find_flow(parent, ref, flows)
        child_id = f"{ctx.run_id}.{ctx.node_id}"
        # The child's checkpoints stay in memory: when it waits for people its state travels in
        # the parent's interrupt (checkpointed with the parent), and the answer brings it back.
        memory = InMemoryCheckpointer()

        def forward(event: Event) -> None:  # the child's node events, as `sub/<node>` in the parent's log
            if event.data is not None and event.type in _FORWARDED_CHILD_EVENTS:
                node_id = f"{ctx.node_id}/{event.node_id}" if event.node_id else ctx.node_id
                ctx.runner.emit(event.data, node_id)

        options: dict[str, Any] = {
            "on_event": forward,
            "env": env,
            "flows": flows,
            "timeout_s": None,
            "depth": depth,
            "providers": ctx.runner.services.providers,
            "tools": ctx.runner.services.tools,
        }
        state = resume.get("subflow") if isinstance(resume, dict) else None
        if state:
            memory.runs[child_id] = Checkpoint.from_dict(state["checkpoint"])
            child = await _restored(child_flow, child_id, memory, **options)
            child.services.depth = depth
            try:
                await child.deliver_resume(state["node"], resume.get("answer"))
            except ResumeError as exc:
                raise NodeError(f"sub-flow {ref!r}: {exc}", retryable=False) from None
            result = await child.continue_()
        else:
            try:
                data = validate_inputs(child_flow, inputs)
            except RunInputError as exc:
                raise NodeError(f"sub-flow {ref!r}: {exc}", retryable=False) from None
            child = _make_runner(child_flow, child_id, data, checkpointer=memory, **options)
            child.services.depth = depth
            result = await child.start()
        if result.status == "waiting":
            raise _child_waiting(ref, result, memory.runs[child_id])
        if result.status != "completed":
            raise NodeError(f"sub-flow {ref!r} ended {result.status}: {result.error or ''}".rstrip(": "))
        return result.outputs

    return resolve


def _document_id(path: Path) -> str | None:
    try:
        data = read_document_data(path)
    except FlowValidationError:
        return None
    return data.get("id") if isinstance(data.get("id"), str) else None


# Node-level events only: run_started/run_finished are the node's own, a `waiting` would make the
# server open a second task (the subflow node's interrupt carries the child's), and edge labels
# could collide with the parent's.
_FORWARDED_CHILD_EVENTS = frozenset(
    {ev.NODE_STARTED, ev.NODE_TOKEN, ev.NODE_TOOL_CALL, ev.NODE_RETRYING, ev.NODE_FINISHED, ev.NODE_SKIPPED}
)


def _child_waiting(ref: str, result: RunResult, checkpoint: Checkpoint) -> Exception:
    """What the subflow node raises for a child waiting for people: an interrupt with the child's
    task as it is, plus `subflow` (the child's waiting node and state) for `SubflowNode.accept_resume`."""
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
    payload = {
        **pending["payload"],
        "subflow": {"flow": ref, "node": pending["node_id"], "checkpoint": checkpoint.to_dict()},
    }
    return InterruptRequest(
        payload,
        kind=pending["kind"],
        blocking=True,
        timeout_s=max(expires - time.time(), 0.001) if expires else None,
    )


async def _find_flow(parent: Flow, ref: str, flows: FlowSource | None) -> Flow:
    if isinstance(flows, Mapping):
        if ref in flows:
            return load_flow(flows[ref], registry=parent.registry)
    elif flows is not None:
        found = await flows(ref)
        if found is not None:
            return load_flow(found, registry=parent.registry)
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


def run_sync(flow: FlowLike, inputs: Mapping[str, Any] | None = None, **kwargs: Any) -> RunResult:
    return asyncio.run(run(flow, inputs, **kwargs))


def resume_sync(flow: FlowLike, run_id: str, data: Any = None, **kwargs: Any) -> RunResult:
    return asyncio.run(resume(flow, run_id, data, **kwargs))


def retry_sync(flow: FlowLike, run_id: str, from_node: str, **kwargs: Any) -> RunResult:
    return asyncio.run(retry(flow, run_id, from_node, **kwargs))


__all__ = [
    "Flow",
    "InMemoryCheckpointer",
    "ResumeError",
    "RunInputError",
    "RunNotFoundError",
    "RunResult",
    "cancel",
    "load_flow",
    "resume",
    "resume_sync",
    "retry",
    "retry_sync",
    "run",
    "run_sync",
    "validate_inputs",
]
