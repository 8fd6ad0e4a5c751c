"""Loop iterations and map items through the SQL checkpointer (SQLite, and PostgreSQL with
PLAIT_TEST_POSTGRES_URL): a run cut inside a map or loop resumes there, and the items that had
finished are not run again (plait.engine.items)."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, update

import plait
from item_flows import loop_flow, map_flow
from plait.engine.items import ITEM_STATUS
from plait.store import SqlCheckpointer, Store
from plait.store.models import NodeRunRow, Run, RunEvent
from plait_testing import CALLS


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


async def _crash_after_items(store: Store, run_id: str, finished: int) -> None:
    """Make the database look as if the process died right after the `finished`-th item row."""
    rows = await store.runs.node_runs(run_id)
    last_kept = [r for r in rows if r.status == ITEM_STATUS][finished - 1]
    async with store.sessionmaker.begin() as s:
        await s.execute(delete(NodeRunRow).where(NodeRunRow.run_id == run_id, NodeRunRow.id > last_kept.id))
        await s.execute(delete(RunEvent).where(RunEvent.run_id == run_id, RunEvent.seq > last_kept.event_seq))
        await s.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status="running", outputs=None, finished_at=None, last_seq=last_kept.event_seq)
        )


async def _resume(store: Store, doc: dict, run_id: str) -> plait.RunResult:
    fresh = SqlCheckpointer(store.sessionmaker)  # as a restarted process opens it
    try:
        return await plait.resume(doc, run_id, checkpointer=fresh)
    finally:
        await fresh.close()


async def test_a_map_cut_after_some_items_runs_only_the_missing_ones(
    checkpointer: SqlCheckpointer, store: Store
) -> None:
    doc = map_flow(6, concurrency=3)
    full = await plait.run(doc, checkpointer=checkpointer, run_id="m1")
    assert full.status == "completed" and CALLS["e"] == 6
    rows = await store.runs.node_runs("m1")
    assert sorted(r.node_id for r in rows if r.status == ITEM_STATUS) == [f"m@{i}" for i in range(6)]

    await _crash_after_items(store, "m1", 4)
    CALLS.clear()
    again = await _resume(store, doc, "m1")
    assert again.status == "completed" and again.outputs == full.outputs
    assert CALLS["e"] == 2
    row = await store.runs.get("m1")
    assert row is not None and row.status == "completed" and row.outputs == full.outputs


async def test_a_loop_cut_after_some_iterations_resumes_inside_the_loop(
    checkpointer: SqlCheckpointer, store: Store
) -> None:
    doc = loop_flow(5)
    full = await plait.run(doc, checkpointer=checkpointer, run_id="l1")
    assert full.outputs == {"out": "36", "total": 32} and CALLS["e"] == 5

    await _crash_after_items(store, "l1", 3)
    # the finished iterations' rows hold the variables they set
    items = [r for r in await store.runs.node_runs("l1") if r.status == ITEM_STATUS]
    assert [(r.node_id, r.vars) for r in items] == [(f"l@{i}", {"count": 2 ** (i + 1)}) for i in range(3)]
    CALLS.clear()
    again = await _resume(store, doc, "l1")
    assert again.status == "completed" and again.outputs == full.outputs
    assert CALLS["e"] == 2
    row = await store.runs.get("l1")
    assert row is not None and row.context == {"vars": {"count": 32}}


async def test_a_person_answers_a_loop_body_through_the_sql_checkpointer(
    checkpointer: SqlCheckpointer, store: Store
) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "ask-loop",
        "nodes": [
            {
                "id": "l",
                "type": "loop",
                "config": {
                    "max_iterations": 2,
                    "body": {
                        "nodes": [
                            {"id": "e", "type": "test_echo", "config": {"value": "{{index}}"}},
                            {"id": "ask", "type": "human", "config": {"actions": ["ok"]}},
                            {"id": "o", "type": "output", "config": {"value": "{{e}}"}},
                        ],
                        "edges": [
                            {"source": "e", "target": "ask"},
                            {"source": "ask", "source_port": "ok", "target": "o"},
                        ],
                    },
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{l.result}}"}},
        ],
        "edges": [{"source": "l", "target": "out"}],
    }
    result = await plait.run(doc, checkpointer=checkpointer, run_id="h1")
    for _ in range(2):
        assert result.status == "waiting" and result.interrupt["node_id"] == "l"
        fresh = SqlCheckpointer(store.sessionmaker)  # the answer may reach another process
        try:
            result = await plait.resume(doc, "h1", {"action": "ok"}, checkpointer=fresh)
        finally:
            await fresh.close()
    assert result.status == "completed" and result.outputs == {"out": 1}
    assert CALLS["e"] == 2
