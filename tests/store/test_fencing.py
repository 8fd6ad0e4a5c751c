"""The checkpoints of a run held under a lease are fenced by it (`SqlCheckpointer.hold`,
plait.store.fencing): once another process has taken the lease, every write of the old owner is
refused with `LeaseLost` and leaves the database as it was. On both SQLite write paths and on
PostgreSQL."""

from __future__ import annotations

import time

import pytest

from plait.engine.checkpoint import NodeDelta, RunRecord
from plait.store import LeaseLost, SqlCheckpointer, Store

from .checkpoint_rows import stored_counts, token_event


async def test_a_lost_lease_refuses_every_checkpoint_and_writes_nothing(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    runs = store.runs
    await runs.create("r1", "f1", lease_owner="w1", lease_until=time.time() + 30)
    checkpointer.hold("r1", "w1")
    assert checkpointer.holds("r1")
    await checkpointer.begin(RunRecord("r1", "f1", {}, {}, time.time()), [token_event("r1", 1)])
    await checkpointer.save_started("r1", [NodeDelta("a", "running", started_at=1.0)], [token_event("r1", 2)])
    await checkpointer.save("r1", NodeDelta("a", "ok", {"v": 1}, vars={"n": 1}), [token_event("r1", 3, "a")])
    before = await stored_counts(store, "r1")
    assert before == (2, 3)

    # w1 stalled past its lease: w2 takes the run over.
    assert await runs.acquire_lease("r1", "w2", 30, now=time.time() + 60)
    with pytest.raises(LeaseLost) as caught:
        await checkpointer.save("r1", NodeDelta("b", "ok", 2), [token_event("r1", 4, "b")])
    assert (caught.value.code, caught.value.run_id, caught.value.owner) == ("lease_lost", "r1", "w1")
    with pytest.raises(LeaseLost):
        await checkpointer.save_started("r1", [NodeDelta("c", "running")], [token_event("r1", 5)])
    with pytest.raises(LeaseLost):
        await checkpointer.save_decision("r1", {"step": 1, "next": []}, [token_event("r1", 6)])
    with pytest.raises(LeaseLost):
        await checkpointer.finish("r1", "completed", {"v": 2}, None, [token_event("r1", 7)])
    assert not checkpointer.holds("r1")  # a finish lets the run go, written or not
    assert await stored_counts(store, "r1") == before
    row = await runs.get("r1")
    assert row is not None
    assert (row.status, row.outputs, row.lease_owner) == ("running", None, "w2")


async def test_a_sub_flow_child_is_fenced_by_its_parents_lease(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    runs = store.runs
    await runs.create("parent", "f1", lease_owner="w1", lease_until=time.time() + 30)
    checkpointer.hold("parent", "w1")
    await checkpointer.begin(RunRecord("parent", "f1", {}, {}, time.time()), [])
    child = RunRecord("child", "f2", {}, {}, time.time(), parent_run_id="parent")
    await checkpointer.begin(child, [token_event("child", 1)])
    await checkpointer.save("child", NodeDelta("a", "ok", 1), [token_event("child", 2, "a")])
    assert await runs.acquire_lease("parent", "w2", 30, now=time.time() + 60)
    with pytest.raises(LeaseLost):
        await checkpointer.save("child", NodeDelta("b", "ok", 2), [token_event("child", 3, "b")])
    assert await stored_counts(store, "child") == (1, 2)


async def test_runs_not_held_are_not_fenced(store: Store, checkpointer: SqlCheckpointer) -> None:
    """Library use and runs without a lease write as before."""
    await store.runs.create("free", "f1")
    await checkpointer.begin(RunRecord("free", "f1", {}, {}, time.time()), [token_event("free", 1)])
    await checkpointer.save("free", NodeDelta("a", "ok", 1), [token_event("free", 2, "a")])
    await checkpointer.finish("free", "completed", {"v": 1}, None, [token_event("free", 3)])
    assert (await store.runs.get("free")).status == "completed"
