"""Run use cases: start (sync / stream / background), status, list, cancel, resume, retry,
human tasks, crash recovery. Runs execute in-process as asyncio tasks (PLAIT_EXECUTOR=inline),
persisted through the store's SqlCheckpointer; each executing run holds a lease in `runs`."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import socket
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from sqlalchemy import select, update

import plait
from plait.engine import events as ev
from plait.engine.api import Flow, validate_inputs
from plait.engine.checkpoint import port_value
from plait.engine.events import Event
from plait.engine.runner import ResumeError, RunResult
from plait.nodes.base import NodeError
from plait.service.bus import EventBus
from plait.service.errors import Conflict, Gone, Invalid, NotFound, ServiceError
from plait.service.flows import FlowService
from plait.service.settings import Settings
from plait.store import Store
from plait.store.db import json_dumps
from plait.store.models import HumanTask, Run

log = logging.getLogger("plait.service")

TERMINAL = frozenset({"completed", "failed", "cancelled"})
RUN_STATUSES = ("queued", "running", "waiting", "completed", "failed", "cancelled")


def _problems_of_message(message: str) -> list[dict[str, Any]]:
    """A human node's "invalid human input: comment: required; amount: ..." as problems (the shape
    every 422 of the API uses), each naming its field as `values.<name>` when it can."""
    prefix = "invalid human input: "
    parts = [message]
    if message.startswith(prefix):
        parts = [p.strip() for p in message[len(prefix) :].split(";")]
    problems: list[dict[str, Any]] = []
    for part in filter(None, parts):
        problem: dict[str, Any] = {"code": "invalid_input", "message": part}
        name = part.split(":", 1)[0].strip()
        if ":" in part and name.replace("_", "").replace("-", "").isalnum():
            problem["field"] = "action" if name == "action" else f"values.{name}"
        problems.append(problem)
    return problems


def task_view(task: HumanTask, *, now: float | None = None) -> dict[str, Any]:
    t = time.time() if now is None else now
    status = task.status
    if status == "pending" and task.expires_at is not None and task.expires_at <= t:
        status = "expired"
    return {
        "token": task.token,
        "run_id": task.run_id,
        "node_id": task.node_id,
        "kind": task.kind,
        "status": status,
        "message": task.message,
        "fields": task.fields,
        "prefill": task.prefill,
        "actions": task.actions,
        "assignees": task.assignees,
        "blocking": task.blocking,
        "expires_at": task.expires_at,
        "created_at": task.created_at,
        "resolved_at": task.resolved_at,
        "result": task.result,
    }


def run_summary(row: Run) -> dict[str, Any]:
    usage = row.usage or {}
    duration_ms = None
    if row.started_at is not None and row.finished_at is not None:
        duration_ms = round((row.finished_at - row.started_at) * 1000, 3)
    return {
        "id": row.id,
        "flow_id": row.flow_id,
        "version": row.version,
        "status": row.status,
        "outputs": row.outputs,
        "error": row.error,
        "usage": row.usage,
        "created_at": row.created_at,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "cancel_requested": row.cancel_requested,
        "duration_ms": duration_ms,
        "tokens": usage.get("total_tokens")
        or (usage.get("input_tokens", 0) + usage.get("output_tokens", 0))
        or None,
    }


def node_inputs(node_rows: list[Any]) -> dict[str, dict[str, Any]]:
    """Each finished node's input rebuilt from the sources its checkpoint recorded (`NodeDelta.input`)
    and their outputs: `input` as the node saw it (`ctx.input`: the value on port `in`, one entry per
    source when several deliver there), `inputs` per port, `input_sources`."""
    outputs: dict[str, Any] = {}
    sources: dict[str, list[Any]] = {}
    for nr in node_rows:
        if nr.status == "ok":
            outputs[nr.node_id] = nr.output
        if nr.input and nr.status in ("ok", "error", "waiting"):
            sources[nr.node_id] = nr.input
    out: dict[str, dict[str, Any]] = {}
    for node_id, srcs in sources.items():
        ports: dict[str, Any] = {}
        for src, src_port, target_port in srcs:
            value = port_value(outputs.get(src), src_port)
            ports.setdefault(target_port, {})[src] = value
        flat = {p: next(iter(v.values())) if len(v) == 1 else v for p, v in ports.items()}
        out[node_id] = {
            "input": flat.get("in"),
            "inputs": flat,
            "input_sources": [{"node": a, "port": b, "target_port": c} for a, b, c in srcs],
        }
    return out


class RunService:
    def __init__(
        self, store: Store, flows: FlowService, settings: Settings, bus: EventBus | None = None
    ) -> None:
        self.store = store
        self.flows = flows
        self.settings = settings
        self.bus = bus or EventBus()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._tasks: dict[str, asyncio.Task[RunResult | None]] = {}
        self._row_tasks: dict[str, list[asyncio.Task[Any]]] = defaultdict(list)
        self._locks: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._closing = False
        self._claimed: set[str] = set()  # runs being created here (not yet executing)
        self._views: dict[str, dict[str, Any]] = {}  # see _keep_view

    # ------------------------------------------------------------------ lifecycle
    async def start_background(self) -> None:
        """Crash recovery now, then the lease keeper and the sweeper (expiry + recovery)."""
        await self.recover()
        self._loops.append(asyncio.create_task(self._lease_keeper(), name="plait-lease-keeper"))
        self._loops.append(asyncio.create_task(self._sweeper(), name="plait-sweeper"))

    async def close(self) -> None:
        """Stop: executing runs are interrupted (not cancelled) and their leases released, so
        the next start continues them from their last checkpoint."""
        self._closing = True
        for t in self._loops:
            t.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        tasks = list(self._tasks.values()) + list(self._background)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def active(self) -> set[str]:
        return set(self._tasks)

    def _lock(self, run_id: str) -> asyncio.Lock:
        lock = self._locks.get(run_id)
        if lock is None:
            lock = self._locks[run_id] = asyncio.Lock()
        return lock

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # ------------------------------------------------------------------ execution
    def _sink(self, event: Event) -> None:
        self.bus.publish(event)
        if event.type == ev.WAITING and event.data and isinstance(event.data.get("task"), dict):
            task = asyncio.get_running_loop().create_task(
                self._create_task_row(event.run_id, event.data["task"])
            )
            self._row_tasks[event.run_id].append(task)

    async def _create_task_row(self, run_id: str, info: dict[str, Any]) -> None:
        node_id = str(info.get("node_id") or info.get("id"))
        if await self.store.human_tasks.pending_for_node(run_id, node_id) is None:
            await self.store.human_tasks.create_from_interrupt(run_id, info)

    async def _flush_rows(self, run_id: str) -> None:
        """Wait until the run's task rows are written. They stay listed in `_row_tasks` until
        then, so a concurrent `get` waits for them too."""
        pending = self._row_tasks.get(run_id)
        while pending and not all(t.done() for t in pending):
            await asyncio.gather(*list(pending), return_exceptions=True)
        self._row_tasks.pop(run_id, None)

    async def _env(self) -> dict[str, Any]:
        try:
            return await self.store.variables.values()
        except Exception:  # noqa: BLE001 - an undecryptable variable must not stop every run
            log.exception("cannot read the global variables")
            return {}

    def _launch(
        self, run_id: str, factory: Callable[[], Awaitable[RunResult]], *, leased: bool = False
    ) -> asyncio.Task[RunResult | None]:
        """Execute `factory()` as the run's task. `leased`: this process has just taken the run's
        lease (in the statement that created the row), so it is not taken again."""
        if run_id in self._tasks:
            raise Conflict(f"run {run_id!r} is already executing")
        task = asyncio.get_running_loop().create_task(
            self._guarded(run_id, factory, leased), name=f"plait-run-{run_id}"
        )
        self._tasks[run_id] = task

        def _done(t: asyncio.Task[Any]) -> None:
            if self._tasks.get(run_id) is t:
                self._tasks.pop(run_id, None)

        task.add_done_callback(_done)
        return task

    async def _guarded(
        self, run_id: str, factory: Callable[[], Awaitable[RunResult]], leased: bool = False
    ) -> RunResult | None:
        runs = self.store.runs
        if not leased and not await runs.acquire_lease(run_id, self.owner, self.settings.lease_ttl_s):
            log.warning("run %s is owned by another process; not executing it here", run_id)
            return None
        finished = False  # the checkpointer's finish of a terminal run released the lease
        try:
            # A run this process just created and leased: a cancel request reaches it through
            # `cancel` (it is in `_tasks` already) or the lease keeper, so skip the read.
            if not leased and await runs.is_cancel_requested(run_id):
                row = await runs.get(run_id)
                if row is not None and row.status not in TERMINAL:
                    await self._finish_idle(run_id, "cancelled", None)
                return None
            result = await factory()
            finished = result.status in TERMINAL
            await self._flush_rows(run_id)
            if result.status == "cancelled":
                await self.store.human_tasks.cancel_for_run(run_id)
            return result
        except asyncio.CancelledError:
            raise
        except ResumeError as exc:  # a stale answer: the run stays as it is
            log.warning("run %s: %s", run_id, exc)
            return None
        except ServiceError as exc:
            await self._finish_idle(run_id, "failed", exc.message)
            return None
        except Exception as exc:  # noqa: BLE001 - the run fails, the server stays up
            log.exception("run %s crashed", run_id)
            try:
                await self._finish_idle(run_id, "failed", f"{type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001
                log.exception("cannot record the failure of run %s", run_id)
            return None
        finally:
            self._row_tasks.pop(run_id, None)
            self.store.checkpointer.forget(run_id)
            self.bus.release(run_id)
            if not finished:
                try:
                    await asyncio.shield(self.store.checkpointer.release_lease(run_id, self.owner))
                except (Exception, asyncio.CancelledError):  # noqa: BLE001
                    pass

    async def _finish_idle(self, run_id: str, status: str, error: str | None) -> None:
        """End a run that is not executing (waiting, queued, orphaned): status, tasks, and a
        `run_finished` event so that event streams end."""
        await self.store.runs.set_status(
            run_id, status, error=error, expected=("queued", "running", "waiting")
        )
        await self.store.human_tasks.cancel_for_run(run_id)
        seq = await self.store.events.last_seq(run_id) + 1
        data: dict[str, Any] = {"status": status, "outputs": {}, "usage": {}}
        if error:
            data["error"] = error
        event = Event(seq, ev.RUN_FINISHED, run_id, time.time(), None, data)
        try:
            await self.store.events.append(run_id, [event])
        except Exception:  # noqa: BLE001 - a concurrent writer took the seq; the status is what counts
            log.warning("could not append run_finished to run %s", run_id)
            return
        self.bus.publish(event)
        self.bus.release(run_id)

    # ------------------------------------------------------------------ start
    async def start(
        self, flow_id: str, inputs: dict[str, Any] | None, *, version: str | int | None = None
    ) -> tuple[str, asyncio.Task[RunResult | None]]:
        """Validate, create the run row (queued, leased by this process) and start executing it."""
        if inputs is not None and not isinstance(inputs, dict):
            raise Invalid("inputs must be a JSON object")
        flow, number, draft = await self.flows.resolve_for_run(flow_id, version)
        data = validate_inputs(flow, inputs)
        run_id = uuid.uuid4().hex
        env = await self._env()
        self._claimed.add(run_id)
        try:
            # One write: the row is created queued and leased to this process.
            await self.store.checkpointer.create_run(
                run_id,
                flow_id,
                inputs=data,
                version=number,
                document=draft,
                status="queued",
                variables=flow.doc.variables,
                lease_owner=self.owner,
                lease_until=time.time() + self.settings.lease_ttl_s,
            )
            task = self._launch(
                run_id,
                leased=True,
                factory=lambda: plait.run(
                    flow,
                    data,
                    checkpointer=self.store.checkpointer,
                    on_event=self._sink,
                    run_id=run_id,
                    env=env,
                    flows=self.flows.load_subflow,
                ),
            )
        finally:
            self._claimed.discard(run_id)
        return run_id, task

    async def run_sync(
        self, flow_id: str, inputs: dict[str, Any] | None, *, version: str | int | None = None
    ) -> dict[str, Any]:
        run_id, task = await self.start(flow_id, inputs, version=version)
        self._keep_view(run_id, await asyncio.shield(task))
        return await self.result_view(run_id)

    def _keep_view(self, run_id: str, result: RunResult | None) -> None:
        """Remember the view of a run that just completed here, for the `result_view` that
        follows `wait` (saves reading back the row `finish` wrote). Same values as the row:
        outputs through the store's JSON encoding, usage and error as `finish` stored them."""
        if not isinstance(result, RunResult) or result.status != "completed":
            return
        self._views[run_id] = {
            "id": run_id,
            "status": "completed",
            "outputs": json.loads(json_dumps(result.outputs)) if result.outputs else {},
            "usage": json.loads(json_dumps(result.usage)) if result.usage else {},
            "error": None,
        }
        while len(self._views) > 256:
            self._views.pop(next(iter(self._views)))

    async def result_view(self, run_id: str) -> dict[str, Any]:
        view = self._views.pop(run_id, None)
        if view is not None:
            return view
        row = await self._row(run_id)
        out: dict[str, Any] = {
            "id": row.id,
            "status": row.status,
            "outputs": row.outputs or {},
            "usage": row.usage or {},
            "error": row.error,
        }
        if row.status == "waiting":
            out["tasks"] = [
                task_view(t) for t in await self.store.human_tasks.list(run_id=run_id, status="pending")
            ]
        return out

    async def wait(self, run_id: str, timeout: float | None = None) -> None:
        task = self._tasks.get(run_id)
        if task is not None:
            self._keep_view(run_id, await asyncio.wait_for(asyncio.shield(task), timeout))

    # ------------------------------------------------------------------ reading
    async def _row(self, run_id: str) -> Run:
        row = await self.store.runs.get(run_id)
        if row is None:
            raise NotFound(f"no run {run_id!r}")
        return row

    async def list(
        self, *, flow_id: str | None = None, status: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        if status is not None and status not in RUN_STATUSES:
            raise Invalid(f"status must be one of {', '.join(RUN_STATUSES)}")
        rows = await self.store.runs.list(flow_id=flow_id, status=status, limit=limit, offset=offset)
        return [run_summary(r) for r in rows]

    async def get(self, run_id: str) -> dict[str, Any]:
        """Status and live context: inputs, vars, per-node status/output/error/timings, tasks."""
        row = await self._row(run_id)
        node_rows = await self.store.runs.node_runs(run_id)
        events = await self.events_after(run_id, 0)
        nodes: dict[str, dict[str, Any]] = {}
        for nr in node_rows:
            n = nodes.setdefault(nr.node_id, {"id": nr.node_id})
            if nr.status == "resumed":
                n["status"] = "pending"
                continue
            n["status"] = nr.status
            n["attempts"] = nr.attempt
            for key in ("output", "error", "started_at", "duration_ms", "usage", "ports"):
                value = getattr(nr, key)
                if value is not None:
                    n[key] = value
            if nr.reused:
                n["reused"] = True
        for e in events:
            if e.node_id is None:
                continue
            data = e.data or {}
            if e.type == ev.NODE_STARTED:
                n = nodes.setdefault(e.node_id, {"id": e.node_id})
                n.update(status="running", attempts=data.get("attempt", 1), started_at=e.ts)
                n.pop("error", None)
            elif e.type == ev.NODE_SKIPPED:
                nodes.setdefault(e.node_id, {"id": e.node_id})["status"] = "skipped"
            elif e.type == ev.NODE_FINISHED:
                n = nodes.setdefault(e.node_id, {"id": e.node_id})
                n["status"] = "ok" if data.get("ok") else "error"
                for key in ("output", "error", "duration_ms", "usage"):
                    if key in data:
                        n[key] = data[key]
                if "branch" in data:
                    n["ports"] = data["branch"]
            elif e.type == ev.WAITING:
                nodes.setdefault(e.node_id, {"id": e.node_id})["status"] = "waiting"
        for node_id, io in node_inputs(node_rows).items():
            if node_id in nodes:
                nodes[node_id].update(io)
        if row.status in TERMINAL:
            for n in nodes.values():
                if n.get("status") == "running":
                    n["status"] = "cancelled" if row.status == "cancelled" else "error"
        # A `waiting` event reaches subscribers before its task row is written (`_sink`): a reader
        # reacting to it must find the task, so wait for the rows being written.
        creating = self._row_tasks.get(run_id)
        while creating and not all(t.done() for t in creating):
            await asyncio.gather(*list(creating), return_exceptions=True)
        tasks = await self.store.human_tasks.list(run_id=run_id, status="pending")
        context = row.context or {}
        return {
            **run_summary(row),
            "inputs": row.inputs,
            "vars": context.get("vars", row.variables) if isinstance(context, dict) else row.variables,
            "nodes": nodes,
            "tasks": [task_view(t) for t in tasks],
            "last_seq": max(row.last_seq, events[-1].seq if events else 0),
            "executing_here": run_id in self._tasks,
        }

    async def events_after(self, run_id: str, after: int) -> list[Event]:
        stored = await self.store.events.list(run_id, after_seq=after)
        last = stored[-1].seq if stored else after
        live = [e for e in self.bus.history(run_id) if e.seq > last]
        return stored + live

    async def decisions(self, run_id: str) -> list[dict[str, Any]]:
        await self._row(run_id)
        return [
            {"step": d.step, "node_id": d.node_id, "data": d.data, "created_at": d.created_at}
            for d in await self.store.decisions.list(run_id)
        ]

    async def stream(
        self, run_id: str, after: int = 0, *, until: str = "terminal", heartbeat_s: float | None = None
    ) -> AsyncIterator[Event | None]:
        """The run's events with seq > `after`: stored ones, then live. Yields None as a heartbeat.
        Ends after `run_finished` (with until="terminal": only a completed/failed/cancelled one)."""
        await self._row(run_id)
        hb = heartbeat_s or self.settings.sse_heartbeat_s
        q = self.bus.subscribe(run_id)

        def final(e: Event) -> bool:
            if e.type != ev.RUN_FINISHED:
                return False
            return until == "finished" or (e.data or {}).get("status") in TERMINAL

        try:
            last = after
            for e in await self.events_after(run_id, last):
                if e.seq <= last:
                    continue
                yield e
                last = e.seq
                if final(e):
                    return
            while True:
                try:
                    e = await asyncio.wait_for(q.get(), hb)
                except TimeoutError:
                    yield None
                    fresh = [x for x in await self.store.events.list(run_id, after_seq=last)]
                    for x in fresh:
                        yield x
                        last = x.seq
                        if final(x):
                            return
                    row = await self.store.runs.get(run_id)
                    if row is None or (row.status in TERMINAL and run_id not in self._tasks and not fresh):
                        return
                    continue
                if e.seq <= last:
                    continue
                yield e
                last = e.seq
                if final(e):
                    return
        finally:
            self.bus.unsubscribe(run_id, q)

    # ------------------------------------------------------------------ control
    async def cancel(self, run_id: str) -> dict[str, Any]:
        row = await self._row(run_id)
        if row.status in TERMINAL:
            raise Conflict(f"run {run_id!r} already {row.status}")
        await self.store.runs.request_cancel(run_id)
        task = self._tasks.get(run_id)
        if task is not None:
            deadline = time.monotonic() + 2.0
            while not task.done() and time.monotonic() < deadline:
                if plait.cancel(run_id):
                    break
                await asyncio.sleep(0.01)
            try:
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            except TimeoutError:
                pass
        else:
            async with self._lock(run_id):
                row = await self._row(run_id)
                lease_dead = row.lease_owner is None or (row.lease_until or 0) < time.time()
                if row.status in ("waiting", "queued") or (row.status == "running" and lease_dead):
                    await self._finish_idle(run_id, "cancelled", None)
                # else: another process owns it; its lease keeper sees cancel_requested.
        return run_summary(await self._row(run_id))

    def _validate_resume(self, flow: Flow, task: HumanTask, data: Any) -> Any:
        """The node's own check of an answer, against the task as it was shown (an edge-LLM decider
        may have added fields); the engine checks it again against the interrupt when resuming."""
        idx = flow.plan.by_key.get(task.node_id.lower())
        if idx is None:
            raise Conflict(f"node {task.node_id!r} is not waiting for input")
        shown = {
            "kind": task.kind,
            "payload": {"message": task.message, "fields": task.fields, "actions": task.actions},
        }
        try:
            return flow.plan.nodes[idx].node.accept_resume(data, shown)
        except NodeError as exc:
            details: dict[str, Any] = {"problems": _problems_of_message(exc.message)}
            if exc.hint:
                details["hint"] = exc.hint
            raise Invalid(exc.message, details=details, code="invalid_input") from None

    async def resume(self, run_id: str, node_id: str | None, data: Any) -> dict[str, Any]:
        """Answer a waiting node (the interrupt id is the node id); returns the task answered."""
        async with self._lock(run_id):
            active = self._tasks.get(run_id)
            if active is not None:  # a non-blocking interrupt: wait until the run stops executing
                await asyncio.shield(active)
            await self._flush_rows(run_id)
            row = await self._row(run_id)
            if row.status != "waiting":
                raise Conflict(f"run {run_id!r} is {row.status}, not waiting for input")
            pending = await self.store.human_tasks.list(run_id=run_id, status="pending")
            if node_id is None:
                if len(pending) != 1:
                    names = ", ".join(t.node_id for t in pending) or "none"
                    raise Invalid(f"say which node to resume with node_id (waiting: {names})")
                task = pending[0]
            else:
                task = next((t for t in pending if t.node_id.lower() == node_id.lower()), None)
                if task is None:
                    names = ", ".join(t.node_id for t in pending) or "none"
                    raise Conflict(f"node {node_id!r} is not waiting for input (waiting: {names})")
            return await self._answer(row, task, data)

    async def _answer(self, row: Run, task: HumanTask, data: Any) -> dict[str, Any]:
        """Validate, mark the task submitted (at most once), resume the run in the background.
        Call with the run's lock held."""
        flow = await self.flows.document_for_run(row.flow_id, row.version, row.document)
        if task.expires_at is not None and task.expires_at <= time.time():
            await self._expire_due()
            raise Gone(f"the task of node {task.node_id!r} expired")
        clean = self._validate_resume(flow, task, data)
        done = await self.store.human_tasks.submit(task.token, clean)
        if done is None:
            again = await self.store.human_tasks.get(task.token)
            status = again.status if again is not None else "unknown"
            if status == "expired":
                raise Gone(f"the task of node {task.node_id!r} expired")
            raise Conflict(f"the task was already {status}")
        env = await self._env()
        self._launch(
            row.id,
            lambda: plait.resume(
                flow,
                row.id,
                clean,
                node_id=task.node_id,
                checkpointer=self.store.checkpointer,
                on_event=self._sink,
                env=env,
                flows=self.flows.load_subflow,
            ),
        )
        return task_view(done)

    async def retry(self, run_id: str, from_node: str) -> str:
        row = await self._row(run_id)
        if row.status not in TERMINAL and row.status != "waiting":
            raise Conflict(f"run {run_id!r} is {row.status}; retry it when it has stopped")
        flow = await self.flows.document_for_run(row.flow_id, row.version, row.document)
        if not isinstance(from_node, str) or from_node.lower() not in flow.plan.by_key:
            raise Invalid(f"flow {row.flow_id!r} has no node {from_node!r}")
        new_id = uuid.uuid4().hex
        self._claimed.add(new_id)
        try:
            await self.store.checkpointer.create_run(
                new_id,
                row.flow_id,
                inputs=row.inputs,
                version=row.version,
                document=row.document,
                status="queued",
                variables=row.variables,
                lease_owner=self.owner,
                lease_until=time.time() + self.settings.lease_ttl_s,
            )
            env = await self._env()
        except BaseException:
            self._claimed.discard(new_id)
            raise

        async def go() -> RunResult:
            try:
                return await plait.retry(
                    flow,
                    run_id,
                    from_node,
                    checkpointer=self.store.checkpointer,
                    new_run_id=new_id,
                    on_event=self._sink,
                    env=env,
                    flows=self.flows.load_subflow,
                )
            finally:
                self.store.checkpointer.forget(run_id)

        try:
            self._launch(new_id, go, leased=True)
        finally:
            self._claimed.discard(new_id)
        return new_id

    # ------------------------------------------------------------------ human tasks
    async def get_task(self, token: str) -> dict[str, Any]:
        task = await self.store.human_tasks.get(token)
        if task is None:
            raise NotFound("no such task")
        return task_view(task)

    async def submit_task(self, token: str, data: Any) -> dict[str, Any]:
        task = await self.store.human_tasks.get(token)
        if task is None:
            raise NotFound("no such task")
        async with self._lock(task.run_id):
            active = self._tasks.get(task.run_id)
            if active is not None:
                await asyncio.shield(active)
            task = await self.store.human_tasks.get(token)
            assert task is not None
            if task.status == "expired" or (
                task.status == "pending" and task.expires_at is not None and task.expires_at <= time.time()
            ):
                if task.status == "pending":
                    await self._expire_due()
                raise Gone("this task expired")
            if task.status != "pending":
                raise Conflict(f"this task was already {task.status}")
            row = await self._row(task.run_id)
            if row.status != "waiting":
                raise Conflict(f"the run is {row.status}, not waiting for input")
            return await self._answer(row, task, data)

    async def _expire_due(self) -> int:
        expired = await self.store.human_tasks.expire_due()
        for task in expired:
            self._spawn(self._fail_expired(task))
        return len(expired)

    async def _fail_expired(self, task: HumanTask) -> None:
        async with self._lock(task.run_id):
            active = self._tasks.get(task.run_id)
            if active is not None:
                await asyncio.shield(active)
            row = await self.store.runs.get(task.run_id)
            if row is None or row.status != "waiting":
                return
            try:
                flow = await self.flows.document_for_run(row.flow_id, row.version, row.document)
            except ServiceError as exc:
                await self._finish_idle(row.id, "failed", f"expired task; {exc.message}")
                return
            env = await self._env()
            self._launch(
                row.id,
                lambda: plait.resume(
                    flow,
                    row.id,
                    None,
                    node_id=task.node_id,
                    checkpointer=self.store.checkpointer,
                    on_event=self._sink,
                    env=env,
                    flows=self.flows.load_subflow,
                ),
            )

    # ------------------------------------------------------------------ recovery and leases
    async def recover(self) -> list[str]:
        """Take over runs left `running` (or `queued`) whose lease expired, and continue them from
        their last checkpoint. Waiting runs stay waiting."""
        taken: list[str] = []
        rows = await self.store.runs.find_expired_running(statuses=("running", "queued"), limit=500)
        fresh = time.time() - 5.0
        for row in rows:
            if self._closing or row.id in self._tasks or row.id in self._claimed:
                continue
            if row.status == "queued" and row.created_at > fresh and row.lease_owner is None:
                continue  # another process may be between creating the row and leasing it
            if not await self.store.runs.acquire_lease(row.id, self.owner, self.settings.lease_ttl_s):
                continue
            try:
                await self._take_over(row)
                taken.append(row.id)
            except Exception:  # noqa: BLE001
                log.exception("cannot recover run %s", row.id)
                await self.store.runs.release_lease(row.id, self.owner)
        if taken:
            log.info("recovered %d run(s): %s", len(taken), ", ".join(taken))
        return taken

    async def _take_over(self, row: Run) -> None:
        if row.cancel_requested:
            await self._finish_idle(row.id, "cancelled", None)
            await self.store.runs.release_lease(row.id, self.owner)
            return
        try:
            flow = await self.flows.document_for_run(row.flow_id, row.version, row.document)
        except ServiceError as exc:
            await self._finish_idle(row.id, "failed", f"cannot recover the run: {exc.message}")
            await self.store.runs.release_lease(row.id, self.owner)
            return
        env = await self._env()
        cp = self.store.checkpointer
        if row.status == "queued":
            self._launch(
                row.id,
                lambda: plait.run(
                    flow,
                    row.inputs,
                    checkpointer=cp,
                    on_event=self._sink,
                    run_id=row.id,
                    env=env,
                    flows=self.flows.load_subflow,
                ),
            )
            return
        # Without data, resume continues the run; nodes waiting for people keep waiting.
        self._launch(
            row.id,
            lambda: plait.resume(
                flow, row.id, checkpointer=cp, on_event=self._sink, env=env, flows=self.flows.load_subflow
            ),
        )

    async def _lease_keeper(self) -> None:
        """Renew the leases of the runs executing here (one UPDATE for all of them) and pass on
        cancel requests made through the database."""
        interval = max(self.settings.lease_ttl_s / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            ids = list(self._tasks)
            if not ids:
                continue
            try:
                async with self.store.sessionmaker.begin() as session:
                    await session.execute(
                        update(Run)
                        .where(Run.id.in_(ids), Run.lease_owner == self.owner)
                        .values(lease_until=time.time() + self.settings.lease_ttl_s),
                        execution_options={"synchronize_session": False},
                    )
                    flagged = (
                        (
                            await session.execute(
                                select(Run.id).where(Run.id.in_(ids), Run.cancel_requested.is_(True))
                            )
                        )
                        .scalars()
                        .all()
                    )
                for run_id in flagged:
                    plait.cancel(run_id)
            except Exception:  # noqa: BLE001
                log.exception("lease renewal failed")

    async def _sweeper(self) -> None:
        interval = max(self.settings.sweep_interval_s, 0.05)
        recover_every = max(self.settings.lease_ttl_s / 2, interval)
        next_recover = time.monotonic() + recover_every
        while True:
            await asyncio.sleep(interval)
            try:
                await self._expire_due()
                if time.monotonic() >= next_recover:
                    next_recover = time.monotonic() + recover_every
                    await self.recover()
            except Exception:  # noqa: BLE001
                log.exception("sweeper failed")
