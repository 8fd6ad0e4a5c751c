"""The checkpointer's transactions on SQLAlchemy (PostgreSQL, in-memory SQLite, or a SQLite file
without the writer thread): one function per protocol call, each run in one transaction on a
synchronous `Connection` (`AsyncConnection.run_sync`).

Hot path (`save`, once per node transition): at most three statements and no SELECT: INSERT the
`node_runs` row, bulk INSERT the events (an `ok` node's `node_finished` without the output its row
holds, see `plait.store.rows`), UPDATE the run row when the node changed variables (and, for a large output only, one INSERT
into `blobs`, see `plait.store.blobs`). The
caller passes the new live context when it knows it (see `SqlCheckpointer`); without it, the
stored one is read first. `sqlite.py` holds the same transactions for the raw sqlite3 path.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy.engine import Connection

import plait.store.run_rows as run_rows
from plait.engine import events as ev
from plait.engine.events import Event
from plait.store.blobs import BlobSink, insert_statement
from plait.store.models import Decision, NodeRunRow, RunEvent, table_of
from plait.store.rows import event_rows, live_vars

_insert_node_run = insert(table_of(NodeRunRow))
_insert_events = insert(table_of(RunEvent))
_insert_decision = insert(table_of(Decision))


def add_blobs(conn: Connection, blobs: BlobSink) -> None:
    """The large values of this transaction (see `plait.store.blobs`), each stored once."""
    if blobs:
        conn.execute(insert_statement(conn.dialect.name), blobs.rows())


def _add_events(
    conn: Connection,
    run_id: str,
    events: Sequence[Event],
    *,
    output_of: str | Collection[str] | None = None,
    run_row: str | None = None,
) -> None:
    if events:
        blobs = BlobSink()
        rows = event_rows(run_id, events, output_of=output_of, run_row=run_row, blobs=blobs)
        add_blobs(conn, blobs)
        conn.execute(_insert_events, rows)


def begin(conn: Connection, run_id: str, values: dict[str, Any], events: Sequence[Event]) -> Any:
    """`run_rows.begin_run` plus the first events; returns the run's live context."""
    context = conn.execute(*run_rows.begin_run_params(conn.dialect.name, values)).scalar_one()
    _add_events(conn, run_id, events, run_row=ev.RUN_STARTED)
    return context


def save(
    conn: Connection,
    run_id: str,
    row: dict[str, Any],
    events: Sequence[Event],
    context: dict[str, Any] | None,
    var_changes: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """`context` is the new live context when the caller knows it; `var_changes` without a
    `context` means it must be read first (cache miss). Returns the live vars it wrote, if any."""
    blobs = BlobSink()
    output = row["output"]
    if output is not None:
        row = {**row, "output": blobs.pack(output)}
        add_blobs(conn, blobs)
    conn.execute(_insert_node_run, row)
    _add_events(conn, run_id, events, output_of=row["node_id"] if row["status"] == "ok" else None)
    # The run row changes only with the live context; `last_seq` rides along (the event log is
    # what counts; `finish` sets it for good), so a node that sets no variable writes no run row.
    live = None
    if context is None and var_changes:
        live = live_vars(conn.execute(run_rows.read_context(run_id)).scalar()) or {}
        live.update(var_changes)
        context = {"vars": live}
    if context is not None:
        conn.execute(run_rows.save_context(run_id, context, events[-1].seq if events else None))
    return live


def save_started(
    conn: Connection, run_id: str, rows: Sequence[dict[str, Any]], events: Sequence[Event]
) -> None:
    """`running` node rows (attempts about to start) and the events since the last save."""
    conn.execute(_insert_node_run, list(rows))
    _add_events(conn, run_id, events)


def save_batch(
    conn: Connection,
    run_id: str,
    rows: Sequence[dict[str, Any]],
    events: Sequence[Event],
    context: dict[str, Any] | None,
) -> None:
    """Several `node_runs` rows in save order (finished inline nodes, then the `running` rows of
    the attempts about to start) with the events since the last save; `context`: the live
    context when one of them changed variables (the caller knows it: no read)."""
    blobs = BlobSink()
    rows = [row if row["output"] is None else {**row, "output": blobs.pack(row["output"])} for row in rows]
    add_blobs(conn, blobs)
    conn.execute(_insert_node_run, list(rows))
    _add_events(conn, run_id, events, output_of={r["node_id"] for r in rows if r["status"] == "ok"})
    if context is not None:
        conn.execute(run_rows.save_context(run_id, context, events[-1].seq if events else None))


def finish_batch(
    conn: Connection,
    run_id: str,
    rows: Sequence[dict[str, Any]],
    context: dict[str, Any] | None,
    values: dict[str, Any],
    events: Sequence[Event],
) -> None:
    """`save_batch` of finished inline nodes (their events go with the run's end), then `finish`."""
    if rows:
        blobs = BlobSink()
        rows = [
            row if row["output"] is None else {**row, "output": blobs.pack(row["output"])} for row in rows
        ]
        add_blobs(conn, blobs)
        conn.execute(_insert_node_run, list(rows))
    if context is not None:
        conn.execute(run_rows.save_context(run_id, context, None))
    output_of = {r["node_id"] for r in rows if r["status"] == "ok"}
    _add_events(conn, run_id, events, output_of=output_of, run_row=ev.RUN_FINISHED)
    outputs = values["outputs"]
    if outputs is not None:
        blobs = BlobSink()
        values = {**values, "outputs": blobs.pack(outputs)}
        add_blobs(conn, blobs)
    conn.execute(*run_rows.finish_run_params(run_id, values))


def save_decision(conn: Connection, run_id: str, row: dict[str, Any], events: Sequence[Event]) -> None:
    conn.execute(_insert_decision, row)
    if events:
        _add_events(conn, run_id, events)
        conn.execute(run_rows.save_context(run_id, None, events[-1].seq))


def finish(conn: Connection, run_id: str, values: dict[str, Any], events: Sequence[Event]) -> None:
    _add_events(conn, run_id, events, run_row=ev.RUN_FINISHED)
    outputs = values["outputs"]
    if outputs is not None:
        blobs = BlobSink()
        values = {**values, "outputs": blobs.pack(outputs)}
        add_blobs(conn, blobs)
    conn.execute(*run_rows.finish_run_params(run_id, values))


__all__ = ["begin", "finish", "finish_batch", "save", "save_batch", "save_decision", "save_started"]
