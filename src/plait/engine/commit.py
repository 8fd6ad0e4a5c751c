"""Commit: turn a node's outcome into run state, events and a checkpoint delta.

The order is the engine's durability rule: the node's state and events first, then its outputs
are propagated along the fired edges (dead paths pruned), then the delta and the events since the
last save go to the checkpointer, and only after that do the nodes that became ready join the
ready queue. So no dependant starts before the node it depends on is checkpointed.
"""

from __future__ import annotations

import time

import plait.engine.events as ev
from plait.engine.checkpoint import NodeDelta
from plait.engine.invoke import NodeOutcome, OutcomeKind
from plait.engine.journal import EventLog
from plait.engine.state import RunState
from plait.engine.status import NodeStatus

_OK, _ERROR, _WAITING = NodeStatus.OK, NodeStatus.ERROR, NodeStatus.WAITING
_CANCELLED = NodeStatus.CANCELLED
_KIND_OK, _KIND_INTERRUPT, _KIND_CANCELLED = OutcomeKind.OK, OutcomeKind.INTERRUPT, OutcomeKind.CANCELLED


async def commit(state: RunState, log: EventLog, idx: int, outcome: NodeOutcome) -> None:
    """Record how node `idx` ended (see the module docstring for the order)."""
    pn = state.plan.nodes[idx]
    nr = state.node_run(idx)
    nr.attempts = outcome.attempt
    nr.duration_ms = outcome.duration_ms
    kind = outcome.kind
    if kind is _KIND_CANCELLED:
        nr.status = state.status[idx] = _CANCELLED
        return
    state.resume_data.pop(idx, None)
    checkpointing = log.checkpointing
    if kind is _KIND_OK:
        result = outcome.result
        assert result is not None
        output, ports, usage = result.output, result.ports, result.usage
        nr.status = state.status[idx] = _OK
        nr.output, nr.ports, nr.usage = output, ports, usage
        state.outputs[pn.key] = output
        log.emit(
            ev.NodeFinished(
                True,
                output,
                duration_ms=round(outcome.duration_ms, 3),
                attempt=outcome.attempt,
                branch=None if ports is None else list(ports),
                usage=usage or None,
            ),
            pn.id,
        )
        if not checkpointing:
            state.ready.extend(state.propagate(idx, ports, output, log.emit))
            return
        delta = NodeDelta(
            pn.id,
            _OK,
            output,
            ports,
            outcome.var_changes,
            None,
            outcome.attempt,
            nr.started_at,
            outcome.duration_ms,
            usage,
            input=state.sources_of(idx),
        )
        newly_ready = state.propagate(idx, ports, output, log.emit)
        await log.save(delta)
        state.ready.extend(newly_ready)
    elif kind is _KIND_INTERRUPT:
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
        if checkpointing:
            await log.save(
                NodeDelta(
                    pn.id,
                    _WAITING,
                    vars=outcome.var_changes,
                    attempt=outcome.attempt,
                    started_at=nr.started_at,
                    interrupt=info,
                    input=state.sources_of(idx),
                )
            )
        if req.blocking:
            state.paused = True
    else:
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
        if checkpointing:
            await log.save(
                NodeDelta(
                    pn.id,
                    _ERROR,
                    error=outcome.error,
                    attempt=outcome.attempt,
                    started_at=nr.started_at,
                    duration_ms=outcome.duration_ms,
                    input=state.sources_of(idx),
                )
            )
        state.fail(pn.id, f"node {pn.id!r} failed: {outcome.error}")


__all__ = ["commit"]
