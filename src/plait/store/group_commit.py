"""`GroupCommit`: the checkpoint transactions of concurrent runs on PostgreSQL, committed together.

Why: a worker holding hundreds of runs spends most of its event loop's time on the ceremony
around each checkpoint rather than on the rows it writes: a pooled connection, the greenlet
bridge, `BEGIN`, the lease fence, `COMMIT` (and its WAL flush), for a transaction of one or two
statements. The SQLite path already shares one commit between concurrent runs
(`plait.store.sqlite_writer`); this is the same idea for the async engine.

How: a call made while no transaction of this group is in flight runs at once, alone, exactly as
one transaction per call (an idle or single-run process sees no difference, and no added wait).
Calls made meanwhile wait; when the transaction in flight ends, all of them (up to `MAX_BATCH`)
run in ONE transaction: one statement fences every leased run of the batch (locking their rows
in id order), then each call's statements in the order they were made, then one `COMMIT`. Every
caller is answered after that commit: each call is durable when it returns, as before.

- A call whose run's lease was lost gets `LeaseLost` and writes nothing; the others commit.
- A call that fails (or a deadlock) aborts the PostgreSQL transaction: the batch is rolled back
  and each of its calls runs again alone, so only the failing one raises, to its caller.
- A caller cancelled while waiting writes nothing (as a cancel before a commit did).
- One batch at a time: the calls of a run commit in the order they were made.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

import plait.store.run_rows as run_rows
from plait.store.fencing import LeaseLost, fenced_sql
from plait.store.sqlite_writer import settle_future

log = logging.getLogger("plait.store")

# A checkpoint call: fn(conn, run_id, *args) on a synchronous Connection, in a transaction.
Call = Callable[..., Any]
Fence = tuple[str, str]  # (the run whose lease counts, its owner)


async def commit_alone(engine: AsyncEngine, run_id: str, fence: Fence | None, fn: Call, *args: Any) -> Any:
    """`fn(conn, run_id, *args)` in a transaction of its own, fenced by `fence` when given."""
    async with engine.begin() as conn:
        if fence is not None:
            return await conn.run_sync(fenced_sql, run_id, *fence, fn, *args)
        return await conn.run_sync(fn, run_id, *args)


@dataclass(slots=True)
class _Waiting:
    run_id: str
    fence: Fence | None
    fn: Call
    args: tuple[Any, ...]
    future: asyncio.Future[Any]


def _execute_batch(conn: Connection, calls: Sequence[_Waiting]) -> list[tuple[bool, Any]]:
    """The batch's transaction body: the fences, then every call in order. Returns (ok, value)
    per call; a call's own exception propagates (the caller rolls the whole batch back)."""
    by_owner: dict[str, set[str]] = {}
    for call in calls:
        if call.fence is not None:
            by_owner.setdefault(call.fence[1], set()).add(call.fence[0])
    held: set[Fence] = set()
    for owner, run_ids in by_owner.items():
        rows = conn.execute(run_rows.hold_leases(), {"p_run_ids": sorted(run_ids), "p_owner": owner})
        held.update((run_id, owner) for (run_id,) in rows)
    outcomes: list[tuple[bool, Any]] = []
    for call in calls:
        if call.fence is not None and call.fence not in held:
            outcomes.append((False, LeaseLost(*call.fence)))
        else:
            outcomes.append((True, call.fn(conn, call.run_id, *call.args)))
    return outcomes


class GroupCommit:
    """Group commit of checkpoint calls on an async engine (see the module docstring).

    `transactions` and `calls` count what was committed (a batch of N calls is one transaction);
    tests and benchmarks read them."""

    MAX_BATCH = 128

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._waiting: list[_Waiting] = []
        self._busy = False
        self._task: asyncio.Task[None] | None = None  # the batch in flight, if any
        self.transactions = 0
        self.calls = 0

    async def run(self, run_id: str, fence: Fence | None, fn: Call, *args: Any) -> Any:
        """`fn(conn, run_id, *args)` committed, alone or with the calls made meanwhile."""
        if not self._busy:
            self._busy = True
            try:
                return await self._alone(run_id, fence, fn, args)
            finally:
                self._next()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(run_id, fence, fn, args, future))
        return await future

    async def _alone(self, run_id: str, fence: Fence | None, fn: Call, args: tuple[Any, ...]) -> Any:
        result = await commit_alone(self.engine, run_id, fence, fn, *args)
        self.transactions += 1
        self.calls += 1
        return result

    def _next(self) -> None:
        """The transaction in flight ended: start the next batch, or become idle."""
        if not self._waiting:
            self._busy = False
            return
        batch, self._waiting = self._waiting[: self.MAX_BATCH], self._waiting[self.MAX_BATCH :]
        self._task = asyncio.get_running_loop().create_task(self._batch(batch))

    async def _batch(self, batch: list[_Waiting]) -> None:
        calls = [call for call in batch if not call.future.done()]  # cancelled callers write nothing
        try:
            if len(calls) == 1:
                await self._settle_alone(calls[0])
            elif calls:
                try:
                    async with self.engine.begin() as conn:
                        outcomes = await conn.run_sync(_execute_batch, calls)
                except Exception as exc:  # noqa: BLE001 - rolled back: each call again, alone
                    log.debug("a group commit of %d calls failed (%s): each runs alone", len(calls), exc)
                    for call in calls:
                        await self._settle_alone(call)
                else:
                    self.transactions += 1
                    self.calls += len(calls)
                    for call, (ok, value) in zip(calls, outcomes, strict=True):
                        settle_future(call.future, ok, value)
        except BaseException:  # cancelled (the loop is closing): nothing more is answered
            for call in calls:
                if not call.future.done():
                    call.future.cancel()
            raise
        finally:
            self._next()

    async def _settle_alone(self, call: _Waiting) -> None:
        if call.future.done():
            return
        try:
            result = await self._alone(call.run_id, call.fence, call.fn, call.args)
        except Exception as exc:  # noqa: BLE001 - handed to its caller
            settle_future(call.future, False, exc)
        else:
            settle_future(call.future, True, result)


__all__ = ["GroupCommit", "commit_alone"]
