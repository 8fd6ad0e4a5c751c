"""The driver: runs one compiled plan (a flow, or a loop/map body) to an end status.

The rule it keeps: **a node's delta is checkpointed before any of its dependants starts.** Every
outcome goes through `commit` (state, events, propagation, then the checkpoint, then the newly
ready nodes join the queue), and the loop starts nothing while an outcome waits to be committed.

The loop asks its `SchedulingPolicy` what to start (`startable`) and what to do when nothing is
running (`idle`); pure in-memory nodes run inline when the policy allows it, others as tasks (at
most `max_concurrency`). In a checkpointed run the tasks it starts are recorded (`running`
deltas, one save for all of them) before any of them runs, so that a node the server stopped in
the middle is run again as a new attempt, with a `NodeRerun` event saying why. Every node start
counts against the run tree's node executions, and every output against the output budget
(`plait.engine.limits`). The rest lives in small modules: run state and readiness (`state`), node
invocation (`invoke`), commit (`commit`), the node context (`context`), events and checkpoint
hand-off (`journal`), results (`results`) and the run's services (`services`).

Loop iterations and map items (bodies run through `run_body` with an index) of a checkpointed run
are recorded as they finish, so a restored loop or map runs only the missing ones
(`plait.engine.items`); a sub-flow's child is a run of its own in the same checkpointer, which
the subflow node continues (`child_of`, `plait.engine.children`).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import plait.engine.events as ev
from plait.engine.body_wait import resumed_body, waiting_body
from plait.engine.checkpoint import Checkpoint, Checkpointer, NodeDelta, RunRecord
from plait.engine.commit import ToSave, commit, save_then_queue
from plait.engine.context import MISSING, NodeRunContext, Scope, lookup_secret
from plait.engine.errors import ResumeError
from plait.engine.events import EventSink
from plait.engine.invoke import NodeOutcome, OutcomeKind, call, call_inline, format_error
from plait.engine.items import ITEM_STATUS, ItemRecords, item_key
from plait.engine.journal import BodyJournal, EventLog, RunJournal
from plait.engine.limits import ExecutionCount, OutputBudget, too_many_executions
from plait.engine.on_error import handled
from plait.engine.plan import Plan, PlanNode
from plait.engine.policy import DataflowPolicy, SchedulingPolicy
from plait.engine.results import RunResult
from plait.engine.services import RunServices
from plait.engine.state import RunState
from plait.engine.status import NodeStatus, RunStatus
from plait.nodes.base import NodeError

# How far seqs jump when a run continues after a crash (see Runner.restore).
SEQ_GAP_AFTER_CRASH = 1_000_000

# Why a node runs again after a restore (`NodeRerun.reason`): see plait.engine.checkpoint.
RERUN_REASON = (
    "the server stopped while attempt {attempt} of this node ran, so it runs again; "
    "what that attempt did outside plait may have happened"
)

_RUNNING = NodeStatus.RUNNING
_COMPLETED, _FAILED, _CANCELLED, _WAITING = (
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.CANCELLED,
    RunStatus.WAITING,
)
_DATAFLOW = DataflowPolicy()
_OWNER_DONE = (NodeStatus.OK, NodeStatus.ERROR)  # deltas after which a node's items are dropped


class Runner:
    """One execution of a plan: the driver loop and the run's lifecycle (start, restore, finish)."""

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
        sinks: Sequence[EventSink] = (),
        services: RunServices | None = None,
        policy: SchedulingPolicy = _DATAFLOW,
        timeout_s: float | None = None,
        journal: EventLog | None = None,
        parent: Scope | None = None,
        sys: dict[str, Any] | None = None,
    ) -> None:
        self.plan = plan
        self.run_id = run_id
        self.flow_id = flow_id
        self.inputs = inputs or {}
        self.state = state = RunState(plan, variables if variables is not None else {})
        self.vars = state.vars
        self.outputs = state.outputs
        self.env = env or {}
        self.services = services or RunServices()
        self.policy = policy
        self.timeout_s = timeout_s
        # A body run reports through its enclosing run's journal and looks up through its scope.
        self.own_journal: RunJournal | None = None
        self.initial_vars: dict[str, Any] = {}  # what the run record keeps (top-level runs)
        if journal is None:
            journal = self.own_journal = RunJournal(
                run_id, checkpointer=checkpointer, sinks=sinks, mask=self.services.mask
            )
            self.initial_vars = dict(self.vars)
        self.journal: EventLog = journal
        self.emit = journal.emit
        # Finished loop iterations and map items (plait.engine.items): a checkpointed top-level run
        # keeps them; its bodies share them (`run_body`), their keys under `item_prefix`.
        self.items: ItemRecords | None = None
        if checkpointer is not None and self.own_journal is not None:
            self.items = ItemRecords()
        self.item_prefix = ""
        # Sub-flow children of a checkpointed run are runs of their own in its checkpointer
        # (plait.engine.children); a child's runner names its parent run.
        self.checkpointer = checkpointer
        self.parent_run_id: str | None = None
        self.reran: set[int] | None = None  # nodes restored cut short and started again (`child_of`)
        self.continues = False  # a body run of such a node (a loop iteration, a map item)
        self.parent = parent
        limits = self.services.limits
        max_output = limits.max_node_output_bytes
        self.output_budget = OutputBudget(max_output) if max_output > 0 else None
        self.max_executions = limits.max_node_executions
        # The run tree's count (`plait.run` gives each top-level run one, its sub-flows share it);
        # bodies share their run's (`run_body`).
        self.executions = self.services.executions or ExecutionCount()
        self._done: deque[tuple[int, NodeOutcome]] = deque()
        self._tasks: dict[int, asyncio.Task[None]] = {}
        # Checkpointed runs: tasks just started, held at `_gate` until their `running` deltas
        # (`_starting`) are saved (`_save_starts`).
        self._starting: list[NodeDelta] = []
        self._gate: asyncio.Future[None] | None = None
        self._wakeup: asyncio.Future[None] | None = None
        self._cancelled = False
        self.created_at = time.time()
        self._started = time.perf_counter()
        if sys is None:
            sys = {
                "query": self.inputs.get("query", self.inputs.get("message")),
                "run_id": run_id,
                "flow_id": flow_id,
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "files": self.inputs.get("files", []),
            }
        self.sys = sys

    # ----------------------------------------------------------------- what policies and nodes see
    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def running(self) -> Mapping[int, asyncio.Task[None]]:
        return self._tasks

    def lookup(self, root: str) -> Any:
        value = self.outputs.get(root, MISSING)
        if value is not MISSING:
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

    def secret(self, name: str) -> str | None:
        return lookup_secret(self.env, name)

    async def save_decision(self, record: dict[str, Any]) -> None:
        if self.own_journal is not None:
            await self.own_journal.save_decision(record)

    # ----------------------------------------------------------------- lifecycle
    def record(self) -> RunRecord:
        return RunRecord(
            self.run_id, self.flow_id, self.inputs, self.initial_vars, self.created_at, self.parent_run_id
        )

    async def execute(
        self, started: ev.RunStarted | None = None, reuse: Sequence[NodeDelta] = ()
    ) -> RunResult:
        """Run to an end status: report `started` (a new run), store the run record, replay and
        store `reuse` (a retry's reused deltas), drive, finish. A restored run passes neither."""
        journal = self.own_journal
        assert journal is not None, "a body run is driven by its node, not executed"
        if started is not None:
            journal.emit(started)
        await journal.begin(self.record())
        for delta in reuse:
            self.apply_delta(delta)
            await journal.save(delta)
        try:
            status = await self._drive_with_timeout()
        except BaseException:
            # The driver stopped without an end (a checkpoint that failed, e.g. refused because
            # another process took the run over; the run's task cancelled): its node tasks stop
            # too, so nothing of this execution goes on in the background.
            self._abandon_tasks()
            raise
        return await self._finish(status)

    def cancel(self) -> None:
        if self._cancelled:
            return
        self._cancelled = True
        self.policy.cancel()
        for task in self._tasks.values():
            task.cancel()
        self._wake()

    async def _drive_with_timeout(self) -> RunStatus:
        if self.timeout_s is None:
            return await self.drive()
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self.drive()
        except TimeoutError:
            await self._stop_tasks()
            self.state.fail(None, f"run exceeded its timeout of {self.timeout_s:g}s")
            return _FAILED

    async def drive(self) -> RunStatus:
        """The driver loop (see the module docstring)."""
        state, done, policy, nodes = self.state, self._done, self.policy, self.plan.nodes
        inline = policy.runs_inline
        while True:
            while done:
                idx, outcome = done.popleft()
                if (to_save := self._commit(idx, outcome)) is not None:
                    await save_then_queue(state, self.journal, to_save)
            if self._cancelled or state.failure is not None:
                await self._stop_tasks()
                return _CANCELLED if self._cancelled else _FAILED
            try:
                for idx in policy.startable(self):
                    pn = nodes[idx]
                    if inline and pn.inline and idx not in state.resume_data:
                        if (to_save := self._commit(idx, self._run_inline(pn))) is not None:
                            await save_then_queue(state, self.journal, to_save, hold=True)
                        if state.failure is not None:
                            break
                    else:
                        self._start_task(pn)
                if self._starting:
                    await self._save_starts()
            except BaseException:
                if self._gate is not None:  # the held tasks must not run
                    self._gate.cancel()
                raise
            if done or (state.failure is not None and not self._tasks):
                continue
            if self._tasks:
                await self.journal.flush()  # held inline deltas are written before the run waits
                self._wakeup = asyncio.get_running_loop().create_future()
                await self._wakeup
                continue
            # (Only a policy that runs nodes inline holds deltas, and its `idle` does not wait:
            # what is held goes with the run's end, or with what runs next.)
            end = await policy.idle(self)
            if end is not None:
                return end

    def _abandon_tasks(self) -> None:
        """Cancel the node tasks (and the ones held at the gate) without waiting for them."""
        if self._gate is not None:
            self._gate.cancel()
            self._gate = None
        for task in self._tasks.values():
            task.cancel()

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def _stop_tasks(self) -> None:
        if self._tasks:
            for task in self._tasks.values():
                task.cancel()
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        self._tasks.clear()
        self._done.clear()

    # ----------------------------------------------------------------- node execution
    def _mark_started(self, pn: PlanNode, attempt: int) -> bool:
        """Report the attempt started; False when the run tree has used up its node executions
        (then the attempt must not run: `_out_of_executions`)."""
        nr = self.state.node_run(pn.index)
        nr.status, nr.attempts, nr.started_at = _RUNNING, attempt, time.time()
        self.state.status[pn.index] = _RUNNING
        started = pn.started if attempt == 1 else ev.NodeStarted(pn.spec.type, attempt)
        self.journal.emit(started, pn.id)
        count = self.executions
        count.used += 1
        return not (self.max_executions and count.used > self.max_executions)

    def _out_of_executions(self, attempt: int) -> NodeOutcome:
        error = format_error(too_many_executions(self.max_executions))
        return NodeOutcome(OutcomeKind.ERROR, error=error, attempt=attempt, fatal=True)

    def _context(
        self, pn: PlanNode, attempt: int, value: Any, ports: dict[str, Any], scope: Scope
    ) -> NodeRunContext:
        resume = self.state.resume_data.get(pn.index, MISSING)
        return NodeRunContext(self, pn, attempt, value, ports, self.vars, scope, resume)

    def _run_inline(self, pn: PlanNode) -> NodeOutcome:
        if not self._mark_started(pn, 1):
            return self._out_of_executions(1)
        value, ports, scope = self.policy.node_input(self, pn.index)
        return call_inline(pn, self._context(pn, 1, value, ports, scope), self.output_budget)

    def _start_task(self, pn: PlanNode) -> None:
        attempt = 1
        unfinished = self.state.unfinished
        if unfinished and pn.index in unfinished:  # restored: the server stopped it mid-attempt
            attempt = unfinished.pop(pn.index) + 1
            self.journal.emit(ev.NodeRerun(attempt, RERUN_REASON.format(attempt=attempt - 1)), pn.id)
            if self.reran is None:
                self.reran = set()
            self.reran.add(pn.index)
        elif self.reran:  # a later execution of a node that was restored cut short: a new one
            self.reran.discard(pn.index)
        allowed = self._mark_started(pn, attempt)
        gate = None
        if self.journal.checkpointing:
            self._starting.append(self._running_delta(pn, attempt))
            gate = self._gate
            if gate is None:
                gate = self._gate = asyncio.get_running_loop().create_future()
        self._tasks[pn.index] = asyncio.get_running_loop().create_task(
            self._run_task(pn, attempt, allowed, gate)
        )

    def _running_delta(self, pn: PlanNode, attempt: int) -> NodeDelta:
        return NodeDelta(
            pn.id, _RUNNING, attempt=attempt, started_at=self.state.node_run(pn.index).started_at
        )

    async def _save_starts(self) -> None:
        """Record the tasks just started, then let them run (see the module docstring)."""
        starting, self._starting = self._starting, []
        gate, self._gate = self._gate, None
        await self.journal.save_started(starting)
        if gate is not None:
            gate.set_result(None)

    async def _run_task(
        self, pn: PlanNode, attempt: int, allowed: bool, gate: asyncio.Future[None] | None
    ) -> None:
        try:
            if gate is not None:
                await asyncio.shield(gate)  # (a cancelled task must not cancel the others' gate)
            if not allowed:
                outcome = self._out_of_executions(attempt)
            else:
                outcome = await self._attempts(pn, attempt)
        except asyncio.CancelledError:
            outcome = NodeOutcome(OutcomeKind.CANCELLED)
        except Exception as exc:  # noqa: BLE001 - defensive: the engine must always record an outcome
            outcome = NodeOutcome(OutcomeKind.ERROR, error=f"{type(exc).__name__}: {exc}")
        self._tasks.pop(pn.index, None)
        self._done.append((pn.index, outcome))
        self._wake()

    async def _attempts(self, pn: PlanNode, first: int) -> NodeOutcome:
        value, ports, scope = self.policy.node_input(self, pn.index)

        def new_context(attempt: int) -> NodeRunContext:
            return self._context(pn, attempt, value, ports, scope)

        def on_retry(attempt: int, error: str, delay: float) -> None:
            self.journal.emit(ev.NodeRetrying(attempt, error, delay), pn.id)

        async def start_retry(attempt: int) -> None:
            if not self._mark_started(pn, attempt):
                raise too_many_executions(self.max_executions)
            if self.journal.checkpointing:
                await self.journal.save_started([self._running_delta(pn, attempt)])

        return await call(
            pn, value, new_context, on_retry, start_retry, first_attempt=first, budget=self.output_budget
        )

    def _commit(self, idx: int, outcome: NodeOutcome) -> ToSave | None:
        if outcome.kind is OutcomeKind.ERROR:
            outcome = handled(self.plan.nodes[idx], outcome)
        elif outcome.ports is None and outcome.kind is OutcomeKind.OK:
            outcome.ports = self.plan.nodes[idx].ok_ports  # None unless errors are routed
        self.policy.on_outcome(self, idx, outcome)
        items = self.items
        # (a body's runner shares the items but none of its nodes owns any: only the run's drop)
        if items is not None and items.by_owner and self.own_journal is not None:
            self._drop_items(items, idx, outcome)
        return commit(self.state, self.journal, idx, outcome)

    def _drop_items(self, items: ItemRecords, idx: int, outcome: NodeOutcome) -> None:
        if outcome.kind is not OutcomeKind.INTERRUPT:
            items.drop(self.plan.nodes[idx].id)  # its own delta stands for its items now

    async def run_body(
        self, ctx: NodeRunContext, body: str, scope: Scope, index: int | None = None
    ) -> dict[str, Any]:
        """Run one of a node's bodies (loop/map) to completion under the dataflow policy.

        With an `index` in a checkpointed run, the body run is one item: a recorded one is not run
        again (its outputs are returned and its variables set), a new one is recorded once it
        finished (see plait.engine.items)."""
        pn = ctx.pn
        items, key = self.items, None
        ident = None if index is None else item_key(self.item_prefix, pn.id, index)
        if items is not None and ident is not None:
            key = ident
            done = items.get(key)
            if done is not None:
                if done.vars:
                    for name, value in done.vars.items():
                        ctx.set_var(name, value)
                return done.output  # type: ignore[no-any-return]
            before = dict(self.vars)
            started_at, t0 = time.time(), time.perf_counter()
        child = Runner(
            pn.bodies[body],
            self.run_id,
            flow_id=self.flow_id,
            inputs=self.inputs,
            variables=self.vars,
            env=self.env,
            services=self.services,
            journal=BodyJournal(self.journal, f"{pn.id}/"),
            parent=scope,
            sys=self.sys,
        )
        child.executions = self.executions
        child.checkpointer = self.checkpointer
        child.continues = self.continues if self.own_journal is None else self._reran(pn)
        if ident is not None:
            child.items, child.item_prefix = items, ident + "/"
            resumed = None if ctx.resume_value is MISSING else resumed_body(ctx.resume_value, ident)
            if resumed is not None:  # this body waited for a person: rebuild it, hand it the answer
                deltas, waiting, answer = resumed
                for delta in deltas:
                    child.apply_delta(delta)
                try:
                    await child.deliver_resume(waiting, answer)
                except ResumeError as exc:
                    raise NodeError(str(exc), retryable=False) from exc
        status = await child.drive()
        if status == _FAILED:
            failure = child.state.failure
            raise NodeError(failure[1] if failure else "body failed")
        if status == _WAITING:
            if ident is None:
                raise NodeError("a body waited for a person outside a loop iteration or map item")
            if key is not None:  # the waiting delta carries the variables the body changed so far
                for name, value in self.vars.items():
                    if before.get(name, MISSING) is not value:
                        ctx.set_var(name, value)
            raise waiting_body(ident, child.state)
        outputs = child.state.collect_outputs()
        if key is not None:
            assert items is not None
            # The variables the body changed: part of the item, and of the node's own delta.
            changed = {k: v for k, v in self.vars.items() if before.get(k, MISSING) is not v}
            for name, value in changed.items():
                ctx.set_var(name, value)
            delta = NodeDelta(
                key,
                ITEM_STATUS,
                outputs,
                vars=changed or None,
                attempt=ctx.attempt,
                started_at=started_at,
                duration_ms=(time.perf_counter() - t0) * 1000,
            )
            items.put(delta)
            await self.journal.record_item(delta)
        return outputs

    def child_of(self, pn: PlanNode) -> tuple[str, bool] | None:
        """Where the child run of subflow node `pn` is kept (plait.engine.children): its key in this
        run and whether the node continues an execution cut short; None when the child is not a run
        of its own (no checkpointer, or a body run outside a loop iteration or map item)."""
        if self.checkpointer is None:
            return None
        if self.own_journal is not None:  # the run itself: a restored node started again continues
            reran = self.reran
            if reran is None or pn.index not in reran:
                return pn.id, False
            reran.discard(pn.index)  # (a retry after its child failed starts a new one)
            return pn.id, True
        if not self.item_prefix:
            return None
        # An item of a loop/map node restored cut short: it had not been recorded, it continues.
        return self.item_prefix + pn.id, self.continues

    def _reran(self, pn: PlanNode) -> bool:
        reran = self.reran
        return reran is not None and pn.index in reran

    # ----------------------------------------------------------------- the end
    async def _finish(self, status: RunStatus) -> RunResult:
        state, journal = self.state, self.own_journal
        assert journal is not None
        outputs = state.collect_outputs() if status == _COMPLETED else {}
        failure = state.failure
        error = failure[1] if failure else None
        usage = state.total_usage()
        extra = self.policy.usage()
        if extra:
            for k, v in extra.items():
                usage[k] = usage.get(k, 0) + v
        duration_ms = (time.perf_counter() - self._started) * 1000
        pending = list(state.interrupts.values())
        if status == _FAILED and error:
            journal.emit(ev.RunError(error), failure[0] if failure else None)
        journal.emit(
            ev.RunFinished(
                status,
                outputs,
                usage,
                duration_ms=round(duration_ms, 3),
                error=error or None,
                interrupts=pending or None,
            )
        )
        await journal.finish(status, outputs, error)
        nodes = self.plan.nodes
        by_id = {nodes[i].id: nr for i, nr in sorted(state.node_runs.items())}
        result = RunResult(
            self.run_id, status, outputs, by_id, journal.events, error, pending, usage, duration_ms
        )
        result.decisions = self.policy.decisions()
        return result

    # ----------------------------------------------------------------- restore / resume / expire
    def restore(self, checkpoint: Checkpoint) -> None:
        """Rebuild the scheduler from a checkpoint by replaying its deltas (no node is executed).

        A node whose last delta is a start (`running`) was cut short: it is ready again, and
        `_start_task` runs it as the next attempt with a `NodeRerun` event."""
        journal = self.own_journal
        assert journal is not None
        journal.seq = checkpoint.highest_seq
        if checkpoint.run.status == RunStatus.RUNNING and journal.seq:
            # A crashed process may have streamed events it never saved (live SSE clients saw
            # their seqs): new events must not reuse those numbers, or a client re-attaching
            # with Last-Event-ID would skip them. Seqs stay increasing, not contiguous.
            journal.seq += SEQ_GAP_AFTER_CRASH
        items = self.items
        for delta in checkpoint.deltas:
            if delta.status == ITEM_STATUS:  # a finished item of a loop/map (plait.engine.items)
                if items is not None:
                    items.put(delta)
                if delta.vars:
                    self.vars.update(delta.vars)
                continue
            self.apply_delta(delta)
            if items and delta.status in _OWNER_DONE:
                items.drop(delta.node_id)
        self.policy.restore(self, checkpoint)

    def apply_delta(self, delta: NodeDelta) -> None:
        self.policy.on_delta(self, self.state.apply_delta(delta), delta)

    async def deliver_resume(self, node_id: str, data: Any) -> None:
        """Hand resume data to a waiting node, checkpointing it first."""
        state = self.state
        idx = self.plan.by_key.get(node_id.lower())
        if idx is None or idx not in state.interrupts:
            waiting = ", ".join(self.plan.nodes[i].id for i in state.interrupts) or "none"
            raise ResumeError(f"node {node_id!r} is not waiting for input (waiting: {waiting})")
        info = state.interrupts[idx]
        pn = self.plan.nodes[idx]
        expires = info.get("expires_at")
        if expires and time.time() > expires:
            raise ResumeError(f"the task of node {node_id!r} expired", expired=True)
        data = pn.node.accept_resume(data, info)
        delta = NodeDelta(pn.id, NodeStatus.RESUMED, resume=data)
        self.apply_delta(delta)
        state.paused = False
        await self.journal.save(delta)

    async def expire(self, node_id: str) -> RunResult:
        """Fail a waiting node whose task timed out: node error, run failed."""
        idx = self.plan.by_key[node_id.lower()]
        self.state.interrupts.pop(idx, None)
        expired = NodeOutcome(
            OutcomeKind.ERROR, error="the human task expired before anyone answered", fatal=True
        )
        if (to_save := self._commit(idx, expired)) is not None:
            await save_then_queue(self.state, self.journal, to_save)
        return await self._finish(_FAILED)


__all__ = ["RERUN_REASON", "SEQ_GAP_AFTER_CRASH", "Runner"]
