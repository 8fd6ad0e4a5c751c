"""`SqlCheckpointer`: the engine's `Checkpointer` on SQLAlchemy (SQLite or PostgreSQL).

Hot path (`save`, once per node transition): one transaction of at most three statements and no
SELECT: INSERT the `node_runs` row (every `NodeDelta` field, so `load` rebuilds the delta exactly),
bulk INSERT the events into `run_events`, UPDATE the run's `last_seq` (and `context` when the node
changed variables). The live variables of each active run are cached here so that the new
`context` is written without reading the old one; `begin` and `load` fill the cache (the run's
lease guarantees a single writer per run).

On a SQLite file the writes (`begin`, `save`, `finish`) go through one plain `sqlite3` connection
on a dedicated thread, with SQL compiled once from the same SQLAlchemy tables: a checkpoint is one
hand-off to that thread (aiosqlite would need about a dozen, one per cursor call, and SQLAlchemy's
per-statement overhead is several times SQLite's own cost here), and the checkpoint writes of
concurrent runs in this process queue up instead of contending for SQLite's write lock; the
thread commits everything queued in one transaction (group commit, see `_SqliteWriter`). The
service's run-row writes (`create_run`, `release_lease`) go the same way.
PostgreSQL (asyncpg) and in-memory SQLite use the async engine. Both paths are tested alike.
"""

from __future__ import annotations

import asyncio
import json
import queue
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, case, false, func, insert, literal_column, null, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from plait.engine.checkpoint import Checkpoint, NodeDelta, RunRecord
from plait.engine.events import RUN_FINISHED, Event
from plait.store.db import apply_sqlite_pragmas, json_dumps, sqlite_path
from plait.store.models import Decision, NodeRunRow, Run, RunEvent

TERMINAL = frozenset({"completed", "failed", "cancelled"})

_runs = Run.__table__
_node_runs = NodeRunRow.__table__
_events = RunEvent.__table__
_insert_node_run = insert(_node_runs)
_insert_events = insert(_events)
_decisions = Decision.__table__


def event_rows(run_id: str, events: Sequence[Event]) -> list[dict[str, Any]]:
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


def delta_row(run_id: str, delta: NodeDelta, event_seq: int | None, now: float) -> dict[str, Any]:
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
        input=tuple(tuple(src) for src in row.input) if row.input else None,  # type: ignore[misc]
    )


def row_to_event(run_id: str, row: Any) -> Event:
    return Event(row.seq, row.type, run_id, row.ts, row.node_id, row.data)


# ------------------------------------------------------------------ transaction bodies (sync)
def _begin_tx(conn: Connection, record: RunRecord, events: Sequence[Event], now: float) -> Any:
    dialect = conn.dialect.name
    if dialect == "postgresql":
        stmt: Any = postgresql.insert(_runs)
        greatest: Any = func.greatest
    elif dialect == "sqlite":
        stmt = sqlite.insert(_runs)
        greatest = func.max
    else:
        raise NotImplementedError(f"SqlCheckpointer supports SQLite and PostgreSQL, not {dialect!r}")
    stmt = stmt.values(
        id=record.run_id,
        flow_id=record.flow_id,
        status="running",
        inputs=record.inputs,
        variables=record.variables,
        context={"vars": record.variables},
        parent_run_id=record.parent_run_id,
        created_at=record.created_at,
        started_at=now,
        last_seq=events[-1].seq if events else 0,
    )
    ex = stmt.excluded
    stmt = stmt.on_conflict_do_update(
        index_elements=[_runs.c.id],
        set_={
            "flow_id": ex.flow_id,
            "status": "running",
            "inputs": ex.inputs,
            "variables": ex.variables,
            "context": func.coalesce(_runs.c.context, ex.context),
            "parent_run_id": func.coalesce(ex.parent_run_id, _runs.c.parent_run_id),
            "started_at": func.coalesce(_runs.c.started_at, ex.started_at),
            "finished_at": None,
            "outputs": None,
            "error": None,
            "last_seq": greatest(_runs.c.last_seq, ex.last_seq),
        },
    ).returning(_runs.c.context)
    context = conn.execute(stmt).scalar_one()
    if events:
        conn.execute(_insert_events, event_rows(record.run_id, events))
    return context


def _save_tx(
    conn: Connection,
    run_id: str,
    row: dict[str, Any],
    events: Sequence[Event],
    context: dict[str, Any] | None,
    var_changes: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """`context` is the new live context when the caller knows it; `var_changes` without a
    `context` means it must be read first (cache miss). Returns the live vars it wrote, if any."""
    conn.execute(_insert_node_run, row)
    if events:
        conn.execute(_insert_events, event_rows(run_id, events))
    # The run row changes only with the live context; `last_seq` rides along (the event log is
    # what counts; `finish` sets it for good), so a node that sets no variable writes no run row.
    live = None
    if context is None and var_changes:
        stored = conn.execute(select(_runs.c.context).where(_runs.c.id == run_id)).scalar()
        live = dict((stored or {}).get("vars") or {}) if isinstance(stored, dict) else {}
        live.update(var_changes)
        context = {"vars": live}
    if context is not None:
        values: dict[str, Any] = {"context": context}
        if events:
            values["last_seq"] = events[-1].seq
        conn.execute(update(_runs).where(_runs.c.id == run_id).values(values))
    return live


def decision_row(run_id: str, decision: dict[str, Any], now: float) -> dict[str, Any]:
    """A `decisions` row: the step, the node whose completion led to it (`at`), the whole record."""
    return {
        "run_id": run_id,
        "step": int(decision["step"]),
        "node_id": decision.get("at"),
        "data": decision,
        "created_at": now,
    }


def _decision_tx(conn: Connection, run_id: str, row: dict[str, Any], events: Sequence[Event]) -> None:
    conn.execute(insert(_decisions), row)
    if events:
        conn.execute(_insert_events, event_rows(run_id, events))
        conn.execute(update(_runs).where(_runs.c.id == run_id).values(last_seq=events[-1].seq))


def _finish_tx(conn: Connection, run_id: str, values: dict[str, Any], events: Sequence[Event]) -> None:
    if events:
        conn.execute(_insert_events, event_rows(run_id, events))
    conn.execute(update(_runs).where(_runs.c.id == run_id).values(values))


# ------------------------------------------------------------------ SQLite writer thread
_NAMED = sqlite.dialect(paramstyle="named")


def _sql(stmt: Any) -> str:
    return str(stmt.compile(dialect=_NAMED))


_NODE_RUN_JSON = ("input", "output", "ports", "vars", "usage", "interrupt", "resume")
_SQL_INSERT_NODE_RUN = _sql(
    insert(_node_runs).values({c.name: bindparam(c.name) for c in _node_runs.c if c.name != "id"})
)
_SQL_INSERT_EVENT = _sql(insert(_events).values({c.name: bindparam(c.name) for c in _events.c}))
_SQL_INSERT_DECISION = _sql(
    insert(_decisions).values({c.name: bindparam(c.name) for c in _decisions.c if c.name != "id"})
)
_SQL_SAVE_RUN = _sql(
    update(_runs)
    .where(_runs.c.id == bindparam("run_id"))
    .values(
        last_seq=func.coalesce(bindparam("last_seq"), _runs.c.last_seq),
        context=func.coalesce(bindparam("context"), _runs.c.context),
    )
)
_SQL_RUN_CONTEXT = _sql(select(_runs.c.context).where(_runs.c.id == bindparam("run_id")))
_BEGIN_COLUMNS = (
    "id",
    "flow_id",
    "status",
    "inputs",
    "variables",
    "context",
    "parent_run_id",
    "created_at",
    "started_at",
    "last_seq",
)


def _sqlite_begin_sql() -> str:
    values: dict[str, Any] = {c: bindparam(c) for c in _BEGIN_COLUMNS}
    values["cancel_requested"] = false()  # a Python-side default would become one more parameter
    stmt = sqlite.insert(_runs).values(values)
    ex = stmt.excluded
    return _sql(
        stmt.on_conflict_do_update(
            index_elements=[_runs.c.id],
            set_={
                "flow_id": ex.flow_id,
                "status": ex.status,
                "inputs": ex.inputs,
                "variables": ex.variables,
                "context": func.coalesce(_runs.c.context, ex.context),
                "parent_run_id": func.coalesce(ex.parent_run_id, _runs.c.parent_run_id),
                "started_at": func.coalesce(_runs.c.started_at, ex.started_at),
                "finished_at": null(),
                "outputs": null(),
                "error": null(),
                "last_seq": func.max(_runs.c.last_seq, ex.last_seq),
            },
        ).returning(_runs.c.context)
    )


_SQL_BEGIN = _sqlite_begin_sql()
_SQL_FINISH = _sql(
    update(_runs)
    .where(_runs.c.id == bindparam("run_id"))
    .values(
        status=bindparam("status"),
        outputs=bindparam("outputs"),
        error=bindparam("error"),
        finished_at=bindparam("finished_at"),
        last_seq=func.coalesce(bindparam("last_seq"), _runs.c.last_seq),
        usage=func.coalesce(bindparam("usage"), _runs.c.usage),
        # A finished run holds no lease (finish time set = terminal); a waiting one keeps it
        # until its process releases it.
        lease_owner=case((bindparam("finished_at").is_(None), _runs.c.lease_owner), else_=null()),
        lease_until=case((bindparam("finished_at").is_(None), _runs.c.lease_until), else_=null()),
    )
)


_CREATE_COLUMNS = (
    "id",
    "flow_id",
    "version",
    "status",
    "inputs",
    "variables",
    "parent_run_id",
    "lease_owner",
    "lease_until",
    "created_at",
    "document",
)
_SQL_CREATE_RUN = _sql(
    insert(_runs).values(
        {
            **{c: bindparam(c) for c in _CREATE_COLUMNS},
            "cancel_requested": false(),
            "last_seq": literal_column("0"),
        }
    )
)
_SQL_RELEASE_LEASE = _sql(
    update(_runs)
    .where(_runs.c.id == bindparam("run_id"), _runs.c.lease_owner == bindparam("owner"))
    .values(lease_owner=null(), lease_until=null())
)


def _create_run_values(
    run_id: str,
    flow_id: str,
    inputs: dict[str, Any] | None,
    version: int | None,
    status: str,
    parent_run_id: str | None,
    variables: dict[str, Any] | None,
    lease_owner: str | None,
    lease_until: float | None,
    created_at: float,
    document: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": run_id,
        "flow_id": flow_id,
        "version": version,
        "status": status,
        "inputs": inputs or {},
        "variables": variables or {},
        "parent_run_id": parent_run_id,
        "lease_owner": lease_owner,
        "lease_until": lease_until,
        "created_at": created_at,
        "document": document,
    }


def _raw_create_run(db: sqlite3.Connection, values: dict[str, Any]) -> None:
    params = dict(values)
    params["inputs"] = json_dumps(params["inputs"])
    params["variables"] = json_dumps(params["variables"])
    params["document"] = _j(params["document"])
    db.execute(_SQL_CREATE_RUN, params)


def _create_run_tx(conn: Connection, values: dict[str, Any]) -> None:
    conn.execute(insert(_runs).values(values))


def _raw_release_lease(db: sqlite3.Connection, run_id: str, owner: str) -> bool:
    return db.execute(_SQL_RELEASE_LEASE, {"run_id": run_id, "owner": owner}).rowcount > 0


def _release_lease_tx(conn: Connection, run_id: str, owner: str) -> bool:
    stmt = (
        update(_runs)
        .where(_runs.c.id == run_id, _runs.c.lease_owner == owner)
        .values(lease_owner=None, lease_until=None)
    )
    return bool(conn.execute(stmt).rowcount)


def _j(value: Any) -> str | None:
    return None if value is None else json_dumps(value)


def _raw_event_rows(run_id: str, events: Sequence[Event]) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run_id,
            "seq": e.seq,
            "type": e.type,
            "node_id": e.node_id,
            "data": _j(e.wire_data()),
            "ts": e.ts,
        }
        for e in events
    ]


def _raw_begin(db: sqlite3.Connection, record: RunRecord, events: Sequence[Event], now: float) -> Any:
    params = {
        "id": record.run_id,
        "flow_id": record.flow_id,
        "status": "running",
        "inputs": json_dumps(record.inputs),
        "variables": json_dumps(record.variables),
        "context": json_dumps({"vars": record.variables}),
        "parent_run_id": record.parent_run_id,
        "created_at": record.created_at,
        "started_at": now,
        "last_seq": events[-1].seq if events else 0,
    }
    (context,) = db.execute(_SQL_BEGIN, params).fetchone()
    if events:
        db.executemany(_SQL_INSERT_EVENT, _raw_event_rows(record.run_id, events))
    return None if context is None else json.loads(context)


def _raw_save(
    db: sqlite3.Connection,
    run_id: str,
    row: dict[str, Any],
    events: Sequence[Event],
    context: dict[str, Any] | None,
    var_changes: dict[str, Any] | None,
) -> dict[str, Any] | None:
    for key in _NODE_RUN_JSON:
        value = row[key]
        if value is not None:
            row[key] = json_dumps(value)
    db.execute(_SQL_INSERT_NODE_RUN, row)
    if events:
        db.executemany(_SQL_INSERT_EVENT, _raw_event_rows(run_id, events))
    live = None
    if context is None and var_changes:
        stored = db.execute(_SQL_RUN_CONTEXT, {"run_id": run_id}).fetchone()
        parsed = json.loads(stored[0]) if stored and stored[0] else None
        live = dict(parsed.get("vars") or {}) if isinstance(parsed, dict) else {}
        live.update(var_changes)
        context = {"vars": live}
    if context is not None:  # see _save_tx
        db.execute(
            _SQL_SAVE_RUN,
            {"run_id": run_id, "last_seq": events[-1].seq if events else None, "context": _j(context)},
        )
    return live


def _raw_decision(db: sqlite3.Connection, run_id: str, row: dict[str, Any], events: Sequence[Event]) -> None:
    db.execute(_SQL_INSERT_DECISION, {**row, "data": json_dumps(row["data"])})
    if events:
        db.executemany(_SQL_INSERT_EVENT, _raw_event_rows(run_id, events))
        db.execute(_SQL_SAVE_RUN, {"run_id": run_id, "last_seq": events[-1].seq, "context": None})


def _raw_finish(db: sqlite3.Connection, run_id: str, values: dict[str, Any], events: Sequence[Event]) -> None:
    if events:
        db.executemany(_SQL_INSERT_EVENT, _raw_event_rows(run_id, events))
    db.execute(
        _SQL_FINISH,
        {
            "run_id": run_id,
            "status": values["status"],
            "outputs": _j(values["outputs"]),
            "error": values["error"],
            "finished_at": values.get("finished_at"),
            "last_seq": values.get("last_seq"),
            "usage": _j(values.get("usage")),
        },
    )


class _SqliteWriter:
    """One `sqlite3` connection used from one thread, with group commit.

    Every call is queued; the thread takes all the calls queued so far and runs them in ONE
    `BEGIN IMMEDIATE` ... `COMMIT` transaction (the write lock is taken up front, waiting up to
    the busy timeout), each inside its own SAVEPOINT so that a failing call is rolled back alone
    and raises to its caller only. Callers are answered after the COMMIT returned: every call is
    durable when it returns, as with one transaction per call, but concurrent runs share the
    commit (and its fsync) instead of queueing one fsync each.

    A call made by a run that is alone (the checkpointer's count of active runs) while no other
    call is in flight runs on the caller's thread instead, as a synchronous saver would: the hand-off to the
    thread and back costs more than the SQL. It never waits: when the connection is busy or
    another connection holds SQLite's write lock, the call is queued as usual (waiting on the event
    loop thread could deadlock with an aiosqlite transaction that needs the loop to commit)."""

    MAX_BATCH = 256

    def __init__(self, path: str) -> None:
        self.path = path
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._db: sqlite3.Connection | None = None
        self._busy_ms = 0
        self._in_flight = 0  # queued calls not answered yet (event loop thread only)
        self._lock = threading.Lock()  # held while the connection runs a batch or an inline call
        self._thread: threading.Thread | None = None  # started by the first queued call
        self._closed = False

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            apply_sqlite_pragmas(db)
            self._busy_ms = int(db.execute("PRAGMA busy_timeout").fetchone()[0])
            self._db = db
        return self._db

    def _try_inline(self, fn: Any, args: tuple[Any, ...]) -> tuple[bool, Any]:
        """(True, result) if the call ran and committed here; (False, None) if it must be queued."""
        if not self._lock.acquire(blocking=False):
            return False, None
        try:
            if not self._queue.empty():
                return False, None
            db = self._connection()
            db.execute("PRAGMA busy_timeout=0")
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:  # another connection writes: queue the call
                return False, None
            finally:
                db.execute(f"PRAGMA busy_timeout={self._busy_ms}")
            try:
                result = fn(db, *args)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            return True, result
        finally:
            self._lock.release()

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                break
            batch = [job]
            stop = False
            while len(batch) < self.MAX_BATCH:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    stop = True
                    break
                batch.append(job)
            with self._lock:
                self._run_batch(batch)
            if stop:
                break
        if self._db is not None:
            self._db.close()
            self._db = None

    def _run_batch(self, batch: list[Any]) -> None:
        outcomes: list[tuple[bool, Any]] = []
        try:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                for fn, args, _loop, _future in batch:
                    if len(batch) == 1:
                        outcomes.append((True, fn(db, *args)))
                        continue
                    db.execute("SAVEPOINT plait_call")
                    try:
                        result = fn(db, *args)
                    except Exception as exc:  # noqa: BLE001 - handed to its caller
                        db.execute("ROLLBACK TO plait_call")
                        db.execute("RELEASE plait_call")
                        outcomes.append((False, exc))
                    else:
                        db.execute("RELEASE plait_call")
                        outcomes.append((True, result))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except BaseException as exc:  # noqa: BLE001 - nothing of the batch was committed
            outcomes = [(False, exc)] * len(batch)
        for (_fn, _args, loop, future), (ok, value) in zip(batch, outcomes, strict=True):
            try:
                loop.call_soon_threadsafe(_settle, future, ok, value)
            except RuntimeError:  # the caller's loop is closed
                pass

    async def run(self, fn: Any, *args: Any, alone: bool = False) -> Any:
        """Run `fn(connection, *args)` in a committed transaction. `alone`: the caller knows of no
        other writer here (one active run); with no call in flight either, it runs inline."""
        if self._closed:
            raise RuntimeError("the SQLite writer is closed")
        if alone and self._in_flight == 0:  # nothing to group this call with
            done, result = self._try_inline(fn, args)
            if done:
                return result
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="plait-sqlite-writer", daemon=True)
            self._thread.start()
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._in_flight += 1
        try:
            self._queue.put((fn, args, loop, future))
            return await future
        finally:
            self._in_flight -= 1

    async def close(self) -> None:
        self._closed = True
        if self._thread is not None:
            self._queue.put(None)
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join)


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class SqlCheckpointer:
    """Implements `plait.engine.checkpoint.Checkpointer`; every method commits before it returns.

    Pass the store's session factory (or an async engine). Call `await close()` when done (it
    stops the SQLite writer thread; `Store.close` does it). `sqlite_writer_thread=False` makes a
    SQLite file use the async engine too (slower; for comparison and tests)."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession] | AsyncEngine,
        *,
        sqlite_writer_thread: bool = True,
    ) -> None:
        if isinstance(sessionmaker, AsyncEngine):
            engine = sessionmaker
        else:
            bind = sessionmaker.kw.get("bind")
            if not isinstance(bind, AsyncEngine):
                raise TypeError("SqlCheckpointer needs a sessionmaker bound to an AsyncEngine")
            engine = bind
        self.engine = engine
        self._vars: dict[str, dict[str, Any]] = {}
        self._active: set[str] = set()  # runs created or begun here and not finished (`_alone`)
        self._writer: _SqliteWriter | None = None
        path = sqlite_path(engine.url) if engine.dialect.name == "sqlite" else None
        if sqlite_writer_thread and path is not None:
            self._writer = _SqliteWriter(str(path))

    async def close(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            await writer.close()

    def _alone(self, run_id: str, *, starting: bool = False) -> bool:
        """True when no run but `run_id` is active here: its writes have nothing to be
        group-committed with. Runs count from `create_run`/`begin` (`starting`) until `finish`
        or `forget`."""
        if starting:
            self._active.add(run_id)
        return self._active <= {run_id}

    async def _tx(self, fn: Any, *args: Any) -> Any:
        async with self.engine.begin() as conn:
            return await conn.run_sync(fn, *args)

    # -------------------------------------------------------------------------- protocol
    async def begin(self, record: RunRecord, events: Sequence[Event]) -> None:
        """Insert the run, or (restart, resume, a run the service queued) set it running again.

        Existing rows keep their created_at, started_at and live context."""
        now = time.time()
        if self._writer is not None:
            context = await self._writer.run(
                _raw_begin, record, events, now, alone=self._alone(record.run_id, starting=True)
            )
        else:
            context = await self._tx(_begin_tx, record, events, now)
        live = context.get("vars") if isinstance(context, dict) else None
        self._vars[record.run_id] = dict(live if live is not None else record.variables)

    async def save(self, run_id: str, delta: NodeDelta, events: Sequence[Event]) -> None:
        row = delta_row(run_id, delta, events[-1].seq if events else None, time.time())
        context = merged = None
        if delta.vars:
            live = self._vars.get(run_id)
            if live is not None:
                merged = {**live, **delta.vars}
                context = {"vars": merged}
        if self._writer is not None:
            written = await self._writer.run(
                _raw_save, run_id, row, events, context, delta.vars, alone=self._alone(run_id)
            )
        else:
            written = await self._tx(_save_tx, run_id, row, events, context, delta.vars)
        if merged is not None or written is not None:
            self._vars[run_id] = merged if merged is not None else written

    async def save_decision(self, run_id: str, decision: dict[str, Any], events: Sequence[Event]) -> None:
        """One edge-LLM decision into `decisions` (served by GET /runs/{id}/decisions), with its events."""
        row = decision_row(run_id, decision, time.time())
        if self._writer is not None:
            await self._writer.run(_raw_decision, run_id, row, events, alone=self._alone(run_id))
        else:
            await self._tx(_decision_tx, run_id, row, events)

    async def finish(
        self,
        run_id: str,
        status: str,
        outputs: dict[str, Any] | None,
        error: str | None,
        events: Sequence[Event],
    ) -> None:
        values: dict[str, Any] = {
            "status": status,
            "outputs": outputs,
            "error": error,
            "finished_at": time.time() if status in TERMINAL else None,
        }
        if status in TERMINAL:  # a finished run holds no lease (the raw SQL does the same)
            values["lease_owner"] = values["lease_until"] = None
        if events:
            values["last_seq"] = events[-1].seq
            for e in reversed(events):
                if e.type == RUN_FINISHED and e.data and "usage" in e.data:
                    values["usage"] = e.data["usage"]
                    break
        if self._writer is not None:
            await self._writer.run(_raw_finish, run_id, values, events, alone=self._alone(run_id))
        else:
            await self._tx(_finish_tx, run_id, values, events)
        self._vars.pop(run_id, None)
        self._active.discard(run_id)

    async def load(self, run_id: str, *, events: bool = True) -> Checkpoint | None:
        """As `Checkpointer.load`; without `events`, `last_seq` comes from the events' index."""
        async with self.engine.connect() as conn:
            run = (await conn.execute(select(_runs).where(_runs.c.id == run_id))).first()
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
        record = RunRecord(
            run_id=run.id,
            flow_id=run.flow_id,
            inputs=run.inputs or {},
            variables=run.variables or {},
            created_at=run.created_at,
            parent_run_id=run.parent_run_id,
            status=run.status,
            outputs=run.outputs,
            error=run.error,
        )
        live = run.context.get("vars") if isinstance(run.context, dict) else None
        self._vars[run_id] = dict(live if live is not None else record.variables)
        return Checkpoint(
            record,
            [row_to_delta(r) for r in deltas],
            [row_to_event(run_id, r) for r in event_rows],
            list(decisions),
            last_seq,
        )

    # -------------------------------------------------------------------------- run rows
    # Run-lifecycle writes of the service, here so that on a SQLite file they share the writer
    # thread (and its group commit) with the checkpoints instead of contending for the lock.
    async def create_run(
        self,
        run_id: str,
        flow_id: str,
        *,
        inputs: dict[str, Any] | None = None,
        version: int | None = None,
        status: str = "queued",
        parent_run_id: str | None = None,
        variables: dict[str, Any] | None = None,
        lease_owner: str | None = None,
        lease_until: float | None = None,
        document: dict[str, Any] | None = None,
    ) -> None:
        """Insert a run row (as `RunRepo.create`), optionally leased in the same statement.
        `document`: the flow document of a run of a draft (see `Run.document`).
        Raises `sqlite3.IntegrityError` / `IntegrityError` when the id is taken."""
        values = _create_run_values(
            run_id,
            flow_id,
            inputs,
            version,
            status,
            parent_run_id,
            variables,
            lease_owner,
            lease_until,
            time.time(),
            document,
        )
        if self._writer is not None:
            await self._writer.run(_raw_create_run, values, alone=self._alone(run_id, starting=True))
        else:
            await self._tx(_create_run_tx, values)

    async def release_lease(self, run_id: str, owner: str) -> bool:
        """As `RunRepo.release_lease`."""
        if self._writer is not None:
            return bool(await self._writer.run(_raw_release_lease, run_id, owner, alone=self._alone(run_id)))
        return bool(await self._tx(_release_lease_tx, run_id, owner))

    def forget(self, run_id: str) -> None:
        """Drop the cached variables of a run this process no longer owns."""
        self._vars.pop(run_id, None)
        self._active.discard(run_id)
