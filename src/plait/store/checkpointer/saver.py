"""`SqlCheckpointer`: the engine's `Checkpointer` on SQLAlchemy (SQLite or PostgreSQL).

Every call is one transaction and commits before it returns (`transactions.py` on SQLAlchemy,
`sqlite.py` on a SQLite file's writer thread). The live variables of each active run are cached
here so that a node that sets variables writes the new `context` without reading the old one;
`begin` and `load` fill the cache (the run's lease guarantees a single writer per run).

A run executed under a lease is `hold`: its checkpoints are fenced by the lease (see
`plait.store.fencing`), so a process that lost the run writes nothing more to it. A sub-flow's
child run is fenced by its top-level run's lease.

On a SQLite file the writes go through a `SqliteWriter` (one plain sqlite3 connection on its
own thread, with group commit); the store shares its writer with `RunRepo`, so the service's
run-row writes join the same commits. PostgreSQL (asyncpg) uses the async engine with its own
group commit (`plait.store.group_commit`: the checkpoints of concurrent runs share one
transaction); in-memory SQLite uses the async engine, a transaction per call. The paths are
tested alike (`tests/store/test_checkpointer_conformance.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

import plait.store.run_rows as run_rows
from plait.engine.checkpoint import Checkpoint, NodeDelta, RunRecord
from plait.engine.events import Event
from plait.store.blobs import read_blobs
from plait.store.checkpointer import sqlite as sqlite_tx
from plait.store.checkpointer import transactions as sql_tx
from plait.store.db import sqlite_path
from plait.store.fencing import fenced_sqlite
from plait.store.group_commit import GroupCommit, commit_alone
from plait.store.models import Decision, NodeRunRow, RunEvent, table_of
from plait.store.rows import (
    NodeOutputs,
    decision_row,
    delta_row,
    live_vars,
    row_fields,
    row_to_delta,
    row_to_record,
    stored_events,
    with_blobs,
)
from plait.store.sqlite_writer import SqliteWriter

_node_runs = table_of(NodeRunRow)
_events = table_of(RunEvent)
_decisions = table_of(Decision)

# Told of the events a call stored, once committed: (run_id, events). Must not block or raise.
StoredListener = Callable[[str, Sequence[Event]], None]


class SqlCheckpointer:
    """Implements `plait.engine.checkpoint.BatchCheckpointer`; every method commits before it
    returns.

    Pass the store's session factory (or an async engine). Call `await close()` when done (it
    stops the SQLite writer thread it started; `Store.close` does it). `writer`: a SQLite writer
    to share (the store's); `sqlite_writer_thread=False` makes a SQLite file use the async engine
    too (slower; for comparison and tests); `group_commit=False` gives PostgreSQL a transaction per
    call."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession] | AsyncEngine,
        *,
        sqlite_writer_thread: bool = True,
        writer: SqliteWriter | None = None,
        group_commit: bool = True,
    ) -> None:
        if isinstance(sessionmaker, AsyncEngine):
            engine = sessionmaker
        else:
            bind = sessionmaker.kw.get("bind")
            if not isinstance(bind, AsyncEngine):
                raise TypeError("SqlCheckpointer needs a sessionmaker bound to an AsyncEngine")
            engine = bind
        self.engine = engine
        # Called after each commit with the events it stored (a queue worker publishes them to
        # the API servers' streams: plait.workers.events.EventRelay).
        self.listeners: list[StoredListener] = []
        self._vars: dict[str, dict[str, Any]] = {}
        # Runs whose checkpoints are fenced: run id -> (the run whose lease counts, its owner).
        self._fences: dict[str, tuple[str, str]] = {}
        self._owns_writer = False
        self._writer: SqliteWriter | None = None
        # PostgreSQL: concurrent runs' checkpoints share transactions (`group_commit=False`: one
        # transaction per call, for comparison and tests).
        self.group: GroupCommit | None = (
            GroupCommit(engine) if group_commit and engine.dialect.name == "postgresql" else None
        )
        if sqlite_writer_thread:
            if writer is not None:
                self._writer = writer
            else:
                path = sqlite_path(engine.url) if engine.dialect.name == "sqlite" else None
                if path is not None:
                    self._writer = SqliteWriter(str(path))
                    self._owns_writer = True

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None and self._owns_writer:
            await writer.close()

    def hold(self, run_id: str, owner: str) -> None:
        """Fence the run's checkpoints by its lease from now on: each is written only while
        `owner` holds the lease, else it raises `LeaseLost` having written nothing. Until the
        run finishes or is forgotten."""
        self._fences[run_id] = (run_id, owner)

    def holds(self, run_id: str) -> bool:
        """Whether the run's checkpoints are fenced (it executes here and has not finished)."""
        return run_id in self._fences

    async def _commit(
        self, on_writer: Any, on_engine: Any, run_id: str, *args: Any, starting: bool = False
    ) -> Any:
        """One transaction: `on_writer(db, run_id, *args)` on the SQLite writer when there is
        one, else `on_engine(conn, run_id, *args)` on the async engine; fenced when the run is
        held (see `hold`)."""
        fence = self._fences.get(run_id)
        writer = self._writer
        if writer is not None:
            alone = writer.alone(run_id, starting=starting)
            if fence is not None:
                return await writer.run(fenced_sqlite, run_id, *fence, on_writer, *args, alone=alone)
            return await writer.run(on_writer, run_id, *args, alone=alone)
        if self.group is not None:
            return await self.group.run(run_id, fence, on_engine, *args)
        return await commit_alone(self.engine, run_id, fence, on_engine, *args)

    def _stored(self, run_id: str, events: Sequence[Event]) -> None:
        if events:
            for listener in self.listeners:
                listener(run_id, events)

    # -------------------------------------------------------------------------- protocol
    async def begin(self, record: RunRecord, events: Sequence[Event]) -> None:
        """Insert the run, or (restart, resume, a run the service queued) set it running again.

        Existing rows keep their created_at, started_at and live context."""
        run_id = record.run_id
        parent_fence = self._fences.get(record.parent_run_id) if record.parent_run_id else None
        if parent_fence is not None:  # a sub-flow's child: its parent's lease counts
            self._fences[run_id] = parent_fence
        values = run_rows.begin_values(record, events[-1].seq if events else 0, time.time())
        context = await self._commit(sqlite_tx.begin, sql_tx.begin, run_id, values, events, starting=True)
        self._stored(run_id, events)
        live = live_vars(context)
        self._vars[run_id] = live if live is not None else dict(record.variables)

    async def save(self, run_id: str, delta: NodeDelta, events: Sequence[Event]) -> None:
        row = delta_row(run_id, delta, events[-1].seq if events else None, time.time())
        context = merged = None
        if delta.vars:
            live = self._vars.get(run_id)
            if live is not None:
                merged = {**live, **delta.vars}
                context = {"vars": merged}
                # Cached before the write: a save that starts meanwhile (a loop's iteration saved
                # while the driver saves another node, plait.engine.items) merges onto it.
                self._vars[run_id] = merged
        written = await self._commit(sqlite_tx.save, sql_tx.save, run_id, row, events, context, delta.vars)
        self._stored(run_id, events)
        if merged is not None or written is not None:
            self._vars[run_id] = merged if merged is not None else written

    async def save_started(self, run_id: str, deltas: Sequence[NodeDelta], events: Sequence[Event]) -> None:
        """`running` node rows (attempts about to start), with the events since the last save."""
        seq = events[-1].seq if events else None
        now = time.time()
        rows = [delta_row(run_id, delta, seq, now) for delta in deltas]
        await self._commit(sqlite_tx.save_started, sql_tx.save_started, run_id, rows, events)
        self._stored(run_id, events)

    def _batch_rows(
        self, run_id: str, deltas: Sequence[NodeDelta], started: Sequence[NodeDelta], seq: int | None
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None] | None:
        """The `node_runs` rows of a batch and the new live context (None: no variable changed);
        None when a delta changes variables and they are not cached (then save one by one)."""
        now = time.time()
        live = self._vars.get(run_id)
        changed = False
        for delta in deltas:
            if delta.vars:
                if live is None:
                    return None
                live, changed = {**live, **delta.vars}, True
        rows = [delta_row(run_id, delta, seq, now) for delta in (*deltas, *started)]
        if changed:
            assert live is not None
            self._vars[run_id] = live  # before the write, as `save` does
            return rows, {"vars": live}
        return rows, None

    async def save_batch(
        self,
        run_id: str,
        deltas: Sequence[NodeDelta],
        started: Sequence[NodeDelta],
        events: Sequence[Event],
    ) -> None:
        """`BatchCheckpointer.save_batch`: the deltas, then the `running` ones, in one transaction."""
        batch = self._batch_rows(run_id, deltas, started, events[-1].seq if events else None)
        if batch is None:
            for delta in deltas:
                await self.save(run_id, delta, [])
            await self.save_started(run_id, started, events)
            return
        rows, context = batch
        await self._commit(sqlite_tx.save_batch, sql_tx.save_batch, run_id, rows, events, context)
        self._stored(run_id, events)

    async def finish_batch(
        self,
        run_id: str,
        deltas: Sequence[NodeDelta],
        status: str,
        outputs: dict[str, Any] | None,
        error: str | None,
        events: Sequence[Event],
    ) -> None:
        """`BatchCheckpointer.finish_batch`: the deltas, then the run's end, in one transaction."""
        batch = self._batch_rows(run_id, deltas, (), events[-1].seq if events else None)
        if batch is None:
            for delta in deltas:
                await self.save(run_id, delta, [])
            await self.finish(run_id, status, outputs, error, events)
            return
        rows, context = batch
        values = run_rows.finish_values(status, outputs, error, events, time.time())
        try:
            await self._commit(
                sqlite_tx.finish_batch, sql_tx.finish_batch, run_id, rows, context, values, events
            )
        finally:
            self.forget(run_id)
        self._stored(run_id, events)

    async def save_decision(self, run_id: str, decision: dict[str, Any], events: Sequence[Event]) -> None:
        """One edge-LLM decision into `decisions` (served by GET /runs/{id}/decisions), with its events."""
        row = decision_row(run_id, decision, time.time())
        await self._commit(sqlite_tx.save_decision, sql_tx.save_decision, run_id, row, events)
        self._stored(run_id, events)

    async def finish(
        self,
        run_id: str,
        status: str,
        outputs: dict[str, Any] | None,
        error: str | None,
        events: Sequence[Event],
    ) -> None:
        values = run_rows.finish_values(status, outputs, error, events, time.time())
        try:
            await self._commit(sqlite_tx.finish, sql_tx.finish, run_id, values, events)
        finally:
            self.forget(run_id)
        self._stored(run_id, events)

    async def load(self, run_id: str, *, events: bool = True) -> Checkpoint | None:
        """As `Checkpointer.load`; without `events`, `last_seq` comes from the events' index."""
        async with self.engine.connect() as conn:
            run = (
                await conn.execute(select(run_rows.runs_table).where(run_rows.runs_table.c.id == run_id))
            ).first()
            if run is None:
                return None
            deltas = (
                await conn.execute(
                    select(_node_runs).where(_node_runs.c.run_id == run_id).order_by(_node_runs.c.id)
                )
            ).all()
            if events:
                event_rows = (
                    await conn.execute(
                        select(_events).where(_events.c.run_id == run_id).order_by(_events.c.seq)
                    )
                ).all()
                last_seq = event_rows[-1].seq if event_rows else 0
            else:
                event_rows = []
                last_seq = (
                    await conn.execute(select(func.max(_events.c.seq)).where(_events.c.run_id == run_id))
                ).scalar() or 0
            decisions = (
                (
                    await conn.execute(
                        select(_decisions.c.data)
                        .where(_decisions.c.run_id == run_id)
                        .order_by(_decisions.c.step, _decisions.c.id)
                    )
                )
                .scalars()
                .all()
            )
            # Large values are stored once, in `blobs` (see plait.store.blobs).
            blobs = await read_blobs(
                conn, [run.outputs, *(r.output for r in deltas), *(r.data for r in event_rows)]
            )
        if blobs is not None:
            run = with_blobs([run], "outputs", blobs)[0]
            deltas = with_blobs(deltas, "output", blobs)
            event_rows = with_blobs(event_rows, "data", blobs)
        record = row_to_record(run)
        live = live_vars(run.context)
        self._vars[run_id] = live if live is not None else dict(record.variables)
        return Checkpoint(
            record,
            [row_to_delta(r) for r in deltas],
            stored_events(run_id, event_rows, NodeOutputs(deltas), row_fields(run)) if event_rows else [],
            list(decisions),
            last_seq,
        )

    def forget(self, run_id: str) -> None:
        """Drop the cached variables (and the fence) of a run this process no longer executes."""
        self._vars.pop(run_id, None)
        self._fences.pop(run_id, None)
        if self._writer is not None:
            self._writer.ended(run_id)


__all__ = ["SqlCheckpointer"]
