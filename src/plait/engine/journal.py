"""A run's journal: it numbers events, hands each to every sink, and passes the checkpointer the
run record, node deltas and decisions together with the events emitted since the last save.

Events are built once (`Event` around a typed payload) and the same object goes to the run's own
log (`RunResult.events`), to every sink and, batched, to the checkpointer. Without a checkpointer
nothing is batched. A loop/map body reports through its enclosing run's journal (`BodyJournal`),
its node ids prefixed with the node that owns the body, and checkpoints nothing of its own but
the finished items it records (`record_item`: one delta per loop iteration or map item, see
`plait.engine.items`), which go to the run's checkpointer like any node delta.

The journal is also where a run's data leaves it, so it is where secrets are masked
(`RunServices.mask`, a `plait.net.redact.SecretMask` of the values the run may read): sinks and the
checkpointer get events, deltas, decisions and the run's outputs with every secret value replaced
by a mask, while the run itself (the state downstream nodes read, `RunResult`) keeps the real
values. Masking returns the same object when nothing in it is secret, and a run without a mask
pays one `is None` test per event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any, Protocol

from plait.engine.checkpoint import BatchCheckpointer, Checkpointer, NodeDelta, RunRecord
from plait.engine.events import WAITING, Event, EventData, EventSink, RawData
from plait.engine.frozen import new_instance, slot_setters
from plait.engine.status import RunStatus
from plait.net.redact import SecretMask

# `Event(...)` without its frozen-dataclass __init__ (see plait.engine.frozen): the hot path.
_set_seq, _set_type, _set_run_id, _set_ts, _set_node_id, _set_data = slot_setters(
    Event, ("seq", "type", "run_id", "ts", "node_id", "data")
)


# Payload fields that never hold user data (numbers, statuses, node/edge/tool ids, node types): not
# walked when masking, so `node_started` and `edge_fired` events cost one lookup.
_PLAIN_FIELDS = frozenset(
    {"seq", "ts", "attempt", "duration_ms", "delay_s", "step", "usage", "ok", "status", "started_at"}
    | {"node_type", "edge", "from_", "to", "node", "flow_id", "retry_of", "from_node", "at", "ready"}
)
_DATA_FIELDS: dict[type, tuple[str, ...]] = {}


def _data_fields(cls: type) -> tuple[str, ...]:
    """The payload fields of `cls` that may hold user data (RawData: its one mapping)."""
    names = _DATA_FIELDS.get(cls)
    if names is None:
        if cls is RawData:
            names = ("_data",)
        else:
            names = tuple(f.name for f in fields(cls) if f.name not in _PLAIN_FIELDS)
        _DATA_FIELDS[cls] = names
    return names


def masked_event(mask: SecretMask, event: Event) -> Event:
    """`event` with every secret in its payload masked (the same event when none is there)."""
    data = event.data
    if data is None:
        return event
    names = _DATA_FIELDS.get(type(data))
    if names is None:
        names = _data_fields(type(data))
    if not names:
        return event
    if isinstance(data, RawData):
        wire = data.wire()
        masked = mask.value(wire)
        return event if masked is wire else replace(event, data=RawData(masked))
    changes: dict[str, Any] = {}
    for name in names:
        value = getattr(data, name)
        if value is not None:
            new = mask.value(value)
            if new is not value:
                changes[name] = new
    return replace(event, data=replace(data, **changes)) if changes else event  # type: ignore[type-var]


def masked_delta(mask: SecretMask, delta: NodeDelta) -> NodeDelta:
    """`delta` with every secret in it masked (the same delta when none is there)."""
    changes: dict[str, Any] = {}
    for name in ("output", "vars", "error", "interrupt", "resume"):
        value = getattr(delta, name)
        if value is not None:
            new = mask.value(value)
            if new is not value:
                changes[name] = new
    return replace(delta, **changes) if changes else delta


class EventLog(Protocol):
    """Where the scheduler reports: events, and node deltas when the run is checkpointed."""

    checkpointing: bool

    def emit(self, data: EventData, node_id: str | None = None) -> None: ...

    async def save(self, delta: NodeDelta, *, hold: bool = False) -> None: ...

    async def save_started(self, deltas: Sequence[NodeDelta]) -> None: ...

    async def record_item(self, delta: NodeDelta) -> None: ...

    async def flush(self) -> None: ...


class RunJournal:
    """The event log and checkpoint hand-off of a top-level run (see the module docstring)."""

    __slots__ = (
        "run_id",
        "events",
        "record_events",
        "sinks",
        "checkpointer",
        "checkpointing",
        "seq",
        "mask",
        "_unsaved",
        "_lock",
        "_batch",
        "_held",
    )

    def __init__(
        self,
        run_id: str,
        *,
        checkpointer: Checkpointer | None = None,
        sinks: Sequence[EventSink] = (),
        record_events: bool = True,
        mask: SecretMask | None = None,
    ) -> None:
        self.run_id = run_id
        self.events: list[Event] = []
        self.record_events = record_events
        self.sinks = tuple(sinks)
        self.checkpointer = checkpointer
        self.checkpointing = checkpointer is not None
        self.seq = 0
        self.mask = mask  # what leaves the run is masked with it (see the module docstring)
        self._unsaved: list[Event] = []
        # Set once a body records an item: from then on saves may come from the loop/map node's
        # task while the driver saves too, and are taken one at a time (so the checkpointer's
        # cached variables and the batches of events stay in order). None: no cost per save.
        self._lock: asyncio.Lock | None = None
        # A checkpointer that writes several deltas at once: inline nodes' deltas are held back
        # (`save(hold=True)`) until the next durable write (see `BatchCheckpointer`).
        self._batch = checkpointer if isinstance(checkpointer, BatchCheckpointer) else None
        self._held: list[NodeDelta] = []

    def emit(self, data: EventData, node_id: str | None = None) -> None:
        """Number the payload, wrap it in its envelope once and hand it to every sink."""
        self.seq = seq = self.seq + 1
        event = new_instance(Event)  # == Event(seq, data.type, self.run_id, time.time(), node_id, data)
        _set_seq(event, seq)
        _set_type(event, data.type)
        _set_run_id(event, self.run_id)
        _set_ts(event, time.time())
        _set_node_id(event, node_id)
        _set_data(event, data)
        if self.record_events:
            self.events.append(event)
        if self.mask is not None:
            event = masked_event(self.mask, event)
        if self.checkpointing:
            self._unsaved.append(event)
        for sink in self.sinks:
            sink(event)

    def take_unsaved(self) -> list[Event]:
        """The events emitted since the last hand-off to the checkpointer (and forget them)."""
        batch, self._unsaved = self._unsaved, []
        return batch

    async def begin(self, record: RunRecord) -> None:
        if self.checkpointer is not None:
            if self.mask is not None:
                inputs, variables = self.mask.value(record.inputs), self.mask.value(record.variables)
                if inputs is not record.inputs or variables is not record.variables:
                    record = replace(record, inputs=inputs, variables=variables)
            await self.checkpointer.begin(record, self.take_unsaved())

    async def save(self, delta: NodeDelta, *, hold: bool = False) -> None:
        """Hand a delta and the events since the last save to the checkpointer (if any).
        `hold`: the delta of an inline node, which may wait for the next durable write (with a
        `BatchCheckpointer`, while no item saves run concurrently)."""
        if self.checkpointer is not None:
            if hold and self._batch is not None and self._lock is None:
                self._held.append(delta if self.mask is None else masked_delta(self.mask, delta))
            elif self._lock is not None:
                async with self._lock:
                    await self._save(self.checkpointer, delta)
            else:
                await self._save(self.checkpointer, delta)

    async def _save(self, checkpointer: Checkpointer, delta: NodeDelta) -> None:
        if self.mask is not None:
            delta = masked_delta(self.mask, delta)
        if self._held and self._batch is not None:
            held, self._held = self._held, []
            await self._batch.save_batch(self.run_id, [*held, delta], (), self.take_unsaved())
            return
        await checkpointer.save(self.run_id, delta, self.take_unsaved())

    async def flush(self) -> None:
        """Write the held deltas (before the run waits for anything: see `save`)."""
        if self._held and self._batch is not None:
            held, self._held = self._held, []
            await self._batch.save_batch(self.run_id, held, (), self.take_unsaved())

    async def save_started(self, deltas: Sequence[NodeDelta]) -> None:
        """Record attempts about to start (`running` deltas: no user data) with the events since
        the last save (and the held deltas), before they run (see plait.engine.checkpoint)."""
        if self.checkpointer is not None:
            if self._lock is not None:
                async with self._lock:
                    await self._save_started(self.checkpointer, deltas)
            else:
                await self._save_started(self.checkpointer, deltas)

    async def _save_started(self, checkpointer: Checkpointer, deltas: Sequence[NodeDelta]) -> None:
        if self._held and self._batch is not None:
            held, self._held = self._held, []
            await self._batch.save_batch(self.run_id, held, deltas, self.take_unsaved())
            return
        await checkpointer.save_started(self.run_id, deltas, self.take_unsaved())

    async def record_item(self, delta: NodeDelta) -> None:
        """Save a finished loop iteration or map item (see plait.engine.items)."""
        if self.checkpointer is not None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            await self.save(delta)

    async def save_decision(self, record: dict[str, Any]) -> None:
        if self.checkpointer is not None:
            if self.mask is not None:
                record = self.mask.value(record)
            await self.flush()
            await self.checkpointer.save_decision(self.run_id, record, self.take_unsaved())

    async def finish(self, status: RunStatus, outputs: dict[str, Any], error: str | None) -> None:
        if self.checkpointer is not None:
            if self.mask is not None:
                outputs = self.mask.value(outputs)
                error = None if error is None else self.mask.text(error)
            if self._held and self._batch is not None:
                held, self._held = self._held, []
                await self._batch.finish_batch(self.run_id, held, status, outputs, error, self.take_unsaved())
                return
            await self.checkpointer.finish(self.run_id, status, outputs, error, self.take_unsaved())


class BodyJournal:
    """A loop/map body's log: its events go to the enclosing run's, node ids prefixed."""

    __slots__ = ("parent", "prefix", "checkpointing")

    def __init__(self, parent: EventLog, prefix: str) -> None:
        self.parent = parent
        self.prefix = prefix
        self.checkpointing = False

    def emit(self, data: EventData, node_id: str | None = None) -> None:
        if data.type == WAITING:  # the body's node waits through the loop/map node's own `waiting`
            return  # (plait.engine.body_wait): a second one would open a second task
        self.parent.emit(data, self.prefix + node_id if node_id else None)

    async def save(self, delta: NodeDelta, *, hold: bool = False) -> None:
        """Bodies are not checkpointed: their node's delta (with the body's outputs) is."""

    async def flush(self) -> None:
        """Nothing is held here."""

    async def save_started(self, deltas: Sequence[NodeDelta]) -> None:
        """Nor are their starts: a body runs again as a whole with its node."""

    async def record_item(self, delta: NodeDelta) -> None:
        """A finished item of a loop/map inside this body: the run's journal saves it."""
        await self.parent.record_item(delta)


__all__ = ["BodyJournal", "EventLog", "RunJournal", "masked_delta", "masked_event"]
