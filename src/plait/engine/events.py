"""Run events: small immutable records, built once and handed to every sink.

An `Event` is the envelope every event shares (`seq` per run, `type`, `run_id`, `ts`, `node_id`)
around a typed payload, one frozen, slotted dataclass per event type (`NodeFinished`, `Waiting`,
...). The engine builds the payload, the runner wraps it once, and every sink (the checkpointer,
the event bus, the CLI, a test) gets the same object. Readers match on the payload's class
(`isinstance(event.data, NodeFinished)`), never on dict keys.

The wire form (SSE `data:`, the WebSocket flow channel, the `run_events` table) is written and read
in one place: `Event.to_dict()` / `Event.from_dict()` for the whole event, `EventData.wire()` /
`data_from_wire()` for a payload. Fields that are None are left out of the wire form unless the
event type always carries them (`_always`), so the wire format is what it was when events were
dicts. Payloads are also read-only mappings over their wire form (`event.data["delta"]`), which
keeps older callers and the tests' dict comparisons working.

`plait schema --events` prints the JSON Schema of the events (`events_json_schema`); the web UI's
types are generated from it (`web/src/generated/events.ts`).
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from plait.engine.status import RunStatus

RUN_STARTED = "run_started"
NODE_STARTED = "node_started"
NODE_TOKEN = "node_token"
NODE_TOOL_CALL = "node_tool_call"
NODE_RETRYING = "node_retrying"
NODE_RERUN = "node_rerun"  # a node runs again: the server stopped while its attempt ran
NODE_FINISHED = "node_finished"
NODE_SKIPPED = "node_skipped"
EDGE_FIRED = "edge_fired"
DECISION = "decision"
DECISION_REJECTED = "decision_rejected"  # edge-LLM: both replies of a step were invalid
WAITING = "waiting"
RUN_FINISHED = "run_finished"
ERROR = "error"


class EventData:
    """Base of the typed payloads. Subclasses are frozen, slotted dataclasses with a `type`.

    `_always` names fields written to the wire even when None; `_wire_names` renames fields whose
    wire key is not a Python identifier (`from`). A payload also reads like the mapping of its wire
    form (`data["delta"]`, `data.get(...)`, `data == {...}`), without being a `Mapping` ABC: an ABC
    would make every `isinstance(event.data, NodeFinished)` on the readers' paths slower.
    """

    __slots__ = ()
    type: ClassVar[str] = ""
    _always: ClassVar[frozenset[str]] = frozenset()
    _wire_names: ClassVar[Mapping[str, str]] = {}
    # (field, wire name, always sent) per field; computed once per class by `_wire_fields`.
    _wire_fields_cache: ClassVar[tuple[tuple[str, str, bool], ...] | None] = None

    @classmethod
    def _wire_fields(cls) -> tuple[tuple[str, str, bool], ...]:
        cached = cls.__dict__.get("_wire_fields_cache")
        if cached is None:
            cached = tuple(
                (f.name, cls._wire_names.get(f.name, f.name), f.name in cls._always)
                for f in fields(cls)  # type: ignore[arg-type]
            )
            cls._wire_fields_cache = cached
        return cached

    def wire(self) -> dict[str, Any]:
        """The payload's wire form: its fields by wire name, None left out unless always sent."""
        out: dict[str, Any] = {}
        for name, wire_name, always in self._wire_fields():
            value = getattr(self, name)
            if value is not None or always:
                out[wire_name] = value
        return out

    @classmethod
    def wire_name(cls, field: str) -> str:
        """The key `field` is written under on the wire (`from_` -> `from`)."""
        return cls._wire_names.get(field, field)

    @classmethod
    def always_sent(cls, field: str) -> bool:
        """Whether the wire form carries `field` even when it is None (the event schema's `required`)."""
        return field in cls._always

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> EventData:
        """The payload from its wire form; raises TypeError when `data` does not fit the type."""
        by_wire = {wire_name: name for name, wire_name, _ in cls._wire_fields()}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            name = by_wire.get(key)
            if name is None:
                raise TypeError(f"unknown field {key!r} for {cls.type}")
            kwargs[name] = value
        return cls(**kwargs)

    # Read-only mapping over the wire form (for dict-minded callers and comparisons).
    def __getitem__(self, key: str) -> Any:
        return self.wire()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.wire().get(key, default)

    def keys(self) -> KeysView[str]:
        return self.wire().keys()

    def items(self) -> ItemsView[str, Any]:
        return self.wire().items()

    def __iter__(self) -> Iterator[str]:
        return iter(self.wire())

    def __len__(self) -> int:
        return len(self.wire())

    def __contains__(self, key: object) -> bool:
        return key in self.wire()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventData):
            return type(self) is type(other) and self.wire() == other.wire()
        if isinstance(other, Mapping):
            return self.wire() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared by value, like the dict it stands for

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.wire().items())
        return f"{type(self).__name__}({inner})"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RunStarted(EventData):
    type: ClassVar[str] = RUN_STARTED
    _always: ClassVar[frozenset[str]] = frozenset({"inputs"})
    flow_id: str
    inputs: dict[str, Any]
    retry_of: str | None = None  # a retry-from-node run: the run it reuses
    from_node: str | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NodeStarted(EventData):
    type: ClassVar[str] = NODE_STARTED
    node_type: str
    attempt: int = 1


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NodeToken(EventData):
    type: ClassVar[str] = NODE_TOKEN
    _always: ClassVar[frozenset[str]] = frozenset({"delta"})
    delta: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NodeToolCall(EventData):
    type: ClassVar[str] = NODE_TOOL_CALL
    _always: ClassVar[frozenset[str]] = frozenset({"args"})
    name: str
    args: Any = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NodeRetrying(EventData):
    type: ClassVar[str] = NODE_RETRYING
    attempt: int
    error: str
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NodeRerun(EventData):
    """A node runs again because its last attempt never ended: the server stopped while it ran
    (a crash, or a restart). `attempt` is the new attempt; `reason` says why, for people. What the
    cut-short attempt did outside plait (an HTTP call, a model call) may have happened."""

    type: ClassVar[str] = NODE_RERUN
    attempt: int
    reason: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NodeFinished(EventData):
    """A node ended an attempt: `ok` with its `output` (and the fired `branch` ports), or an `error`."""

    type: ClassVar[str] = NODE_FINISHED
    # What wire() below always writes even when None (read by the event schema).
    _always: ClassVar[frozenset[str]] = frozenset({"duration_ms"})
    ok: bool
    output: Any = None
    error: str | None = None
    duration_ms: float | None = None
    attempt: int = 1
    branch: list[str] | None = None
    usage: dict[str, int] | None = None
    # Which provider and model answered the node's (last) model call: {"provider", "model"}.
    model: dict[str, str] | None = None

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok}
        if self.ok:
            out["output"] = self.output
        elif self.error is not None:
            out["error"] = self.error
        out["duration_ms"] = self.duration_ms
        out["attempt"] = self.attempt
        if self.branch is not None:
            out["branch"] = self.branch
        if self.usage:
            out["usage"] = self.usage
        if self.model:
            out["model"] = self.model
        return out


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NodeSkipped(EventData):
    type: ClassVar[str] = NODE_SKIPPED
    reason: str | None = None  # edge-LLM: "decider" or "stop"; dataflow pruning gives none


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class EdgeFired(EventData):
    type: ClassVar[str] = EDGE_FIRED
    _wire_names: ClassVar[Mapping[str, str]] = {"from_": "from"}
    edge: str
    from_: str
    to: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Decision(EventData):
    """One accepted edge-LLM decision (the DecisionLog record, see `plait.engine.policy_edge`)."""

    type: ClassVar[str] = DECISION
    _always: ClassVar[frozenset[str]] = frozenset({"at"})
    step: int
    mode: str
    next: list[dict[str, Any]]
    skips: list[str]
    reason: str
    at: str | None = None  # the node completed last when the decider was asked
    ready: list[str] | None = None
    usage: dict[str, int] | None = None
    rejected: list[dict[str, Any]] | None = None  # replies refused before this one


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class DecisionRejected(EventData):
    type: ClassVar[str] = DECISION_REJECTED
    step: int
    rejected: list[dict[str, Any]]
    usage: dict[str, int] | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Waiting(EventData):
    """A node asks to pause: `task` is the pending interrupt (id, node_id, kind, payload, ...)."""

    type: ClassVar[str] = WAITING
    node: str
    task: dict[str, Any]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RunFinished(EventData):
    type: ClassVar[str] = RUN_FINISHED
    _always: ClassVar[frozenset[str]] = frozenset({"outputs", "usage"})
    status: RunStatus
    outputs: dict[str, Any]
    usage: dict[str, int]
    duration_ms: float | None = None
    error: str | None = None
    interrupts: list[dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RunError(EventData):
    type: ClassVar[str] = ERROR
    message: str


class RawData(EventData):
    """A payload of an event type this version does not know, or that does not fit its type
    (kept as it was stored, so nothing is lost)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def wire(self) -> dict[str, Any]:
        return dict(self._data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]


EVENT_TYPES: dict[str, type[EventData]] = {
    cls.type: cls
    for cls in (
        RunStarted,
        NodeStarted,
        NodeToken,
        NodeToolCall,
        NodeRetrying,
        NodeRerun,
        NodeFinished,
        NodeSkipped,
        EdgeFired,
        Decision,
        DecisionRejected,
        Waiting,
        RunFinished,
        RunError,
    )
}


def data_from_wire(type_: str, data: Mapping[str, Any] | None) -> EventData | None:
    """A payload from its wire form: the typed class when `data` fits it, else `RawData`.

    An empty or missing payload of a known type whose fields all have defaults (a `node_skipped`
    without reason) is typed too, so readers can rely on `isinstance` alone."""
    cls = EVENT_TYPES.get(type_)
    if cls is None:
        return RawData(data) if data else None
    try:
        return cls.from_wire(data or {})
    except TypeError:
        return RawData(data) if data else None


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a run's log: the envelope and its typed payload (`data`).

    `data` may be given as a wire dict (events read back from storage); it is turned into its
    typed payload once, here.
    """

    seq: int
    type: str
    run_id: str
    ts: float
    node_id: str | None = None
    data: EventData | None = None

    def __post_init__(self) -> None:
        data = self.data
        if not isinstance(data, EventData):
            object.__setattr__(self, "data", data_from_wire(self.type, data))

    def to_dict(self) -> dict[str, Any]:
        """The wire form (SSE data, the flow channel): the envelope, then the data's fields (which
        never replace the envelope's `seq`, `type`, `run_id`, `ts`, `node_id`)."""
        out: dict[str, Any] = {"seq": self.seq, "type": self.type, "run_id": self.run_id, "ts": self.ts}
        if self.node_id is not None:
            out["node_id"] = self.node_id
        if self.data is not None:
            for key, value in self.data.wire().items():
                out.setdefault(key, value)
        return out

    def wire_data(self) -> dict[str, Any] | None:
        """The payload's wire form, None when there is none (what the store keeps per event)."""
        if self.data is None:
            return None
        return self.data.wire() or None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Event:
        """The inverse of `to_dict`."""
        envelope = ("seq", "type", "run_id", "ts", "node_id")
        data = {k: v for k, v in raw.items() if k not in envelope}
        type_ = str(raw.get("type") or "")
        return cls(
            int(raw.get("seq") or 0),
            type_,
            str(raw.get("run_id") or ""),
            float(raw.get("ts") or 0.0),
            raw.get("node_id"),
            data_from_wire(type_, data),
        )


EventSink = Callable[[Event], Any]

__all__ = [
    "EVENT_TYPES",
    "Decision",
    "DecisionRejected",
    "EdgeFired",
    "Event",
    "EventData",
    "EventSink",
    "NodeFinished",
    "NodeRerun",
    "NodeRetrying",
    "NodeSkipped",
    "NodeStarted",
    "NodeToken",
    "NodeToolCall",
    "RawData",
    "RunError",
    "RunFinished",
    "RunStarted",
    "Waiting",
    "data_from_wire",
]
