"""Sub-flow children as rows of their own (plait.engine.children): a child run begun by the SQL
checkpointer names its parent and acts as the parent's owner; crash recovery never takes a child
row (its parent continues it); listings filter children in or out."""

from __future__ import annotations

import time

import plait
from plait.engine.checkpoint import RunRecord
from plait.store import SqlCheckpointer, Store
from plait_testing import flow


async def test_a_child_row_names_its_parent_and_acts_as_its_owner(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    user = await store.users.create(email="owner@example.com")
    await store.runs.create("p", "parent", owner_id=user.id, status="running")
    await checkpointer.begin(RunRecord("p.sub", "child", {"x": 1}, {}, time.time(), parent_run_id="p"), [])
    await checkpointer.begin(RunRecord("top", "parent", {}, {}, time.time()), [])
    child = await store.runs.get("p.sub")
    assert child is not None and child.parent_run_id == "p" and child.owner_id == user.id
    assert child.status == "running" and child.lease_owner is None
    top = await store.runs.get("top")
    assert top is not None and top.owner_id is None and top.parent_run_id is None
    # begun again (the parent continues it): still the parent's, still its owner's
    await checkpointer.begin(RunRecord("p.sub", "child", {"x": 1}, {}, time.time(), parent_run_id="p"), [])
    again = await store.runs.get("p.sub")
    assert again is not None and again.owner_id == user.id and again.parent_run_id == "p"


async def test_recovery_candidates_are_top_level_runs_only(store: Store) -> None:
    await store.runs.create("p", "parent", status="running")
    await store.runs.create("p.sub", "child", status="running", parent_run_id="p")
    expired = await store.runs.find_expired_running(time.time() + 10)
    assert [r.id for r in expired] == ["p"]


async def test_listing_children_and_top_level_runs(store: Store) -> None:
    await store.runs.create("p", "parent", status="running", now=1.0)
    await store.runs.create("p.a", "child", status="completed", parent_run_id="p", now=2.0)
    await store.runs.create("p.b", "child", status="running", parent_run_id="p", now=3.0)
    assert [r.id for r in await store.runs.list_runs(parent_run_id="p")] == ["p.b", "p.a"]
    assert [r.id for r in await store.runs.list_runs(top_level=True)] == ["p"]
    assert len(await store.runs.list_runs()) == 3


async def test_a_child_run_on_the_sql_checkpointer_resumes_from_its_rows(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    child = flow(
        [
            {"id": "ask", "type": "human", "config": {"message": "ok?", "actions": ["yes"]}},
            {"id": "o", "type": "output", "config": {"value": "{{ask.action}}"}},
        ],
        [{"source": "ask", "source_port": "yes", "target": "o"}],
        id="child",
    )
    parent = flow([{"id": "sub", "type": "subflow", "config": {"flow": "child"}}])
    first = await plait.run(parent, checkpointer=checkpointer, run_id="r", flows={"child": child})
    assert first.status == "waiting", first.error
    row = await store.runs.get("r.sub")
    assert row is not None and row.status == "waiting" and row.parent_run_id == "r"
    done = await plait.resume(
        parent, "r", {"action": "yes"}, checkpointer=checkpointer, flows={"child": child}
    )
    assert done.status == "completed", done.error
    row = await store.runs.get("r.sub")
    assert row is not None and row.status == "completed" and row.outputs == {"o": "yes"}
    assert [n.node_id for n in await store.runs.node_runs("r.sub") if n.status == "ok"] == ["ask", "o"]
