"""What the API shows of runs and human tasks: summaries, the live detail of one run (per-node
status, outputs, inputs, tasks), the answer of a synchronous run, listings and decisions.

The detail of a run is rebuilt from its stored node transitions and its event log (stored, then
live from the bus), read through the typed event payloads, and names the sub-flow child runs its
subflow nodes started (plait.engine.children): each is a run of its own, with its own detail.

Every view is masked with the secrets its run's owner reads now (`RunSecrets.mask_for`): runs mask
what they store already (plait.engine.journal), and this also covers runs stored before a value
became secret, or before plait masked secrets at all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from plait import RunResult
from plait.engine import events as ev
from plait.engine.checkpoint import port_value
from plait.engine.events import Event
from plait.engine.items import ITEM_STATUS
from plait.engine.status import TERMINAL_RUN_STATUSES, NodeStatus, RunStatus, TaskStatus
from plait.net.redact import SecretMask
from plait.service.bus import EventBus
from plait.service.errors import Invalid, NotFound
from plait.service.runs.launcher import RunLauncher
from plait.store import Store
from plait.store.db import json_dumps
from plait.store.models import HumanTask, NodeRunRow, Run

RUN_STATUSES: tuple[str, ...] = tuple(s.value for s in RunStatus)
PENDING_TASK = TaskStatus.PENDING
CHILDREN_SHOWN = 200  # sub-flow child runs in a run's detail (all of them: `?parent_run_id=`)


def task_view(task: HumanTask, *, now: float | None = None) -> dict[str, Any]:
    t = time.time() if now is None else now
    status = task.status
    if status == PENDING_TASK and task.expires_at is not None and task.expires_at <= t:
        status = TaskStatus.EXPIRED
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
        "trigger_id": row.trigger_id,
        "parent_run_id": row.parent_run_id,
        "duration_ms": duration_ms,
        "tokens": usage.get("total_tokens")
        or (usage.get("input_tokens", 0) + usage.get("output_tokens", 0))
        or None,
    }


def node_inputs(node_rows: Sequence[NodeRunRow]) -> dict[str, dict[str, Any]]:
    """Each finished node's input rebuilt from the sources its checkpoint recorded (`NodeDelta.input`)
    and their outputs: `input` as the node saw it (`ctx.input`: the value on port `in`, one entry per
    source when several deliver there), `inputs` per port, `input_sources`."""
    outputs: dict[str, Any] = {}
    sources: dict[str, list[Any]] = {}
    for nr in node_rows:
        if nr.status == NodeStatus.OK:
            outputs[nr.node_id] = nr.output
        if nr.input and nr.status in (NodeStatus.OK, NodeStatus.ERROR, NodeStatus.WAITING):
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


def node_states(
    node_rows: Sequence[NodeRunRow], events: Sequence[Event], run_status: str
) -> dict[str, dict[str, Any]]:
    """Per node: status, attempts, output or error, timings, usage, fired ports, inputs. The
    stored transitions first, then what the events say happened since."""
    nodes: dict[str, dict[str, Any]] = {}
    for nr in node_rows:
        if nr.status == ITEM_STATUS:  # a loop iteration's or map item's checkpoint, not a node
            continue
        n = nodes.setdefault(nr.node_id, {"id": nr.node_id})
        if nr.status == NodeStatus.RESUMED:
            n["status"] = NodeStatus.PENDING.value
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
        data, kind = e.data, e.type  # the type first: isinstance on a payload (an ABC) costs more
        if kind == ev.NODE_STARTED and isinstance(data, ev.NodeStarted):
            n = nodes.setdefault(e.node_id, {"id": e.node_id})
            n.update(status=NodeStatus.RUNNING.value, attempts=data.attempt, started_at=e.ts)
            n.pop("error", None)
        elif kind == ev.NODE_SKIPPED:  # a skip without a reason is stored without data
            nodes.setdefault(e.node_id, {"id": e.node_id})["status"] = NodeStatus.SKIPPED.value
        elif kind == ev.NODE_FINISHED and isinstance(data, ev.NodeFinished):
            n = nodes.setdefault(e.node_id, {"id": e.node_id})
            n["status"] = (NodeStatus.OK if data.ok else NodeStatus.ERROR).value
            # The fields the event carries (see `NodeFinished.wire`).
            if data.ok:
                n["output"] = data.output
            elif data.error is not None:
                n["error"] = data.error
            n["duration_ms"] = data.duration_ms
            if data.usage:
                n["usage"] = data.usage
            if data.model:
                n["model"] = data.model  # which provider and model answered
            if data.branch is not None:
                n["ports"] = data.branch
        elif kind == ev.WAITING and isinstance(data, ev.Waiting):
            nodes.setdefault(e.node_id, {"id": e.node_id})["status"] = NodeStatus.WAITING.value
    for node_id, io in node_inputs(node_rows).items():
        if node_id in nodes:
            nodes[node_id].update(io)
    if run_status in TERMINAL_RUN_STATUSES:
        ended = NodeStatus.CANCELLED if run_status == RunStatus.CANCELLED else NodeStatus.ERROR
        for n in nodes.values():
            if n.get("status") == NodeStatus.RUNNING:
                n["status"] = ended.value
    return nodes


class RunViews:
    """Reads of runs for the API: listings, the detail of one run, the answer of a sync run."""

    MAX_KEPT = 256

    def __init__(self, store: Store, bus: EventBus, launcher: RunLauncher) -> None:
        self.store = store
        self.bus = bus
        self.launcher = launcher
        self._kept: dict[str, dict[str, Any]] = {}  # see `keep`

    async def require(self, run_id: str) -> Run:
        """The run's row; NotFound when there is none."""
        row = await self.store.runs.get(run_id)
        if row is None:
            raise NotFound(f"no run {run_id!r}")
        return row

    def keep(self, run_id: str, result: RunResult | None) -> None:
        """Remember the view of a run that just completed here, for the `result_view` that
        follows `wait` (saves reading back the row `finish` wrote). Same values as the row:
        outputs through the store's JSON encoding, usage and error as `finish` stored them."""
        if not isinstance(result, RunResult) or result.status != RunStatus.COMPLETED:
            return
        self._kept[run_id] = {
            "id": run_id,
            "status": RunStatus.COMPLETED.value,
            "outputs": json.loads(json_dumps(result.outputs)) if result.outputs else {},
            "usage": json.loads(json_dumps(result.usage)) if result.usage else {},
            "error": None,
        }
        while len(self._kept) > self.MAX_KEPT:
            self._kept.pop(next(iter(self._kept)))

    async def result_view(self, run_id: str) -> dict[str, Any]:
        """The answer of a synchronous run: status, outputs, usage, error, and its open tasks."""
        view = self._kept.pop(run_id, None)
        if view is not None:
            return view  # masked by the launcher (`masked_result`)
        row = await self.require(run_id)
        out: dict[str, Any] = {
            "id": row.id,
            "status": row.status,
            "outputs": row.outputs or {},
            "usage": row.usage or {},
            "error": row.error,
        }
        if row.status == RunStatus.WAITING:
            pending = await self.store.human_tasks.list_tasks(run_id=run_id, status=PENDING_TASK)
            out["tasks"] = [task_view(t) for t in pending]
        masked: dict[str, Any] = (await self.mask_of(row)).value(out)
        return masked

    async def mask_of(self, row: Run) -> SecretMask:
        """The mask of the secrets the run's owner reads (see the module docstring)."""
        return await self.launcher.secrets.mask_for(row.owner_id)

    async def list_runs(
        self,
        *,
        flow_id: str | None = None,
        status: str | None = None,
        visible_to: str | None = None,
        parent_run_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Top-level runs; with `parent_run_id`, that run's sub-flow children (the caller checked
        that it may see the parent: its children are visible with it, so `visible_to` is ignored)."""
        if status is not None and status not in RUN_STATUSES:
            raise Invalid(f"status must be one of {', '.join(RUN_STATUSES)}")
        rows = await self.store.runs.list_runs(
            flow_id=flow_id,
            status=status,
            visible_to=None if parent_run_id is not None else visible_to,
            parent_run_id=parent_run_id,
            top_level=parent_run_id is None,
            limit=limit,
            offset=offset,
        )
        masks = {owner: await self.launcher.secrets.mask_for(owner) for owner in {r.owner_id for r in rows}}
        return [masks[r.owner_id].value(run_summary(r)) for r in rows]

    async def get(self, run_id: str) -> dict[str, Any]:
        """Status and live context: inputs, vars, per-node status/output/error/timings, tasks."""
        row = await self.require(run_id)
        node_rows = await self.store.runs.node_runs(run_id)
        events = await self.events_after(run_id, 0)
        nodes = node_states(node_rows, events, row.status)
        # A `waiting` event reaches subscribers before its task row is written: a reader
        # reacting to it must find the task, so wait for the rows being written.
        await self.launcher.rows_written(run_id)
        tasks = await self.store.human_tasks.list_tasks(run_id=run_id, status=PENDING_TASK)
        children = await self.store.runs.list_runs(parent_run_id=run_id, limit=CHILDREN_SHOWN)
        context = row.context or {}
        view = {
            **run_summary(row),
            "inputs": row.inputs,
            "vars": context.get("vars", row.variables) if isinstance(context, dict) else row.variables,
            "nodes": nodes,
            "tasks": [task_view(t) for t in tasks],
            "last_seq": max(row.last_seq, events[-1].seq if events else 0),
            "executing_here": self.launcher.executing(run_id) is not None,
            "children": [run_summary(c) for c in children],  # same owner: the same mask
        }
        masked: dict[str, Any] = (await self.mask_of(row)).value(view)
        return masked

    async def events_after(self, run_id: str, after: int) -> list[Event]:
        """The run's events with seq > `after`: stored, then the live ones not stored yet."""
        stored = await self.store.events.list_events(run_id, after_seq=after)
        last = stored[-1].seq if stored else after
        live = [e for e in self.bus.history(run_id) if e.seq > last]
        return stored + live

    async def decisions(self, run_id: str) -> list[dict[str, Any]]:
        mask = await self.mask_of(await self.require(run_id))
        return [
            {"step": d.step, "node_id": d.node_id, "data": mask.value(d.data), "created_at": d.created_at}
            for d in await self.store.decisions.list_decisions(run_id)
        ]


__all__ = ["RUN_STATUSES", "RunViews", "node_inputs", "node_states", "run_summary", "task_view"]
