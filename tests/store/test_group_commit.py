"""Group commit on PostgreSQL (`plait.store.group_commit`): the checkpoints of concurrent runs
share transactions, and each caller still gets exactly what a transaction of its own would have
given it: its rows written when it returns, its own error (a duplicate, a lost lease) and no one
else's, nothing written when it stopped waiting, and a run's calls committed in order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import event, select
from sqlalchemy.exc import IntegrityError

from plait.engine.checkpoint import NodeDelta, RunRecord
from plait.store import LeaseLost, SecretBox, SqlCheckpointer, Store
from plait.store.models import NodeRunRow
from scratch_db import needs_pg, scratch_database

from .checkpoint_rows import stored_counts, token_event

pytestmark = needs_pg
RUNS = 40


@pytest.fixture
async def pg_store(box: SecretBox) -> AsyncIterator[Store]:
    async with scratch_database("plait_group") as url:
        store = await Store.open(url, box=box)
        try:
            yield store
        finally:
            await store.close()


async def _begun(store: Store, cp: SqlCheckpointer, run_ids: list[str], owner: str | None = None) -> None:
    for run_id in run_ids:
        if owner is not None:
            await store.runs.create(run_id, "f1", lease_owner=owner, lease_until=time.time() + 60)
            cp.hold(run_id, owner)
        await cp.begin(RunRecord(run_id, "f1", {}, {}, time.time()), [token_event(run_id, 1)])


def _count_transactions(store: Store) -> list[int]:
    begun = [0]

    def on_begin(*_: object) -> None:
        begun[0] += 1

    event.listen(store.engine.sync_engine, "begin", on_begin)
    return begun


async def test_concurrent_runs_share_transactions_and_every_row_is_written(pg_store: Store) -> None:
    cp = SqlCheckpointer(pg_store.sessionmaker)
    assert cp.group is not None
    run_ids = [f"g{i}" for i in range(RUNS)]
    await _begun(pg_store, cp, run_ids, owner="w1")
    begun = _count_transactions(pg_store)
    before = cp.group.transactions

    async def one_run(run_id: str) -> None:
        await cp.save_started(run_id, [NodeDelta("a", "running", started_at=1.0)], [token_event(run_id, 2)])
        await cp.save(
            run_id, NodeDelta("a", "ok", {"v": run_id}, vars={"n": 1}), [token_event(run_id, 3, "a")]
        )
        await cp.finish(run_id, "completed", {"v": run_id}, None, [token_event(run_id, 4)])

    await asyncio.gather(*(one_run(r) for r in run_ids))
    calls = 3 * RUNS
    transactions = cp.group.transactions - before
    assert transactions < calls / 2, f"{calls} checkpoints took {transactions} transactions"
    assert begun[0] <= transactions + 1
    for run_id in run_ids:
        assert await stored_counts(pg_store, run_id) == (2, 4)  # the running row, then the ok one
        row = await pg_store.runs.get(run_id)
        assert row is not None
        assert (row.status, row.outputs, row.context) == ("completed", {"v": run_id}, {"vars": {"n": 1}})
    await cp.close()


async def test_a_failing_call_fails_alone_and_the_rest_of_its_batch_commits(pg_store: Store) -> None:
    cp = SqlCheckpointer(pg_store.sessionmaker)
    run_ids = [f"d{i}" for i in range(RUNS)]
    await _begun(pg_store, cp, run_ids)
    # d7 saves seq 1 again: its event's primary key exists (the batch's transaction aborts).
    results = await asyncio.gather(
        *(
            cp.save_started(r, [NodeDelta("a", "running")], [token_event(r, 1 if r == "d7" else 2)])
            for r in run_ids
        ),
        return_exceptions=True,
    )
    failed = [r for r, res in zip(run_ids, results, strict=True) if isinstance(res, BaseException)]
    assert failed == ["d7"]
    assert isinstance(results[7], IntegrityError)
    for run_id in run_ids:
        assert await stored_counts(pg_store, run_id) == ((0, 1) if run_id == "d7" else (1, 2))
    await cp.close()


async def test_a_lost_lease_is_refused_in_a_batch_and_the_others_commit(pg_store: Store) -> None:
    cp = SqlCheckpointer(pg_store.sessionmaker)
    run_ids = [f"l{i}" for i in range(RUNS)]
    await _begun(pg_store, cp, run_ids, owner="w1")
    # Another process takes l3 over (w1 stalled past its lease).
    assert await pg_store.runs.acquire_lease("l3", "w2", 30, now=time.time() + 120)
    results = await asyncio.gather(
        *(cp.save_started(r, [NodeDelta("a", "running")], [token_event(r, 2)]) for r in run_ids),
        return_exceptions=True,
    )
    lost = [(r, res) for r, res in zip(run_ids, results, strict=True) if res is not None]
    assert len(lost) == 1 and lost[0][0] == "l3" and isinstance(lost[0][1], LeaseLost)
    assert (lost[0][1].run_id, lost[0][1].owner) == ("l3", "w1")
    assert await stored_counts(pg_store, "l3") == (0, 1)
    assert all([await stored_counts(pg_store, r) == (1, 2) for r in run_ids if r != "l3"])
    await cp.close()


async def test_a_caller_that_stops_waiting_writes_nothing_and_calls_of_a_run_keep_their_order(
    pg_store: Store,
) -> None:
    cp = SqlCheckpointer(pg_store.sessionmaker)
    await _begun(pg_store, cp, ["o1", "o2"])
    # o1's first save is in flight alone; the next ones wait for it, then go together in order.
    first = asyncio.create_task(cp.save_started("o1", [NodeDelta("a", "running")], [token_event("o1", 2)]))
    await asyncio.sleep(0)
    later = [
        asyncio.create_task(
            cp.save_started("o1", [NodeDelta(f"n{seq}", "running")], [token_event("o1", seq)])
        )
        for seq in range(3, 9)
    ]
    dropped = asyncio.create_task(cp.save_started("o2", [NodeDelta("x", "running")], [token_event("o2", 2)]))
    await asyncio.sleep(0)
    dropped.cancel()
    await asyncio.gather(first, *later)
    with pytest.raises(asyncio.CancelledError):
        await dropped
    assert await stored_counts(pg_store, "o2") == (0, 1)
    async with pg_store.sessionmaker() as session:
        ids = (
            await session.scalars(
                select(NodeRunRow.node_id).where(NodeRunRow.run_id == "o1").order_by(NodeRunRow.id)
            )
        ).all()
    assert list(ids) == ["a", *(f"n{seq}" for seq in range(3, 9))]
    await cp.close()


async def test_one_run_alone_writes_a_transaction_per_call_without_waiting(pg_store: Store) -> None:
    cp = SqlCheckpointer(pg_store.sessionmaker)
    assert cp.group is not None
    await _begun(pg_store, cp, ["s1"])
    before = (cp.group.transactions, cp.group.calls)
    for seq in range(2, 6):
        await cp.save_started("s1", [NodeDelta(f"n{seq}", "running")], [token_event("s1", seq)])
    assert (cp.group.transactions - before[0], cp.group.calls - before[1]) == (4, 4)
    off = SqlCheckpointer(pg_store.sessionmaker, group_commit=False)
    assert off.group is None
    await cp.close()
    await off.close()
