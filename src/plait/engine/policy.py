"""Scheduling policies: what the driver loop asks at its decision points.

The driver (`plait.engine.runner`) owns execution: tasks, commits, checkpoints, cancellation,
timeouts. A policy owns the decisions: which nodes start now (`startable`), what happens when
nothing is running (`idle`: end the run, or decide more), and what it keeps about the run
(`on_outcome` before each commit, `on_delta` for each replayed checkpoint delta, `restore` for
what it checkpointed itself). It adds to the result (`usage`, `decisions`) and stops its own work
on `cancel`. A policy object belongs to one run.

`DataflowPolicy` is the default: nodes start when their inputs are resolved (the readiness
counters of `RunState`), pure in-memory nodes run inline. `plait.engine.policy_edge.EdgeLLMPolicy`
lets a model decide each step (seed 002). Policies reach the run through `PolicyHost`, the part of
the runner they may use.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from plait.engine.checkpoint import Checkpoint, NodeDelta
from plait.engine.context import Scope
from plait.engine.events import EventData
from plait.engine.invoke import NodeOutcome
from plait.engine.plan import Plan
from plait.engine.services import RunServices
from plait.engine.state import RunState
from plait.engine.status import RunStatus


class PolicyHost(Protocol):
    """What a scheduling policy may see and do of its run."""

    run_id: str
    plan: Plan
    state: RunState
    inputs: dict[str, Any]
    env: Mapping[str, Any]
    services: RunServices

    @property
    def cancelled(self) -> bool: ...

    @property
    def running(self) -> Mapping[int, Any]:
        """The nodes running as tasks now, by index."""

    def lookup(self, root: str) -> Any: ...

    def secret(self, name: str) -> str | None: ...

    def emit(self, data: EventData, node_id: str | None = None) -> None: ...

    async def save_decision(self, record: dict[str, Any]) -> None: ...


class SchedulingPolicy(Protocol):
    """The decision points of the driver loop (see the module docstring)."""

    # Whether pure in-memory nodes may run inline in the driver loop (else every node is a task).
    runs_inline: bool

    def startable(self, run: PolicyHost) -> Iterator[int]:
        """The nodes to start now, in order; evaluated lazily, between starts."""
        ...

    async def idle(self, run: PolicyHost) -> RunStatus | None:
        """Nothing is running: the run's end status, or None after deciding what runs next."""
        ...

    def node_input(self, run: PolicyHost, idx: int) -> tuple[Any, dict[str, Any], Scope]:
        """A starting node's input (`in` value, ports) and the scope its references resolve in."""
        ...

    def on_outcome(self, run: PolicyHost, idx: int, outcome: NodeOutcome) -> None:
        """A node ended (before its outcome is committed)."""

    def on_delta(self, run: PolicyHost, idx: int, delta: NodeDelta) -> None:
        """A checkpoint delta was replayed into the run state (restore, retry, resume)."""

    def restore(self, run: PolicyHost, checkpoint: Checkpoint) -> None:
        """After the deltas: bring back what the policy checkpointed itself."""

    def cancel(self) -> None:
        """The run is being cancelled: stop the policy's own work."""

    def usage(self) -> Mapping[str, int] | None:
        """Token usage of the policy itself (added to the run's), if any."""
        ...

    def decisions(self) -> list[dict[str, Any]]:
        """The decisions to report in `RunResult.decisions`."""
        ...


class DataflowPolicy:
    """Nodes start when their inputs are resolved; up to `max_concurrency` run at once."""

    __slots__ = ()
    runs_inline = True

    def startable(self, run: PolicyHost) -> Iterator[int]:
        state, running = run.state, run.running
        ready, limit = state.ready, run.plan.max_concurrency
        while ready and not state.paused and len(running) < limit:
            yield ready.popleft()

    async def idle(self, run: PolicyHost) -> RunStatus | None:
        return RunStatus.WAITING if run.state.interrupts else RunStatus.COMPLETED

    def node_input(self, run: PolicyHost, idx: int) -> tuple[Any, dict[str, Any], Scope]:
        value, ports = run.state.inputs_of(idx)
        return value, ports, run

    def on_outcome(self, run: PolicyHost, idx: int, outcome: NodeOutcome) -> None:
        pass

    def on_delta(self, run: PolicyHost, idx: int, delta: NodeDelta) -> None:
        pass

    def restore(self, run: PolicyHost, checkpoint: Checkpoint) -> None:
        pass

    def cancel(self) -> None:
        pass

    def usage(self) -> Mapping[str, int] | None:
        return None

    def decisions(self) -> list[dict[str, Any]]:
        return []


__all__ = ["DataflowPolicy", "PolicyHost", "SchedulingPolicy"]
