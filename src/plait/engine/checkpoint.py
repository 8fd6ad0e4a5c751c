"""The persistence contract of the engine, and its in-memory implementation.

The engine hands the checkpointer one `NodeDelta` per node transition (with the events emitted
since the previous save) *before* it schedules the node's dependants. Replaying the deltas of a
run in order rebuilds its scheduler state exactly (see `Runner.restore`), so a checkpoint is
just the run record plus its list of deltas.

A node that runs as a task (one that may act outside plait: a model call, an HTTP request, code)
is also recorded *before it runs*, by a `running` delta (`save_started`). A `running` delta that
no later delta of its node follows is an attempt the server stopped in the middle: the restored
run runs that node again as a new attempt and says so (`NodeRerun`), instead of pretending the
cut-short attempt never happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from plait.engine.events import Event
from plait.engine.status import RunStatus

InputSources = tuple[tuple[str, str, str], ...]


def input_sources(raw: Any) -> InputSources | None:
    """`NodeDelta.input` from its JSON form (lists of [source node, source port, target port])."""
    if not raw:
        return None
    return tuple((str(src), str(port), str(target)) for src, port, target in raw)


@dataclass(slots=True)
class NodeDelta:
    """What one node transition changed. `status`: ok, error, waiting (interrupted), resumed, or
    running (an attempt starts: only `attempt` and `started_at` are set)."""

    node_id: str
    status: str
    output: Any = None
    ports: tuple[str, ...] | None = None
    vars: dict[str, Any] | None = None
    error: str | None = None
    attempt: int = 1
    started_at: float | None = None
    duration_ms: float | None = None
    usage: dict[str, int] | None = None
    interrupt: dict[str, Any] | None = None
    resume: Any = None
    reused: bool = False
    # Where the node's input came from, one (source node, source port, target port) per edge that
    # delivered a value: the values are the sources' outputs (see `port_value`), so a checkpoint
    # records the input without storing every value twice.
    input: InputSources | None = None


def port_value(output: Any, port: str) -> Any:
    """The value an edge from `port` of a node delivers: the whole output, or its `port` key when
    the node emitted a dict with one (the rule `RunState.propagate` applies, inlined there)."""
    if port == "out" or type(output) is not dict or port not in output:
        return output
    return output[port]


def delta_from_dict(raw: dict[str, Any]) -> NodeDelta:
    """A `NodeDelta` from its JSON form (`dataclasses.asdict`)."""
    delta = NodeDelta(**raw)
    if delta.ports is not None:
        delta.ports = tuple(delta.ports)
    if delta.input is not None:
        delta.input = input_sources(delta.input)
    return delta


@dataclass(slots=True)
class RunRecord:
    run_id: str
    flow_id: str
    inputs: dict[str, Any]
    variables: dict[str, Any]
    created_at: float
    parent_run_id: str | None = None
    status: str = RunStatus.RUNNING
    outputs: dict[str, Any] | None = None
    error: str | None = None


@dataclass(slots=True)
class Checkpoint:
    run: RunRecord
    deltas: list[NodeDelta] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    # Edge-LLM decisions in step order (`{step, mode, next, skips, reason, ...}`), replayed on restore.
    decisions: list[dict[str, Any]] = field(default_factory=list)
    # The highest event seq stored (what a restored run numbers on from), also when `events` was
    # not loaded; 0 for a run without events.
    last_seq: int = 0

    @property
    def highest_seq(self) -> int:
        """The seq a restored run numbers on from: `last_seq`, or the loaded events' last one."""
        return max(self.last_seq, self.events[-1].seq if self.events else 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready state, events left out (`last_seq` stands for them): what a sub-flow waiting
        for people keeps in its parent's interrupt."""
        return {
            "run": asdict(self.run),
            "deltas": [asdict(d) for d in self.deltas],
            "decisions": self.decisions,
            "last_seq": self.highest_seq,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        deltas = [delta_from_dict(raw) for raw in data["deltas"]]
        return cls(
            RunRecord(**data["run"]), deltas, [], list(data.get("decisions") or []), data.get("last_seq", 0)
        )


class Checkpointer(Protocol):
    async def begin(self, record: RunRecord, events: Sequence[Event]) -> None:
        """A run starts (or restarts): store its record."""

    async def save(self, run_id: str, delta: NodeDelta, events: Sequence[Event]) -> None:
        """Durably store one node delta and the events emitted since the last save."""

    async def save_started(self, run_id: str, deltas: Sequence[NodeDelta], events: Sequence[Event]) -> None:
        """Durably store `running` deltas (attempts about to start; see the module docstring) and
        the events since the last save, in one transaction, before those attempts run."""

    async def save_decision(self, run_id: str, decision: dict[str, Any], events: Sequence[Event]) -> None:
        """Durably store one edge-LLM decision (`decision["step"]` orders them) and the events since
        the last save. Only runs with `settings.policy = "edge_llm"` call it."""

    async def finish(
        self,
        run_id: str,
        status: str,
        outputs: dict[str, Any] | None,
        error: str | None,
        events: Sequence[Event],
    ) -> None:
        """The run reached completed, failed, cancelled or waiting."""

    async def load(self, run_id: str, *, events: bool = True) -> Checkpoint | None:
        """The run's record, deltas, decisions and `last_seq`; its events too unless `events` is
        False (restoring needs only `last_seq`, and a run's event log can be long)."""


@runtime_checkable
class BatchCheckpointer(Checkpointer, Protocol):
    """A checkpointer that can write several node transitions in one transaction. The journal
    then holds back the deltas of inline nodes (pure: they act on nothing outside the run) and
    writes them with the next write that must be durable: the `running` deltas of the attempts
    about to start (`save_batch`), a task node's delta, the run's end (`finish_batch`), or before
    the run waits for anything. No attempt starts before what it depends on is stored; a crash
    in between only runs those inline nodes again."""

    async def save_batch(
        self,
        run_id: str,
        deltas: Sequence[NodeDelta],
        started: Sequence[NodeDelta],
        events: Sequence[Event],
    ) -> None:
        """As `save` for each of `deltas` in order, then `save_started(started)`, in one transaction."""

    async def finish_batch(
        self,
        run_id: str,
        deltas: Sequence[NodeDelta],
        status: str,
        outputs: dict[str, Any] | None,
        error: str | None,
        events: Sequence[Event],
    ) -> None:
        """As `save` for each of `deltas` in order, then `finish`, in one transaction."""


class InMemoryCheckpointer:
    """Keeps checkpoints in a dict; for tests, embedding and benchmarks."""

    def __init__(self) -> None:
        self.runs: dict[str, Checkpoint] = {}
        self._decided_after: dict[str, list[int]] = {}  # per decision: how many deltas preceded it

    async def begin(self, record: RunRecord, events: Sequence[Event]) -> None:
        cp = self.runs.get(record.run_id)
        if cp is None:
            self.runs[record.run_id] = Checkpoint(record, [], list(events))
        else:
            cp.run.status = record.status
            cp.events.extend(events)

    async def save(self, run_id: str, delta: NodeDelta, events: Sequence[Event]) -> None:
        cp = self.runs[run_id]
        cp.deltas.append(delta)
        if events:
            cp.events.extend(events)

    async def save_started(self, run_id: str, deltas: Sequence[NodeDelta], events: Sequence[Event]) -> None:
        cp = self.runs[run_id]
        cp.deltas.extend(deltas)
        if events:
            cp.events.extend(events)

    async def save_decision(self, run_id: str, decision: dict[str, Any], events: Sequence[Event]) -> None:
        cp = self.runs[run_id]
        cp.decisions.append(decision)
        self._decided_after.setdefault(run_id, []).append(len(cp.deltas))
        cp.events.extend(events)

    async def finish(
        self,
        run_id: str,
        status: str,
        outputs: dict[str, Any] | None,
        error: str | None,
        events: Sequence[Event],
    ) -> None:
        cp = self.runs[run_id]
        cp.run.status, cp.run.outputs, cp.run.error = status, outputs, error
        cp.events.extend(events)

    async def load(self, run_id: str, *, events: bool = True) -> Checkpoint | None:
        cp = self.runs.get(run_id)
        if cp is None:
            return None
        return Checkpoint(cp.run, cp.deltas, cp.events if events else [], cp.decisions, cp.highest_seq)

    def truncated(self, run_id: str, n_deltas: int) -> InMemoryCheckpointer:
        """A copy holding the run as it was after its first `n_deltas` deltas (crash simulation)."""
        cp = self.runs[run_id]
        other = InMemoryCheckpointer()
        run = RunRecord(**{k: getattr(cp.run, k) for k in RunRecord.__slots__})
        run.status, run.outputs, run.error = RunStatus.RUNNING, None, None
        after = self._decided_after.get(run_id, [])
        decisions = [d for d, n in zip(cp.decisions, after, strict=True) if n <= n_deltas]
        other.runs[run_id] = Checkpoint(run, list(cp.deltas[:n_deltas]), [], decisions)
        other._decided_after[run_id] = [n for n in after if n <= n_deltas]
        return other
