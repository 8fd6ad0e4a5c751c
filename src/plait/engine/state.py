"""Run state and readiness: what a run knows about its nodes, and which become ready when.

Readiness is a counter per node: `remaining[i]` incoming edges not yet resolved, `delivered[i]`
whether any of them carried a value. A resolved node fires some output ports; edges from the
others are pruned, and a node whose inputs were all pruned is skipped and prunes its own outputs
(dead-path elimination), so joins never wait forever.

The state changes in two ways only: a node's outcome is committed (`plait.engine.commit`), or a
checkpoint delta is replayed (`apply_delta`, on restore, retry and resume). Both go through
`propagate`, so a restored run is the run that was checkpointed, exactly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import plait.engine.events as ev
from plait.engine.checkpoint import NodeDelta
from plait.engine.events import EventData
from plait.engine.plan import Plan
from plait.engine.results import NodeRun
from plait.engine.status import NodeStatus
from plait.nodes.base import MultiInput

Emit = Callable[[EventData, str | None], None]

# Enum members as module constants: attribute access on an Enum class is slow on the hot path.
_PENDING, _RUNNING, _OK = NodeStatus.PENDING, NodeStatus.RUNNING, NodeStatus.OK
_ERROR, _SKIPPED, _WAITING = NodeStatus.ERROR, NodeStatus.SKIPPED, NodeStatus.WAITING
_RESUMED = NodeStatus.RESUMED
_UNRESOLVED = (_PENDING, _RUNNING)
_MISSING = object()
_PRUNED = ev.NodeSkipped()  # the payload of a node skipped by dead-path elimination (immutable)


class RunState:
    """The per-node bookkeeping of one run (or one loop/map body execution)."""

    __slots__ = (
        "plan",
        "vars",
        "status",
        "remaining",
        "delivered",
        "deliveries",
        "outputs",
        "node_runs",
        "interrupts",
        "resume_data",
        "ready",
        "paused",
        "failure",
        "unfinished",
    )

    def __init__(self, plan: Plan, variables: dict[str, Any]) -> None:
        n = len(plan.nodes)
        self.plan = plan
        self.vars = variables  # the flow variables; nodes change them in place (ctx.set_var)
        self.status: list[NodeStatus] = [_PENDING] * n
        self.remaining = plan.in_counts.copy()
        self.delivered = [False] * n
        # Per node, the (edge, value) pairs delivered to it, in delivery order.
        self.deliveries: list[list[tuple[Any, Any]] | None] = [None] * n
        self.outputs: dict[str, Any] = {}  # by node key (lower-case id): the reference roots
        self.node_runs: dict[int, NodeRun] = {}
        self.interrupts: dict[int, dict[str, Any]] = {}  # pending interrupts by node index
        self.resume_data: dict[int, Any] = {}  # answers delivered to waiting nodes, not yet run
        self.ready: deque[int] = deque(plan.roots)  # the dataflow policy's queue
        self.paused = False  # a blocking interrupt: start nothing new
        self.failure: tuple[str | None, str] | None = None  # (node id or None, message)
        # Restored runs: nodes whose last recorded attempt started and never ended (the server
        # stopped while it ran), by index -> that attempt. The runner runs them again as a new one.
        self.unfinished: dict[int, int] = {}

    # ----------------------------------------------------------------- reading
    def node_run(self, idx: int) -> NodeRun:
        nr = self.node_runs.get(idx)
        if nr is None:
            nr = self.node_runs[idx] = NodeRun(self.plan.nodes[idx].id)
        return nr

    def inputs_of(self, idx: int) -> tuple[Any, dict[str, Any]]:
        """A node's input: the value on `in`, and every port's value (several edges into one port
        make a `MultiInput` {source id: value}, in delivery order)."""
        got = self.deliveries[idx]
        if not got:
            return None, {}
        if len(got) == 1:
            edge, value = got[0]
            return (value if edge.target_port == "in" else None), {edge.target_port: value}
        nodes = self.plan.nodes
        ports: dict[str, Any] = {}
        for edge, value in got:
            src = nodes[edge.source].id
            slot = ports.get(edge.target_port, _MISSING)
            if slot is _MISSING:
                ports[edge.target_port] = value
            elif isinstance(slot, MultiInput):
                slot[src] = value
            else:
                first = next(e for e, _ in got if e.target_port == edge.target_port)
                ports[edge.target_port] = MultiInput({nodes[first.source].id: slot, src: value})
        return ports.get("in"), ports

    def sources_of(self, idx: int) -> tuple[tuple[str, str, str], ...] | None:
        """Where a node's input came from (`NodeDelta.input`): (source id, source port, target port)."""
        got = self.deliveries[idx]
        if not got:
            return None
        nodes = self.plan.nodes
        if len(got) == 1:  # the common case, without a generator
            e = got[0][0]
            return ((nodes[e.source].id, e.source_port, e.target_port),)
        return tuple([(nodes[e.source].id, e.source_port, e.target_port) for e, _ in got])

    def collect_outputs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        nodes = self.plan.nodes
        for idx in self.plan.outputs:
            pn = nodes[idx]
            if self.status[idx] == _OK:
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

    # ----------------------------------------------------------------- changing
    def fail(self, node_id: str | None, message: str) -> None:
        self.failure = (node_id, message)

    def skip(self, idx: int) -> NodeRun:
        """Mark a node skipped (a policy's choice): its pending interrupt and answer are dropped."""
        self.status[idx] = _SKIPPED
        self.interrupts.pop(idx, None)
        self.resume_data.pop(idx, None)
        nr = self.node_run(idx)
        nr.status = _SKIPPED
        return nr

    def propagate(self, idx: int, fired: tuple[str, ...] | None, output: Any, emit: Emit | None) -> list[int]:
        """Resolve the out-edges of a finished node; returns the nodes that became ready.

        `fired` names the ports that fired (None: all). With `emit`, fired edges and skipped
        nodes are reported; replaying a checkpoint passes None.
        """
        nodes, remaining, delivered, deliveries = (
            self.plan.nodes,
            self.remaining,
            self.delivered,
            self.deliveries,
        )
        newly_ready: list[int] = []
        pruned_stack: list[int] = []
        for edge in nodes[idx].out_edges:
            t = edge.target
            if edge.control or fired is None or edge.source_port in fired:
                delivered[t] = True
                if not edge.control:
                    port = edge.source_port  # checkpoint.port_value, inlined (hot path)
                    if port == "out" or type(output) is not dict or port not in output:
                        value = output
                    else:
                        value = output[port]
                    got = deliveries[t]
                    if got is None:
                        deliveries[t] = [(edge, value)]
                    else:
                        got.append((edge, value))
                if emit is not None:
                    emit(edge.fired, None)
            remaining[t] -= 1
            if remaining[t] == 0:
                if delivered[t]:
                    newly_ready.append(t)
                else:
                    pruned_stack.append(t)
        while pruned_stack:
            s = pruned_stack.pop()
            self.status[s] = _SKIPPED
            if emit is not None:
                nr = self.node_runs.get(s)
                if nr is None:
                    self.node_runs[s] = NodeRun(nodes[s].id, _SKIPPED)
                else:
                    nr.status = _SKIPPED
                emit(_PRUNED, nodes[s].id)
            else:
                self.node_runs[s] = NodeRun(nodes[s].id, _SKIPPED)
            for edge in nodes[s].out_edges:
                t = edge.target
                remaining[t] -= 1
                if remaining[t] == 0:
                    if delivered[t]:
                        newly_ready.append(t)
                    else:
                        pruned_stack.append(t)
        return newly_ready

    def apply_delta(self, delta: NodeDelta) -> int:
        """Replay one checkpoint delta (no node runs, no event); returns the node's index."""
        plan = self.plan
        idx = plan.by_key[delta.node_id.lower()]
        pn = plan.nodes[idx]
        nr = self.node_run(idx)
        if delta.vars:
            self.vars.update(delta.vars)
        status = delta.status
        if status == _RUNNING:  # an attempt started; a later delta of the node says it ended
            nr.attempts, nr.started_at = delta.attempt, delta.started_at
            self.unfinished[idx] = delta.attempt
            return idx
        self.unfinished.pop(idx, None)
        if status == _OK:
            nr.status, nr.output, nr.ports, nr.attempts = _OK, delta.output, delta.ports, delta.attempt
            nr.error = delta.error  # set when the node's on_error handled a failure
            nr.started_at, nr.duration_ms, nr.usage, nr.reused = (
                delta.started_at,
                delta.duration_ms,
                delta.usage,
                delta.reused,
            )
            self.status[idx] = _OK
            self.outputs[pn.key] = delta.output
            self.interrupts.pop(idx, None)
            self.ready.extend(self.propagate(idx, delta.ports, delta.output, None))
        elif status == _WAITING:
            nr.status = self.status[idx] = _WAITING
            self.interrupts[idx] = dict(delta.interrupt or {})
        elif status == _RESUMED:
            self.interrupts.pop(idx, None)
            self.resume_data[idx] = delta.resume
            nr.status = self.status[idx] = _PENDING
            self.ready.append(idx)
        elif status == _ERROR:
            nr.status, nr.error = _ERROR, delta.error
            self.status[idx] = _ERROR
        # Nodes already resolved must not stay in the ready queue.
        self.ready = deque(i for i in dict.fromkeys(self.ready) if self.status[i] in _UNRESOLVED)
        return idx


__all__ = ["Emit", "RunState"]
