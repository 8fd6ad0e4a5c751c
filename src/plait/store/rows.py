"""Row mapping between the engine's checkpoint records and the store's tables, in one place.

The engine hands the store `Event`s, `NodeDelta`s, edge-LLM decisions and `RunRecord`s; the
tables keep them column by column so that loading gives back exactly what was saved (ports and
input sources come back as tuples, events as typed payloads). The SQLAlchemy transactions, the
raw sqlite3 transactions and the repositories all use these functions, so the two write paths of
the checkpointer cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plait.engine import events as ev
from plait.engine.checkpoint import NodeDelta, RunRecord, input_sources
from plait.engine.events import Event
from plait.store.db import json_dumps

# The JSON columns of `node_runs` (encoded by hand on the raw sqlite3 path).
NODE_RUN_JSON_COLUMNS = ("input", "output", "ports", "vars", "usage", "interrupt", "resume")


def json_or_none(value: Any) -> str | None:
    """A JSON column's value for a raw sqlite3 statement (SQL NULL for None)."""
    return None if value is None else json_dumps(value)


# ------------------------------------------------------------------------------------- events
def event_rows(run_id: str, events: Sequence[Event]) -> list[dict[str, Any]]:
    """`run_events` rows (for SQLAlchemy: the payload stays a Python value)."""
    return [
        {
            "run_id": run_id,
            "seq": e.seq,
            "type": e.type,
            "node_id": e.node_id,
            "data": e.wire_data(),
            "ts": e.ts,
        }
        for e in events
    ]


def sqlite_event_rows(run_id: str, events: Sequence[Event]) -> list[dict[str, Any]]:
    """`event_rows` for a raw sqlite3 statement (the payload as JSON text)."""
    rows = event_rows(run_id, events)
    for row in rows:
        row["data"] = json_or_none(row["data"])
    return rows


def row_to_event(run_id: str, row: Any) -> Event:
    return Event(row.seq, row.type, run_id, row.ts, row.node_id, row.data)


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


def sqlite_delta_row(row: dict[str, Any]) -> dict[str, Any]:
    """A `delta_row` made ready for a raw sqlite3 statement (JSON columns as text), in place."""
    for key in NODE_RUN_JSON_COLUMNS:
        value = row[key]
        if value is not None:
            row[key] = json_dumps(value)
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
    "NODE_RUN_JSON_COLUMNS",
    "decision_row",
    "delta_row",
    "event_rows",
    "finished_usage",
    "json_or_none",
    "live_vars",
    "row_to_delta",
    "row_to_event",
    "row_to_record",
    "sqlite_delta_row",
    "sqlite_event_rows",
]
