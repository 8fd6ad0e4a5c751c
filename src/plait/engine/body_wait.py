"""A loop or map body waiting for a person: its state travels in the owning node's interrupt.

A body that ends `waiting` (a human node inside it asked) makes its loop or map node wait with the
same task (message, fields, actions), plus `body`: which body run it was (`key`, see
plait.engine.items), the waiting node, and the body's state as deltas (its finished nodes and the
waiting one). The owning node's interrupt is checkpointed with the run, so the state survives a
restart. The answer (`accept_resume` of the loop or map node: `{"answer", "body"}`) runs the node
again: the iterations or items recorded before are not run again, the waiting body is rebuilt from
its deltas and gets the answer, and the rest run. A map whose items wait at once asks one at a
time: the first to wait interrupts the node, the others run again after the answer.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from plait.engine.checkpoint import NodeDelta, delta_from_dict
from plait.engine.state import RunState
from plait.engine.status import NodeStatus
from plait.nodes.base import InterruptRequest, NodeError

_OK, _WAITING = NodeStatus.OK, NodeStatus.WAITING


def waiting_body(key: str, state: RunState) -> Exception:
    """What a loop/map node raises for its body `key` that ended waiting: an interrupt carrying the
    body's task and state, or a NodeError when several of its nodes wait at once."""
    pending = list(state.interrupts.values())
    if len(pending) != 1:
        names = ", ".join(str(i["node_id"]) for i in pending)
        return NodeError(
            f"a loop or map body waits for several people at once ({names})",
            hint="make the human steps in the body blocking",
            retryable=False,
        )
    info = pending[0]
    deltas: list[NodeDelta] = []
    nodes = state.plan.nodes
    for idx, nr in state.node_runs.items():  # in start order: a node's sources come first
        if state.status[idx] == _OK:
            deltas.append(NodeDelta(nodes[idx].id, _OK, nr.output, nr.ports, attempt=nr.attempts))
        elif idx in state.interrupts:
            deltas.append(NodeDelta(nodes[idx].id, _WAITING, attempt=nr.attempts, interrupt=info))
    expires = info.get("expires_at")
    body = {"key": key, "node": info["node_id"], "deltas": [asdict(d) for d in deltas]}
    return InterruptRequest(
        {**(info.get("payload") or {}), "body": body},
        kind=info.get("kind", "human"),
        blocking=True,
        timeout_s=max(expires - time.time(), 0.001) if expires else None,
    )


def resumed_body(resume: Any, key: str) -> tuple[list[NodeDelta], str, Any] | None:
    """For the body run `key` of a node given an answer: the waiting body's deltas, its waiting
    node and the answer; None when the answer is for another body run (or there is none)."""
    if not isinstance(resume, dict):
        return None
    body = resume.get("body")
    if not isinstance(body, dict) or body.get("key") != key:
        return None
    return [delta_from_dict(d) for d in body["deltas"]], str(body["node"]), resume.get("answer")


__all__ = ["resumed_body", "waiting_body"]
