"""Commit: turn a node's outcome into run state, events and a checkpoint delta.

The order is the engine's durability rule: the node's state and events first, then its outputs
are propagated along the fired edges (dead paths pruned), then the delta and the events since the
last save go to the checkpointer, and only after that do the nodes that became ready join the
ready queue (`save_then_queue`). So no dependant starts before the node it depends on is
checkpointed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import plait.engine.events as ev
from plait.engine.checkpoint import NodeDelta
from plait.engine.frozen import new_instance, slot_setters
from plait.engine.invoke import NodeOutcome, OutcomeKind
from plait.engine.journal import EventLog
from plait.engine.state import RunState
from plait.engine.status import NodeStatus

_OK, _ERROR, _WAITING = NodeStatus.OK, NodeStatus.ERROR, NodeStatus.WAITING
_CANCELLED = NodeStatus.CANCELLED
_KIND_OK, _KIND_INTERRUPT, _KIND_CANCELLED = OutcomeKind.OK, OutcomeKind.INTERRUPT, OutcomeKind.CANCELLED

_FINISHED_SETTERS = slot_setters(
    ev.NodeFinished, ("ok", "output", "error", "duration_ms", "attempt", "branch", "usage", "model")
)


def node_finished(
    output: Any,
    duration_ms: float,
    attempt: int,
    branch: list[str] | None,
    usage: dict[str, int] | None,
    model: dict[str, str] | None = None,
) -> ev.NodeFinished:
    """`NodeFinished(True, output, ...)` for a node that succeeded, built without the frozen
    dataclass __init__ (see plait.engine.frozen): one per node, on the hot path."""
    data = new_instance(ev.NodeFinished)
    s_ok, s_output, s_error, s_duration, s_attempt, s_branch, s_usage, s_model = _FINISHED_SETTERS
    s_ok(data, True)
    s_output(data, output)
    s_error(data, None)
    s_duration(data, duration_ms)
    s_attempt(data, attempt)
    s_branch(data, branch)
    s_usage(data, usage)
    s_model(data, model)
    return data


@dataclass(slots=True)
class ToSave:
    """What a checkpointed commit leaves to do: save `delta`, then queue `ready` (`save_then_queue`)."""

    delta: NodeDelta
    ready: list[int]


async def save_then_queue(state: RunState, log: EventLog, step: ToSave, *, hold: bool = False) -> None:
    """Checkpoint a committed node, then let the nodes it made ready join the queue. `hold`: an
    inline node, whose delta may wait for the next durable write (`RunJournal.save`): what it
    made ready starts only after a write that includes it, or runs inline too."""
    await log.save(step.delta, hold=hold)
    state.ready.extend(step.ready)


def commit(state: RunState, log: EventLog, idx: int, outcome: NodeOutcome) -> ToSave | None:
    """Record how node `idx` ended (see the module docstring for the order).

    Without a checkpointer the newly ready nodes are queued at once and None is returned; with
    one, the caller gets the delta to save and must `save_then_queue` it before starting anything.
    (Synchronous, so an uncheckpointed run pays no coroutine per node.)
    """
    pn = state.plan.nodes[idx]
    nr = state.node_run(idx)
    nr.attempts = outcome.attempt
    nr.duration_ms = outcome.duration_ms
    kind = outcome.kind
    if kind is _KIND_CANCELLED:
        nr.status = state.status[idx] = _CANCELLED
        return None
    state.resume_data.pop(idx, None)
    checkpointing = log.checkpointing
    if kind is _KIND_OK:
        output, ports, usage = outcome.output, outcome.ports, outcome.usage
        nr.status = state.status[idx] = _OK
        nr.output, nr.ports, nr.usage = output, ports, usage
        if outcome.error is not None:  # a failure its on_error handled (plait.engine.on_error)
            nr.error = outcome.error
        state.outputs[pn.key] = output
        log.emit(
            node_finished(
                output,
                round(outcome.duration_ms, 3),
                outcome.attempt,
                None if ports is None else list(ports),
                usage or None,
                outcome.model,
            ),
            pn.id,
        )
        if not checkpointing:
            state.ready.extend(state.propagate(idx, ports, output, log.emit))
            return None
        delta = NodeDelta(
            pn.id,
            _OK,
            output,
            ports,
            outcome.var_changes,
            outcome.error,
            outcome.attempt,
            nr.started_at,
            outcome.duration_ms,
            usage,
            input=state.sources_of(idx),
        )
        return ToSave(delta, state.propagate(idx, ports, output, log.emit))
    if kind is _KIND_INTERRUPT:
        req = outcome.interrupt
        assert req is not None
        now = time.time()
        info = {
            "id": pn.id,
            "node_id": pn.id,
            "kind": req.kind,
            "payload": req.payload,
            "blocking": req.blocking,
            "created_at": now,
            "expires_at": now + req.timeout_s if req.timeout_s else None,
        }
        state.interrupts[idx] = info
        nr.status = state.status[idx] = _WAITING
        log.emit(ev.Waiting(pn.id, info), pn.id)
        if req.blocking:
            state.paused = True
        if not checkpointing:
            return None
        waiting = NodeDelta(
            pn.id,
            _WAITING,
            vars=outcome.var_changes,
            attempt=outcome.attempt,
            started_at=nr.started_at,
            interrupt=info,
            input=state.sources_of(idx),
        )
        return ToSave(waiting, [])
    nr.status = state.status[idx] = _ERROR
    nr.error = outcome.error
    log.emit(
        ev.NodeFinished(
            False,
            error=outcome.error,
            duration_ms=round(outcome.duration_ms, 3),
            attempt=outcome.attempt,
        ),
        pn.id,
    )
    state.fail(pn.id, f"node {pn.id!r} failed: {outcome.error}")
    if not checkpointing:
        return None
    failed = NodeDelta(
        pn.id,
        _ERROR,
        error=outcome.error,
        attempt=outcome.attempt,
        started_at=nr.started_at,
        duration_ms=outcome.duration_ms,
        input=state.sources_of(idx),
    )
    return ToSave(failed, [])


__all__ = ["ToSave", "commit", "node_finished", "save_then_queue"]
