"""`SqliteWriter`: the writes of a SQLite file on one plain `sqlite3` connection, with group commit.

Why: a checkpoint on SQLite is one hand-off to this connection (aiosqlite would need about a
dozen, one per cursor call, and SQLAlchemy's per-statement overhead is several times SQLite's own
cost here), and the writes of concurrent runs in this process queue up instead of contending for
SQLite's write lock. The store shares one writer between the checkpointer and the run repository
(`RunRepo.create` / `release_lease`), so run-row writes join the same group commits.

The writer also knows which runs are active in this process (from the run's creation or `begin`
until its end or `forget`): a call for a run that is alone runs inline (see `run`).
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from typing import Any

from plait.store.db import apply_sqlite_pragmas


class SqliteWriter:
    """One `sqlite3` connection used from one thread, with group commit.

    Every call is queued; the thread takes all the calls queued so far and runs them in ONE
    `BEGIN IMMEDIATE` ... `COMMIT` transaction (the write lock is taken up front, waiting up to
    the busy timeout), each inside its own SAVEPOINT so that a failing call is rolled back alone
    and raises to its caller only. Callers are answered after the COMMIT returned: every call is
    durable when it returns, as with one transaction per call, but concurrent runs share the
    commit (and its fsync) instead of queueing one fsync each.

    A call made by a run that is alone (`alone()`: no other run active here) while no other call
    is in flight runs on the caller's thread instead, as a synchronous saver would: the hand-off
    to the thread and back costs more than the SQL. It never waits: when the connection is busy or
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
        self._active: set[str] = set()  # runs created or begun here and not ended (`alone`)

    # ------------------------------------------------------------------ active runs
    def alone(self, run_id: str, *, starting: bool = False) -> bool:
        """True when no run but `run_id` is active here: its writes have nothing to be
        group-committed with. `starting`: the run becomes active (its row is created leased to
        this process, or the engine begins it)."""
        if starting:
            self._active.add(run_id)
        return self._active <= {run_id}

    def ended(self, run_id: str) -> None:
        """The run is no longer active here (finished, or its process let it go)."""
        self._active.discard(run_id)

    # ------------------------------------------------------------------ the connection
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
                loop.call_soon_threadsafe(settle_future, future, ok, value)
            except RuntimeError:  # the caller's loop is closed
                pass

    # ------------------------------------------------------------------ calls
    async def run(self, fn: Any, *args: Any, alone: bool = False) -> Any:
        """Run `fn(connection, *args)` in a committed transaction. `alone`: the caller knows of no
        other writer here (one active run, see `alone()`); with no call in flight either, it runs
        inline."""
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
            self._queue.put(None)  # the thread closes the connection when it stops
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
        elif self._db is not None:  # only inline calls ran
            with self._lock:
                self._db.close()
                self._db = None


def settle_future(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """Answer a caller waiting on `future` (unless it stopped waiting: cancelled)."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


__all__ = ["SqliteWriter", "settle_future"]
