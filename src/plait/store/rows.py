"""Row mapping between the engine's checkpoint records and the store's tables, in one place.

The engine hands the store `Event`s, `NodeDelta`s, edge-LLM decisions and `RunRecord`s; the
tables keep them column by column so that loading gives back exactly what was saved (ports and
input sources come back as tuples, events as typed payloads). The SQLAlchemy transactions, the
raw sqlite3 transactions and the repositories all use these functions, so the two write paths of
the checkpointer cannot drift apart.

A value is stored once. A node's output is in its `node_runs` row, so the `node_finished` event
saved with that row keeps `"output_in": "node_runs"` instead of a second copy; a run's inputs and
a completed run's outputs are in its `runs` row, so its `run_started` and `run_finished` events
keep `"inputs_in": "runs"` and `"outputs_in": "runs"`. Reading the events back (`stored_events`)
puts the values in again: what the API and the streams return is the event as the engine emitted
it.

A large value (over 64 KiB of JSON) in `node_runs.output`, `runs.outputs` or an event's payload
is stored once in `blobs` and referred to (see `plait.store.blobs`): the writers pass a
`BlobSink`, the readers a `BlobReader`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Sequence
from types import SimpleNamespace
from typing import Any

from plait.engine import events as ev
from plait.engine.checkpoint import NodeDelta, RunRecord, input_sources
from plait.engine.events import Event
from plait.store.blobs import BlobReader, BlobSink
from plait.store.db import json_dumps

# The JSON columns of `node_runs` (encoded by hand on the raw sqlite3 path).
NODE_RUN_JSON_COLUMNS = ("input", "output", "ports", "vars", "usage", "interrupt", "resume")


def json_or_none(value: Any) -> str | None:
    """A JSON column's value for a raw sqlite3 statement (SQL NULL for None)."""
    return None if value is None else json_dumps(value)


# ------------------------------------------------------------------------------------- events
# Where a value left out of a stored event is (see the module docstring): the event keeps
# `<field>_in` naming the table instead of `<field>`.
OUTPUT_IN = "output_in"  # node_finished: "node_runs", the output of the node run saved with it
IN_NODE_RUNS, IN_RUNS = "node_runs", "runs"
# The run-level events whose value the run row saved with them holds: type -> (field, column).
RUN_ROW_FIELDS: dict[str, str] = {ev.RUN_STARTED: "inputs", ev.RUN_FINISHED: "outputs"}


def event_rows(
    run_id: str,
    events: Sequence[Event],
    *,
    output_of: str | Collection[str] | None = None,
    run_row: str | None = None,
    blobs: BlobSink | None = None,
) -> list[dict[str, Any]]:
    """`run_events` rows (for SQLAlchemy: the payload stays a Python value).

    `blobs`: where a large payload goes (None: it stays inline, for `sqlite_event_rows`, which
    measures the JSON text it encodes). `output_of`: the node (or nodes) whose `ok` delta is saved with these events: its
    `node_finished` refers to that node run's output. `run_row`: the type of the run-level event (`run_started`,
    `run_finished`) whose inputs or outputs the run row saved with them holds."""
    field = RUN_ROW_FIELDS[run_row] if run_row is not None else None
    if isinstance(output_of, str):
        output_of = (output_of,)
    rows = []
    for e in events:
        data = e.wire_data()
        if data is not None:
            if output_of and e.type == ev.NODE_FINISHED and e.node_id in output_of:
                if data.get("ok") and "output" in data:
                    del data["output"]
                    data[OUTPUT_IN] = IN_NODE_RUNS
            elif field is not None and e.type == run_row and data.get(field):
                del data[field]
                data[field + "_in"] = IN_RUNS
            if blobs is not None:
                data = blobs.pack(data)
        rows.append(
            {"run_id": run_id, "seq": e.seq, "type": e.type, "node_id": e.node_id, "data": data, "ts": e.ts}
        )
    return rows


def sqlite_event_rows(
    run_id: str,
    events: Sequence[Event],
    blobs: BlobSink,
    *,
    output_of: str | Collection[str] | None = None,
    run_row: str | None = None,
) -> list[dict[str, Any]]:
    """`event_rows` for a raw sqlite3 statement (the payload as JSON text, large ones in `blobs`)."""
    rows = event_rows(run_id, events, output_of=output_of, run_row=run_row)
    for row in rows:
        data = row["data"]
        if data is not None:
            row["data"] = blobs.pack_text(data, json_dumps(data))
    return rows


def with_blobs(rows: Sequence[Any], column: str, blobs: BlobReader | None) -> Sequence[Any]:
    """`rows` (Core rows or ORM objects) with the references in `column` replaced by their values
    (new plain rows; the given ones are left as they are). None: nothing to replace."""
    if blobs is None:
        return rows
    out: list[Any] = []
    for row in rows:
        value = getattr(row, column)
        found = blobs.value(value)
        if found is value:
            out.append(row)
        else:
            fields = row_fields(row)
            fields[column] = found
            out.append(SimpleNamespace(**fields))
    return out


def row_fields(row: Any) -> dict[str, Any]:
    """The columns of a Core row, an ORM object or a `with_blobs` row, as a new dict."""
    mapping = getattr(row, "_mapping", None)
    if mapping is not None:
        return dict(mapping)
    if isinstance(row, SimpleNamespace):
        return dict(vars(row))
    return {c.key: getattr(row, c.key) for c in row.__table__.columns}


def row_to_event(run_id: str, row: Any) -> Event:
    """The event of a `run_events` row whose payload is complete (see `stored_events`)."""
    return Event(row.seq, row.type, run_id, row.ts, row.node_id, row.data)


def references(rows: Sequence[Any]) -> tuple[int | None, list[str]]:
    """What `stored_events` needs for these event rows: the lowest seq of a `node_finished`
    whose output is in `node_runs` (None: none is), and the run row's columns some refer to."""
    lowest: int | None = None
    columns: list[str] = []
    for row in rows:
        data = row.data
        if type(data) is dict:
            if OUTPUT_IN in data:
                if lowest is None or row.seq < lowest:
                    lowest = row.seq
            else:
                field = RUN_ROW_FIELDS.get(row.type)
                if field is not None and field + "_in" in data and field not in columns:
                    columns.append(field)
    return lowest, columns


class NodeOutputs:
    """The `ok` node runs' outputs of one run, to find the one a `node_finished` event refers to:
    the first `ok` row of its node saved with or after the event (`event_seq` >= its seq)."""

    __slots__ = ("_by_node",)

    def __init__(self, rows: Sequence[Any]) -> None:
        """`rows`: `node_runs` rows (`node_id`, `status`, `event_seq`, `output`) in any order."""
        by_node: dict[str, list[tuple[int, Any]]] = {}
        for r in rows:
            if r.status == "ok" and r.event_seq is not None:
                by_node.setdefault(r.node_id, []).append((r.event_seq, r.output))
        for found in by_node.values():
            found.sort(key=lambda pair: pair[0])
        self._by_node = by_node

    def find(self, node_id: str, seq: int) -> Any:
        found = self._by_node.get(node_id)
        if not found:
            return None
        i = bisect_left(found, seq, key=lambda pair: pair[0])
        return found[i][1] if i < len(found) else None


def stored_events(
    run_id: str,
    rows: Sequence[Any],
    outputs: NodeOutputs | None = None,
    run_row: dict[str, Any] | None = None,
) -> list[Event]:
    """The events of `run_events` rows with the values they refer to put back: `outputs`, the
    run's node outputs; `run_row`, the run row's columns (`references` says which are needed)."""
    events = []
    for row in rows:
        data = row.data
        if type(data) is dict:
            if OUTPUT_IN in data:
                data = dict(data)
                del data[OUTPUT_IN]
                data["output"] = outputs.find(row.node_id, row.seq) if outputs is not None else None
            else:
                field = RUN_ROW_FIELDS.get(row.type)
                if field is not None and field + "_in" in data:
                    data = dict(data)
                    del data[field + "_in"]
                    value = run_row.get(field) if run_row is not None else None
                    data[field] = value if value is not None else {}
        events.append(Event(row.seq, row.type, run_id, row.ts, row.node_id, data))
    return events


def finished_usage(events: Sequence[Event]) -> dict[str, int] | None:
    """The usage a run reported in the last `run_finished` of `events` (None without one)."""
    for e in reversed(events):
        if e.type == ev.RUN_FINISHED and isinstance(e.data, ev.RunFinished):
            return e.data.usage
    return None


# ---------------------------------------------------------------------------------- node runs
def delta_row(run_id: str, delta: NodeDelta, event_seq: int | None, now: float) -> dict[str, Any]:
    """A `node_runs` row holding every `NodeDelta` field (so `row_to_delta` rebuilds it exactly)."""
    return {
        "run_id": run_id,
        "node_id": delta.node_id,
        "status": delta.status,
        "attempt": delta.attempt,
        "input": [list(src) for src in delta.input] if delta.input else None,
        "output": delta.output,
        "ports": list(delta.ports) if delta.ports is not None else None,
        "vars": delta.vars,
        "error": delta.error,
        "usage": delta.usage,
        "interrupt": delta.interrupt,
        "resume": delta.resume,
        "started_at": delta.started_at,
        "duration_ms": delta.duration_ms,
        "reused": delta.reused,
        "event_seq": event_seq,
        "recorded_at": now,
    }


def sqlite_delta_row(row: dict[str, Any], blobs: BlobSink | None = None) -> dict[str, Any]:
    """A `delta_row` made ready for a raw sqlite3 statement (JSON columns as text), in place; a
    large output goes to `blobs`."""
    output = row["output"]
    for key in NODE_RUN_JSON_COLUMNS:
        value = row[key]
        if value is not None:
            row[key] = json_dumps(value)
    if blobs is not None and output is not None:
        row["output"] = blobs.pack_text(output, row["output"])
    return row


def row_to_delta(row: Any) -> NodeDelta:
    return NodeDelta(
        node_id=row.node_id,
        status=row.status,
        output=row.output,
        ports=tuple(row.ports) if row.ports is not None else None,
        vars=row.vars,
        error=row.error,
        attempt=row.attempt,
        started_at=row.started_at,
        duration_ms=row.duration_ms,
        usage=row.usage,
        interrupt=row.interrupt,
        resume=row.resume,
        reused=row.reused,
        input=input_sources(row.input),
    )


# ---------------------------------------------------------------------------------- decisions
def decision_row(run_id: str, decision: dict[str, Any], now: float) -> dict[str, Any]:
    """A `decisions` row: the step, the node whose completion led to it (`at`), the whole record."""
    return {
        "run_id": run_id,
        "step": int(decision["step"]),
        "node_id": decision.get("at"),
        "data": decision,
        "created_at": now,
    }


# --------------------------------------------------------------------------------------- runs
def row_to_record(row: Any) -> RunRecord:
    """The engine's `RunRecord` of a `runs` row."""
    return RunRecord(
        run_id=row.id,
        flow_id=row.flow_id,
        inputs=row.inputs or {},
        variables=row.variables or {},
        created_at=row.created_at,
        parent_run_id=row.parent_run_id,
        status=row.status,
        outputs=row.outputs,
        error=row.error,
    )


def live_vars(context: Any) -> dict[str, Any] | None:
    """The live variables kept in a run's `context` column (None when it holds none)."""
    if isinstance(context, dict):
        found = context.get("vars")
        return dict(found) if isinstance(found, dict) else None
    return None


__all__ = [
    "IN_NODE_RUNS",
    "IN_RUNS",
    "NODE_RUN_JSON_COLUMNS",
    "OUTPUT_IN",
    "RUN_ROW_FIELDS",
    "NodeOutputs",
    "decision_row",
    "delta_row",
    "event_rows",
    "finished_usage",
    "json_or_none",
    "live_vars",
    "row_to_delta",
    "row_to_event",
    "references",
    "row_fields",
    "row_to_record",
    "sqlite_delta_row",
    "sqlite_event_rows",
    "stored_events",
    "with_blobs",
]
