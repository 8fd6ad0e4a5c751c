"""The scheduler: runs one compiled plan (a flow, or a loop/map body) under the dataflow policy.

Readiness is a counter per node: `remaining[i]` incoming edges not yet resolved, `delivered[i]`
whether any of them carried a value. A resolved node fires some output ports; edges from the
others are pruned, and a node whose inputs were all pruned is skipped and prunes its own outputs
(dead-path elimination), so joins never wait forever.

Pure in-memory nodes (`Node.inline`) run synchronously in the driver loop; others run as tasks.
A node's delta reaches the checkpointer before any of its dependants is scheduled.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from plait.engine import events as ev
from plait.engine.checkpoint import Checkpoint, Checkpointer, NodeDelta, RunRecord
from plait.engine.events import Event, EventData, EventSink
from plait.engine.plan import Plan, PlanNode
from plait.engine.status import RunStatus
from plait.expr import render
from plait.llm.base import Provider
from plait.nodes.base import InterruptRequest, MultiInput, NodeError, NodeResult
from plait.tools.base import ToolRegistry

_MISSING = object()


class _Outcome:
    __slots__ = ("kind", "result", "error", "interrupt", "attempt", "started", "duration_ms", "var_changes")

    def __init__(
        self,
        kind: str,
        *,
        result: NodeResult | None = None,
        error: str | None = None,
        interrupt: InterruptRequest | None = None,
        attempt: int = 1,
        started: float = 0.0,
        duration_ms: float = 0.0,
        var_changes: dict[str, Any] | None = None,
    ) -> None:
        self.kind = kind  # ok | error | interrupt | cancelled
        self.result = result
        self.error = error
        self.interrupt = interrupt
        self.attempt = attempt
        self.started = started
        self.duration_ms = duration_ms
        self.var_changes = var_changes


@dataclass(slots=True)
class NodeRun:
    """The public per-node record of a run."""

    id: str
    status: str = "pending"
    output: Any = None
    error: str | None = None
    attempts: int = 0
    ports: tuple[str, ...] | None = None
    started_at: float | None = None
    duration_ms: float | None = None
    usage: dict[str, int] | None = None
    reused: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}


@dataclass(slots=True)
class RunResult:
    run_id: str
    status: str  # completed | failed | cancelled | waiting
    outputs: dict[str, Any]
    nodes: dict[str, NodeRun]
    events: list[Event]
    error: str | None = None
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0
    # The edge-LLM decisions of the run (DecisionLog, see plait.engine.policy_edge); empty for dataflow.
    decisions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def interrupt(self) -> dict[str, Any] | None:
        """The first pending interrupt (what a caller must answer to continue), if any."""
        return self.interrupts[0] if self.interrupts else None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "run_id": self.run_id,
            "status": self.status,
            "outputs": self.outputs,
            "error": self.error,
            "interrupts": self.interrupts,
            "usage": self.usage,
            "duration_ms": self.duration_ms,
            "nodes": {k: v.to_dict() for k, v in self.nodes.items()},
        }
        if self.decisions:
            out["decisions"] = self.decisions
        return out


# How far seqs jump when a run continues after a crash (see Runner.restore).
SEQ_GAP_AFTER_CRASH = 1_000_000


class ProviderSource(Protocol):
    """Where nodes get model providers by name (`plait.llm` implements it; tests pass their own)."""

    def get(self, name: str) -> Provider: ...


class RunServices:
    """What a run shares with the runs nested in it (bodies, sub-flows): resolvers, providers, tools."""

    __slots__ = ("resolve_flow", "registry", "depth", "providers", "tools", "mcp_servers")

    def __init__(
        self,
        resolve_flow: Any = None,
        registry: Any = None,
        depth: int = 0,
        *,
        providers: ProviderSource | None = None,
        tools: ToolRegistry | None = None,
        mcp_servers: Mapping[str, Any] | None = None,
    ) -> None:
        self.resolve_flow = resolve_flow  # async (ref, inputs, ctx, resume) -> outputs, for subflow nodes
        self.registry = registry
        self.depth = depth
        self.providers = providers  # None: the default registry of plait.llm
        self.tools = tools  # None: the built-in tools of plait.tools
        self.mcp_servers = dict(mcp_servers or {})  # the flow's settings.mcp_servers (plait.tools.mcp)


class _AliasScope:
    """Lookup for a body run: the body's own outputs first, then aliases, then the enclosing run."""

    __slots__ = ("aliases", "parent")

    def __init__(self, aliases: Mapping[str, Any], parent: Any) -> None:
        self.aliases = aliases
        self.parent = parent

    def lookup(self, root: str) -> Any:
        value = self.aliases.get(root, _MISSING)
        if value is not _MISSING:
            return value
        return self.parent.lookup(root)


class Runner:
    def __init__(
        self,
        plan: Plan,
        run_id: str,
        *,
        flow_id: str = "flow",
        inputs: dict[str, Any] | None = None,
        variables: dict[str, Any] | None = None,
        env: Mapping[str, Any] | None = None,
        checkpointer: Checkpointer | None = None,
        sinks: list[EventSink] | None = None,
        services: RunServices | None = None,
        parent: Any = None,
        event_prefix: str = "",
        record_events: bool = True,
        timeout_s: float | None = None,
        sys_extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.plan = plan
        self.run_id = run_id
        self.flow_id = flow_id
        self.inputs = inputs or {}
        self.vars: dict[str, Any] = variables if variables is not None else {}
        self.initial_vars = dict(self.vars)
        self.env = env or {}
        self.checkpointer = checkpointer
        self.sinks = sinks or []
        self.services = services or RunServices()
        self.parent = parent
        self.event_prefix = event_prefix
        self.timeout_s = timeout_s
        self.events: list[Event] = []
        self.record_events = record_events
        self._unsaved: list[Event] = []
        self._seq = 0
        n = len(plan.nodes)
        self.status = ["pending"] * n
        self.remaining = [pn.in_count for pn in plan.nodes]
        self.delivered = [False] * n
        self.deliveries: list[list[tuple[Any, Any]] | None] = [None] * n
        self.outputs: dict[str, Any] = {}
        self.node_runs: dict[int, NodeRun] = {}
        self.interrupts: dict[int, dict[str, Any]] = {}
        self.resume_data: dict[int, Any] = {}
        self.ready: deque[int] = deque(plan.roots)
        self._done: deque[tuple[int, _Outcome]] = deque()
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wakeup: asyncio.Future[None] | None = None
        self._paused = False
        self._failure: tuple[str | None, str] | None = None
        self._cancelled = False
        self.created_at = time.time()
        self._started = time.perf_counter()
        self.sys = {
            "query": self.inputs.get("query", self.inputs.get("message")),
            "run_id": run_id,
            "flow_id": flow_id,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "files": self.inputs.get("files", []),
            **(sys_extra or {}),
        }

    # ----------------------------------------------------------------- references
    def lookup(self, root: str) -> Any:
        value = self.outputs.get(root, _MISSING)
        if value is not _MISSING:
            return value
        if root == "inputs":
            return self.inputs
        if root == "vars":
            return self.vars
        if root == "sys":
            return self.sys
        if root == "env":
            return self.env
        if self.parent is not None:
            return self.parent.lookup(root)
        raise KeyError(root)

    # ----------------------------------------------------------------- events
    def emit(self, data: EventData, node_id: str | None = None) -> None:
        """Number the payload, wrap it in its envelope once and hand it to every sink."""
        if self.parent is not None and isinstance(self.parent, _AliasScope):
            # Body runs report through the enclosing run's log, node ids prefixed with the owner.
            self.parent.parent.emit(data, self.event_prefix + node_id if node_id else None)
            return
        self._seq += 1
        event = Event(self._seq, data.type, self.run_id, time.time(), node_id, data)
        if self.record_events:
            self.events.append(event)
        self._unsaved.append(event)
        for sink in self.sinks:
            sink(event)

    async def _save(self, delta: NodeDelta) -> None:
        """Hand a delta and the events since the last save to the checkpointer (if any)."""
        if self.checkpointer is not None:
            await self.checkpointer.save(self.run_id, delta, self._take_unsaved())

    def _take_unsaved(self) -> list[Event]:
        batch, self._unsaved = self._unsaved, []
        return batch

    # ----------------------------------------------------------------- lifecycle
    def record(self) -> RunRecord:
        return RunRecord(self.run_id, self.flow_id, self.inputs, self.initial_vars, self.created_at)

    async def start(self) -> RunResult:
        self.emit(ev.RunStarted(self.flow_id, self.inputs))
        if self.checkpointer is not None:
            await self.checkpointer.begin(self.record(), self._take_unsaved())
        return await self._finish(await self._drive_with_timeout())

    async def continue_(self) -> RunResult:
        """Run on from restored state (after `restore`, `deliver_resume` or `reuse`)."""
        if self.checkpointer is not None:
            await self.checkpointer.begin(self.record(), self._take_unsaved())
        return await self._finish(await self._drive_with_timeout())

    def cancel(self) -> None:
        if self._cancelled:
            return
        self._cancelled = True
        for task in self._tasks.values():
            task.cancel()
        self._wake()

    async def _drive_with_timeout(self) -> str:
        if self.timeout_s is None:
            return await self._drive()
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._drive()
        except TimeoutError:
            for task in self._tasks.values():
                task.cancel()
            await self._drain()
            self._failure = (None, f"run exceeded its timeout of {self.timeout_s:g}s")
            return "failed"

    async def _drain(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        self._tasks.clear()
        self._done.clear()

    async def _drive(self) -> str:
        ready, done, nodes = self.ready, self._done, self.plan.nodes
        limit = self.plan.max_concurrency
        loop = asyncio.get_running_loop()
        while True:
            while done:
                idx, outcome = done.popleft()
                await self._complete(idx, outcome)
            if self._cancelled or self._failure is not None:
                if self._tasks:
                    for task in self._tasks.values():
                        task.cancel()
                    await self._drain()
                return "cancelled" if self._cancelled else "failed"
            while ready and not self._paused and len(self._tasks) < limit:
                idx = ready.popleft()
                pn = nodes[idx]
                if pn.inline and idx not in self.resume_data:
                    await self._complete(idx, self._run_inline(pn))
                    if self._failure is not None:
                        break
                    continue
                self._mark_started(pn, 1)
                self._tasks[idx] = loop.create_task(self._run_task(pn))
            if done or (self._failure is not None and not self._tasks):
                continue
            if not self._tasks:
                break
            self._wakeup = loop.create_future()
            await self._wakeup
        if self.interrupts:
            return "waiting"
        return "completed"

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    # ----------------------------------------------------------------- node execution
    def _mark_started(self, pn: PlanNode, attempt: int) -> NodeRun:
        nr = self.node_runs.get(pn.index)
        if nr is None:
            nr = self.node_runs[pn.index] = NodeRun(pn.id)
        nr.status, nr.attempts, nr.started_at = "running", attempt, time.time()
        self.status[pn.index] = "running"
        self.emit(ev.NodeStarted(pn.spec.type, attempt), pn.id)
        return nr

    def _inputs_of(self, idx: int) -> tuple[Any, dict[str, Any]]:
        got = self.deliveries[idx]
        if not got:
            return None, {}
        if len(got) == 1:
            edge, value = got[0]
            return (value if edge.target_port == "in" else None), {edge.target_port: value}
        ports: dict[str, Any] = {}
        for edge, value in got:
            src = self.plan.nodes[edge.source].id
            slot = ports.get(edge.target_port, _MISSING)
            if slot is _MISSING:
                ports[edge.target_port] = value
            elif isinstance(slot, MultiInput):
                slot[src] = value
            else:
                first = next(e for e, _ in got if e.target_port == edge.target_port)
                ports[edge.target_port] = MultiInput({self.plan.nodes[first.source].id: slot, src: value})
        return ports.get("in"), ports

    def _run_inline(self, pn: PlanNode) -> _Outcome:
        self._mark_started(pn, 1)
        value, ports = self._inputs_of(pn.index)
        ctx = NodeRunContext(self, pn, 1, value, ports)
        t0 = time.perf_counter()
        try:
            result = pn.node.execute(ctx)
        except NodeError as exc:
            return _Outcome("error", error=_format_error(exc), started=t0)
        except InterruptRequest as req:
            return _Outcome("interrupt", interrupt=req, started=t0, var_changes=ctx.var_changes)
        except Exception as exc:  # a bug in a node type must fail the run, not the engine
            return _Outcome("error", error=f"{type(exc).__name__}: {exc}", started=t0)
        if type(result) is not NodeResult:
            result = NodeResult(result)
        return _Outcome(
            "ok",
            result=result,
            started=t0,
            duration_ms=(time.perf_counter() - t0) * 1000,
            var_changes=ctx.var_changes,
        )

    async def _run_task(self, pn: PlanNode) -> None:
        try:
            outcome = await self._invoke(pn)
        except asyncio.CancelledError:
            outcome = _Outcome("cancelled")
        except Exception as exc:  # noqa: BLE001 - defensive: the engine must always record an outcome
            outcome = _Outcome("error", error=f"{type(exc).__name__}: {exc}")
        self._tasks.pop(pn.index, None)
        self._done.append((pn.index, outcome))
        self._wake()

    async def _invoke(self, pn: PlanNode) -> _Outcome:
        value, ports = self._inputs_of(pn.index)
        if pn.input_validator is not None:
            problem = _schema_error(pn.input_validator, value)
            if problem:
                return _Outcome("error", error=f"input does not match input_schema: {problem}")
        delay = pn.retry_delay_s
        attempt = 1
        while True:
            ctx = NodeRunContext(self, pn, attempt, value, ports)
            t0 = time.perf_counter()
            error: str
            retryable = True
            try:
                async with asyncio.timeout(pn.timeout_s):
                    result = await pn.node.run(ctx)
                if type(result) is not NodeResult:
                    result = NodeResult(result)
                if pn.output_validator is not None:
                    problem = _schema_error(pn.output_validator, result.output)
                    if problem:
                        raise NodeError(f"output does not match output_schema: {problem}")
                return _Outcome(
                    "ok",
                    result=result,
                    attempt=attempt,
                    started=t0,
                    duration_ms=(time.perf_counter() - t0) * 1000,
                    var_changes=ctx.var_changes,
                )
            except InterruptRequest as req:
                return _Outcome(
                    "interrupt", interrupt=req, attempt=attempt, started=t0, var_changes=ctx.var_changes
                )
            except NodeError as exc:
                error, retryable = _format_error(exc), exc.retryable
            except TimeoutError:
                error = f"timed out after {pn.timeout_s:g}s"
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            if not retryable or attempt >= pn.max_attempts:
                return _Outcome(
                    "error",
                    error=error,
                    attempt=attempt,
                    started=t0,
                    duration_ms=(time.perf_counter() - t0) * 1000,
                )
            self.emit(ev.NodeRetrying(attempt, error, delay), pn.id)
            if delay:
                await asyncio.sleep(delay)
                delay *= pn.retry_backoff
            attempt += 1
            self._mark_started(pn, attempt)

    # ----------------------------------------------------------------- completion
    async def _complete(self, idx: int, outcome: _Outcome) -> None:
        pn = self.plan.nodes[idx]
        nr = self.node_runs[idx]
        nr.attempts = outcome.attempt
        nr.duration_ms = outcome.duration_ms
        kind = outcome.kind
        if kind == "cancelled":
            nr.status = self.status[idx] = "cancelled"
            return
        self.resume_data.pop(idx, None)
        got = self.deliveries[idx]
        sources: tuple[tuple[str, str, str], ...] | None = None  # NodeDelta.input
        if got:
            if len(got) == 1:  # the common case, without a generator (hot path)
                e = got[0][0]
                sources = ((self.plan.nodes[e.source].id, e.source_port, e.target_port),)
            else:
                sources = tuple(
                    [(self.plan.nodes[e.source].id, e.source_port, e.target_port) for e, _ in got]
                )
        if kind == "ok":
            result = outcome.result
            assert result is not None
            nr.status = self.status[idx] = "ok"
            nr.output, nr.ports, nr.usage = result.output, result.ports, result.usage
            self.outputs[pn.key] = result.output
            self.emit(
                ev.NodeFinished(
                    True,
                    result.output,
                    duration_ms=round(outcome.duration_ms, 3),
                    attempt=outcome.attempt,
                    branch=None if result.ports is None else list(result.ports),
                    usage=result.usage or None,
                ),
                pn.id,
            )
            delta = NodeDelta(
                pn.id,
                "ok",
                result.output,
                result.ports,
                outcome.var_changes,
                None,
                outcome.attempt,
                nr.started_at,
                outcome.duration_ms,
                result.usage,
                input=sources,
            )
            newly_ready = self._propagate(idx, result.ports, result.output, True)
            await self._save(delta)
            self.ready.extend(newly_ready)
        elif kind == "interrupt":
            req = outcome.interrupt
            assert req is not None
            info = {
                "id": pn.id,
                "node_id": pn.id,
                "kind": req.kind,
                "payload": req.payload,
                "blocking": req.blocking,
                "created_at": time.time(),
                "expires_at": time.time() + req.timeout_s if req.timeout_s else None,
            }
            self.interrupts[idx] = info
            nr.status = self.status[idx] = "waiting"
            self.emit(ev.Waiting(pn.id, info), pn.id)
            await self._save(
                NodeDelta(
                    pn.id,
                    "waiting",
                    vars=outcome.var_changes,
                    attempt=outcome.attempt,
                    started_at=nr.started_at,
                    interrupt=info,
                    input=sources,
                )
            )
            if req.blocking:
                self._paused = True
        else:
            nr.status = self.status[idx] = "error"
            nr.error = outcome.error
            self.emit(
                ev.NodeFinished(
                    False,
                    error=outcome.error,
                    duration_ms=round(outcome.duration_ms, 3),
                    attempt=outcome.attempt,
                ),
                pn.id,
            )
            await self._save(
                NodeDelta(
                    pn.id,
                    "error",
                    error=outcome.error,
                    attempt=outcome.attempt,
                    started_at=nr.started_at,
                    duration_ms=outcome.duration_ms,
                    input=sources,
                )
            )
            self._failure = (pn.id, f"node {pn.id!r} failed: {outcome.error}")

    def _propagate(self, idx: int, fired: tuple[str, ...] | None, output: Any, emit: bool) -> list[int]:
        """Resolve the out-edges of a finished node; returns the nodes that became ready."""
        nodes, remaining, delivered = self.plan.nodes, self.remaining, self.delivered
        newly_ready: list[int] = []
        pruned_stack: list[int] = []
        for edge in nodes[idx].out_edges:
            t = edge.target
            if edge.control or fired is None or edge.source_port in fired:
                delivered[t] = True
                if not edge.control:
                    port = edge.source_port
                    if port == "out" or type(output) is not dict or port not in output:
                        value = output
                    else:
                        value = output[port]
                    got = self.deliveries[t]
                    if got is None:
                        self.deliveries[t] = [(edge, value)]
                    else:
                        got.append((edge, value))
                if emit:
                    self.emit(ev.EdgeFired(edge.label, nodes[edge.source].id, nodes[t].id))
            remaining[t] -= 1
            if remaining[t] == 0:
                if delivered[t]:
                    newly_ready.append(t)
                else:
                    pruned_stack.append(t)
        while pruned_stack:
            s = pruned_stack.pop()
            self.status[s] = "skipped"
            if emit:
                nr = self.node_runs.get(s)
                if nr is None:
                    self.node_runs[s] = NodeRun(nodes[s].id, "skipped")
                else:
                    nr.status = "skipped"
                self.emit(ev.NodeSkipped(), nodes[s].id)
            else:
                self.node_runs[s] = NodeRun(nodes[s].id, "skipped")
            for edge in nodes[s].out_edges:
                t = edge.target
                remaining[t] -= 1
                if remaining[t] == 0:
                    if delivered[t]:
                        newly_ready.append(t)
                    else:
                        pruned_stack.append(t)
        return newly_ready

    async def _finish(self, status: str) -> RunResult:
        outputs = self.collect_outputs() if status == "completed" else {}
        error = self._failure[1] if self._failure else None
        usage = self.total_usage()
        duration_ms = (time.perf_counter() - self._started) * 1000
        pending = list(self.interrupts.values())
        if status == "failed" and error:
            self.emit(ev.RunError(error), self._failure[0] if self._failure else None)
        self.emit(
            ev.RunFinished(
                RunStatus(status),
                outputs,
                usage,
                duration_ms=round(duration_ms, 3),
                error=error or None,
                interrupts=pending or None,
            )
        )
        if self.checkpointer is not None:
            await self.checkpointer.finish(self.run_id, status, outputs, error, self._take_unsaved())
        nodes = {self.plan.nodes[i].id: nr for i, nr in sorted(self.node_runs.items())}
        return RunResult(self.run_id, status, outputs, nodes, self.events, error, pending, usage, duration_ms)

    def collect_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for pn in self.plan.nodes:
            if pn.is_output and self.status[pn.index] == "ok":
                name = getattr(pn.node.config, "name", None) or pn.id
                out[name] = pn.node.flow_output(self.outputs[pn.key])
        return out

    def total_usage(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for nr in self.node_runs.values():
            if nr.usage:
                for k, v in nr.usage.items():
                    total[k] = total.get(k, 0) + v
        return total

    # ----------------------------------------------------------------- restore / resume / reuse
    def restore(self, checkpoint: Checkpoint) -> None:
        """Rebuild the scheduler from a checkpoint by replaying its deltas (no node is executed)."""
        self._seq = checkpoint.highest_seq
        if checkpoint.run.status == "running" and self._seq:
            # A crashed process may have streamed events it never saved (live SSE clients saw
            # their seqs): new events must not reuse those numbers, or a client re-attaching
            # with Last-Event-ID would skip them. Seqs stay increasing, not contiguous.
            self._seq += SEQ_GAP_AFTER_CRASH
        for delta in checkpoint.deltas:
            self.apply_delta(delta)

    def apply_delta(self, delta: NodeDelta) -> None:
        idx = self.plan.by_key[delta.node_id.lower()]
        pn = self.plan.nodes[idx]
        nr = self.node_runs.get(idx) or NodeRun(pn.id)
        self.node_runs[idx] = nr
        if delta.vars:
            self.vars.update(delta.vars)
        if delta.status == "ok":
            nr.status, nr.output, nr.ports, nr.attempts = "ok", delta.output, delta.ports, delta.attempt
            nr.started_at, nr.duration_ms, nr.usage, nr.reused = (
                delta.started_at,
                delta.duration_ms,
                delta.usage,
                delta.reused,
            )
            self.status[idx] = "ok"
            self.outputs[pn.key] = delta.output
            self.interrupts.pop(idx, None)
            self.ready.extend(self._propagate(idx, delta.ports, delta.output, False))
        elif delta.status == "waiting":
            nr.status = self.status[idx] = "waiting"
            self.interrupts[idx] = dict(delta.interrupt or {})
        elif delta.status == "resumed":
            self.interrupts.pop(idx, None)
            self.resume_data[idx] = delta.resume
            nr.status = self.status[idx] = "pending"
            self.ready.append(idx)
        elif delta.status == "error":
            nr.status, nr.error = "error", delta.error
            self.status[idx] = "error"
        # Nodes already resolved must not stay in the ready queue.
        self.ready = deque(i for i in dict.fromkeys(self.ready) if self.status[i] in ("pending", "running"))

    async def deliver_resume(self, node_id: str, data: Any) -> None:
        """Hand resume data to a waiting node, checkpointing it first."""
        idx = self.plan.by_key.get(node_id.lower())
        if idx is None or idx not in self.interrupts:
            waiting = ", ".join(self.plan.nodes[i].id for i in self.interrupts) or "none"
            raise ResumeError(f"node {node_id!r} is not waiting for input (waiting: {waiting})")
        info = self.interrupts[idx]
        pn = self.plan.nodes[idx]
        expires = info.get("expires_at")
        if expires and time.time() > expires:
            raise ResumeError(f"the task of node {node_id!r} expired", expired=True)
        data = pn.node.accept_resume(data, info)
        delta = NodeDelta(pn.id, "resumed", resume=data)
        self.apply_delta(delta)
        self._paused = False
        await self._save(delta)

    async def expire(self, node_id: str) -> RunResult:
        """Fail a waiting node whose task timed out: node error, run failed."""
        idx = self.plan.by_key[node_id.lower()]
        self.interrupts.pop(idx, None)
        self.node_runs.setdefault(idx, NodeRun(node_id))
        await self._complete(idx, _Outcome("error", error="the human task expired before anyone answered"))
        return await self._finish("failed")


def lookup_secret(variables: Mapping[str, Any], name: str) -> str | None:
    """A secret by name: the stored variables first, then the process environment."""
    value = variables.get(name)
    if value is None:
        value = os.environ.get(name)
    return None if value is None else str(value)


class ResumeError(ValueError):
    def __init__(self, message: str, *, expired: bool = False) -> None:
        super().__init__(message)
        self.expired = expired


class NodeRunContext:
    """The `NodeContext` the engine gives a node for one attempt."""

    __slots__ = ("runner", "pn", "attempt", "input", "inputs", "var_changes", "_resume")

    def __init__(self, runner: Runner, pn: PlanNode, attempt: int, value: Any, ports: dict[str, Any]) -> None:
        self.runner = runner
        self.pn = pn
        self.attempt = attempt
        self.input = value
        self.inputs = ports
        self.var_changes: dict[str, Any] | None = None
        self._resume = runner.resume_data.get(pn.index, _MISSING)

    @property
    def run_id(self) -> str:
        return self.runner.run_id

    @property
    def node_id(self) -> str:
        return self.pn.id

    @property
    def vars(self) -> dict[str, Any]:
        return self.runner.vars

    def lookup(self, root: str) -> Any:
        return self.runner.lookup(root)

    def render(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        if extra:
            return render(value, _AliasScope({k.lower(): v for k, v in extra.items()}, self.runner).lookup)
        return render(value, self.runner.lookup)

    def set_var(self, name: str, value: Any) -> None:
        self.runner.vars[name] = value
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
        if self._resume is not _MISSING:
            return self._resume
        raise InterruptRequest(payload, kind=kind, blocking=blocking, timeout_s=timeout_s)

    def emit_token(self, delta: str) -> None:
        self.runner.emit(ev.NodeToken(delta), self.pn.id)

    def emit_tool_call(self, name: str, args: Any) -> None:
        self.runner.emit(ev.NodeToolCall(name, args), self.pn.id)

    @property
    def services(self) -> RunServices:
        return self.runner.services

    def secret(self, name: str) -> str | None:
        return lookup_secret(self.runner.env, name)

    async def run_body(self, body: str, *, aliases: Mapping[str, Any], inputs: Any = None) -> dict[str, Any]:
        """Run one of this node's bodies to completion; returns its outputs. Body failures raise NodeError."""
        plan = self.pn.bodies[body]
        scope = _AliasScope({k.lower(): v for k, v in aliases.items()}, self.runner)
        child = Runner(
            plan,
            self.runner.run_id,
            flow_id=self.runner.flow_id,
            inputs=self.runner.inputs,
            variables=self.runner.vars,
            env=self.runner.env,
            services=self.runner.services,
            parent=scope,
            event_prefix=f"{self.pn.id}/",
            record_events=False,
        )
        child.sys = self.runner.sys
        status = await child._drive()
        if status == "failed":
            raise NodeError(child._failure[1] if child._failure else "body failed")
        if status == "waiting":
            raise NodeError(
                "a human node inside a loop or map body is not supported",
                hint="move the human node out of the body",
            )
        return child.collect_outputs()

    async def run_flow(self, ref: str, inputs: Mapping[str, Any], *, resume: Any = None) -> dict[str, Any]:
        resolve = self.runner.services.resolve_flow
        if resolve is None:
            raise NodeError(
                "sub-flows are not available in this run", hint="pass `flows=` or load from a file"
            )
        return await resolve(ref, dict(inputs), self, resume)


def _format_error(exc: NodeError) -> str:
    return f"{exc.message} (fix: {exc.hint})" if exc.hint else exc.message


def _schema_error(validator: Any, value: Any) -> str | None:
    err = next(iter(validator.iter_errors(value)), None)
    if err is None:
        return None
    path = "/".join(str(p) for p in err.absolute_path)
    return f"{path or '(root)'}: {err.message}"
