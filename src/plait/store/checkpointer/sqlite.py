"""The checkpointer's transactions on the SQLite writer's raw sqlite3 connection: the same steps
as `transactions.py`, with SQL compiled once from the same tables and JSON encoded here. The
writer runs each function inside its (group-commit) transaction; see `plait.store.sqlite_writer`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import bindparam, insert

import plait.store.run_rows_sqlite as run_rows_sqlite
from plait.engine import events as ev
from plait.engine.events import Event
from plait.store.blobs import BlobSink, insert_statement
from plait.store.db import json_dumps
from plait.store.models import Decision, NodeRunRow, RunEvent, table_of
from plait.store.rows import sqlite_delta_row, sqlite_event_rows
from plait.store.run_rows_sqlite import compile_sql

_node_runs = table_of(NodeRunRow)
_events = table_of(RunEvent)
_decisions = table_of(Decision)
_SQL_INSERT_NODE_RUN = compile_sql(
    insert(_node_runs).values({c.name: bindparam(c.name) for c in _node_runs.c if c.name != "id"})
)
_SQL_INSERT_EVENT = compile_sql(insert(_events).values({c.name: bindparam(c.name) for c in _events.c}))
_SQL_INSERT_DECISION = compile_sql(
    insert(_decisions).values({c.name: bindparam(c.name) for c in _decisions.c if c.name != "id"})
)
_SQL_INSERT_BLOB = compile_sql(
    insert_statement("sqlite").values(
        {c: bindparam(c) for c in ("key", "data", "size", "refs", "created_at")}
    )
)


def _add_blobs(db: sqlite3.Connection, blobs: BlobSink) -> None:
    """The large values of this transaction (see `plait.store.blobs`), each stored once."""
    if blobs:
        db.executemany(_SQL_INSERT_BLOB, blobs.rows())


def _add_events(
    db: sqlite3.Connection,
    run_id: str,
    events: Sequence[Event],
    *,
    output_of: str | Collection[str] | None = None,
    run_row: str | None = None,
) -> None:
    if events:
        blobs = BlobSink()
        rows = sqlite_event_rows(run_id, events, blobs, output_of=output_of, run_row=run_row)
        _add_blobs(db, blobs)
        db.executemany(_SQL_INSERT_EVENT, rows)


def begin(db: sqlite3.Connection, run_id: str, values: dict[str, Any], events: Sequence[Event]) -> Any:
    context = run_rows_sqlite.begin(db, values)
    _add_events(db, run_id, events, run_row=ev.RUN_STARTED)
    return context


def save(
    db: sqlite3.Connection,
    run_id: str,
    row: dict[str, Any],
    events: Sequence[Event],
    context: dict[str, Any] | None,
    var_changes: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """As `transactions.save`."""
    output_of = row["node_id"] if row["status"] == "ok" else None
    blobs = BlobSink()
    db.execute(_SQL_INSERT_NODE_RUN, sqlite_delta_row(row, blobs))
    _add_blobs(db, blobs)
    _add_events(db, run_id, events, output_of=output_of)
    live = None
    if context is None and var_changes:
        live = run_rows_sqlite.read_vars(db, run_id)
        live.update(var_changes)
        context = {"vars": live}
    if context is not None:
        run_rows_sqlite.save_context(db, run_id, context, events[-1].seq if events else None)
    return live


def save_started(
    db: sqlite3.Connection, run_id: str, rows: Sequence[dict[str, Any]], events: Sequence[Event]
) -> None:
    """As `transactions.save_started`."""
    db.executemany(_SQL_INSERT_NODE_RUN, [sqlite_delta_row(row) for row in rows])
    _add_events(db, run_id, events)


def _add_node_runs(db: sqlite3.Connection, rows: Sequence[dict[str, Any]]) -> None:
    blobs = BlobSink()
    encoded = [sqlite_delta_row(dict(row), blobs) for row in rows]
    _add_blobs(db, blobs)
    db.executemany(_SQL_INSERT_NODE_RUN, encoded)


def save_batch(
    db: sqlite3.Connection,
    run_id: str,
    rows: Sequence[dict[str, Any]],
    events: Sequence[Event],
    context: dict[str, Any] | None,
) -> None:
    """As `transactions.save_batch`."""
    _add_node_runs(db, rows)
    _add_events(db, run_id, events, output_of={r["node_id"] for r in rows if r["status"] == "ok"})
    if context is not None:
        run_rows_sqlite.save_context(db, run_id, context, events[-1].seq if events else None)


def finish_batch(
    db: sqlite3.Connection,
    run_id: str,
    rows: Sequence[dict[str, Any]],
    context: dict[str, Any] | None,
    values: dict[str, Any],
    events: Sequence[Event],
) -> None:
    """As `transactions.finish_batch`."""
    if rows:
        _add_node_runs(db, rows)
    if context is not None:
        run_rows_sqlite.save_context(db, run_id, context, None)
    output_of = {r["node_id"] for r in rows if r["status"] == "ok"}
    _add_events(db, run_id, events, output_of=output_of, run_row=ev.RUN_FINISHED)
    blobs = BlobSink()
    outputs = values["outputs"]
    if outputs is not None:
        values = {**values, "outputs": blobs.pack(outputs)}
        _add_blobs(db, blobs)
    run_rows_sqlite.finish(db, run_id, values)


def save_decision(db: sqlite3.Connection, run_id: str, row: dict[str, Any], events: Sequence[Event]) -> None:
    db.execute(_SQL_INSERT_DECISION, {**row, "data": json_dumps(row["data"])})
    if events:
        _add_events(db, run_id, events)
        run_rows_sqlite.save_context(db, run_id, None, events[-1].seq)


def finish(db: sqlite3.Connection, run_id: str, values: dict[str, Any], events: Sequence[Event]) -> None:
    _add_events(db, run_id, events, run_row=ev.RUN_FINISHED)
    blobs = BlobSink()
    outputs = values["outputs"]
    if outputs is not None:
        values = {**values, "outputs": blobs.pack(outputs)}
        _add_blobs(db, blobs)
    run_rows_sqlite.finish(db, run_id, values)


__all__ = ["begin", "finish", "finish_batch", "save", "save_batch", "save_decision", "save_started"]
