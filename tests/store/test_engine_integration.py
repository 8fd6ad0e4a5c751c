"""Real flows through the engine with the SQL checkpointer: pause/resume and crash recovery."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import delete, update

import plait
from plait.engine.runner import SEQ_GAP_AFTER_CRASH
from plait.store import SqlCheckpointer, Store
from plait.store.models import NodeRunRow, Run, RunEvent

HUMAN_FLOW: dict[str, Any] = {
    "schema": "plait/flow@1",
    "id": "f",
    "nodes": [
        {"id": "start", "type": "start"},
        {"id": "ask", "type": "human", "config": {"actions": ["ok"]}},
        {"id": "o", "type": "output", "config": {"value": "{{inputs.x}}"}},
    ],
    "edges": [{"source": "start", "target": "ask"}, {"source": "ask", "source_port": "ok", "target": "o"}],
}

CHAIN_FLOW: dict[str, Any] = {
    "schema": "plait/flow@1",
    "id": "chain",
    "variables": {"count": 1},
    "nodes": [
        {"id": "start", "type": "start"},
        {
            "id": "add",
            "type": "assign",
            "config": {"assignments": [{"variable": "count", "op": "+=", "value": "{{inputs.x}}"}]},
        },
        {
            "id": "double",
            "type": "assign",
            "config": {"assignments": [{"variable": "count", "op": "*=", "value": 2}]},
        },
        {
            "id": "inc",
            "type": "assign",
            "config": {"assignments": [{"variable": "count", "op": "+=", "value": 1}]},
        },
        {"id": "total", "type": "output", "config": {"value": "{{vars.count}}"}},
        {"id": "echo", "type": "output", "config": {"value": "{{inputs.x}}"}},
    ],
    "edges": [
        {"source": "start", "target": "add"},
        {"source": "add", "target": "double"},
        {"source": "double", "target": "inc"},
        {"source": "inc", "target": "total"},
        {"source": "inc", "target": "echo"},
    ],
}


def _assert_event_log(events: list[plait.Event]) -> None:
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_human_flow_waits_then_resumes(checkpointer: SqlCheckpointer, store: Store) -> None:
    flow = plait.load_flow(HUMAN_FLOW)
    result = await plait.run(flow, {"x": 41}, checkpointer=checkpointer, run_id="r1")
    assert result.status == "waiting"
    row = await store.runs.get("r1")
    assert row.status == "waiting" and row.finished_at is None

    # the service turns the interrupt into a human task; someone answers it
    task = await store.human_tasks.create_from_interrupt("r1", result.interrupts[0])
    assert task.node_id == "ask" and task.actions == ["ok"]
    answered = await store.human_tasks.submit(task.token, {"action": "ok"})
    assert answered is not None

    # resume in "another process": a brand-new checkpointer on the same database
    other = SqlCheckpointer(store.sessionmaker)
    try:
        done = await plait.resume(flow, "r1", answered.result, checkpointer=other)
    finally:
        await other.close()
    assert done.status == "completed" and done.outputs == {"o": 41}

    cp = await checkpointer.load("r1")
    assert cp is not None and cp.run.status == "completed" and cp.run.outputs == {"o": 41}
    assert [(d.node_id, d.status) for d in cp.deltas] == [
        ("start", "ok"),
        ("ask", "running"),  # a task node's attempt is recorded before it runs
        ("ask", "waiting"),
        ("ask", "resumed"),
        ("ask", "running"),
        ("ask", "ok"),
        ("o", "ok"),
    ]
    _assert_event_log(cp.events)
    assert [e.type for e in cp.events].count("run_finished") == 2  # waiting, then completed
    assert (await store.events.list_events("r1")) == cp.events
    row = await store.runs.get("r1")
    assert row.status == "completed" and row.outputs == {"o": 41} and row.last_seq == cp.events[-1].seq


async def _crash_after(store: Store, run_id: str, keep: int) -> None:
    """Make the database look as if the process died right after the run's `keep`-th delta."""
    rows = await store.runs.node_runs(run_id)
    last_kept = rows[keep - 1]
    async with store.sessionmaker.begin() as s:
        await s.execute(delete(NodeRunRow).where(NodeRunRow.run_id == run_id, NodeRunRow.id > last_kept.id))
        await s.execute(delete(RunEvent).where(RunEvent.run_id == run_id, RunEvent.seq > last_kept.event_seq))
        await s.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(status="running", outputs=None, finished_at=None, last_seq=last_kept.event_seq)
        )


async def test_crash_recovery_completes_with_the_same_outputs(
    checkpointer: SqlCheckpointer, store: Store
) -> None:
    flow = plait.load_flow(CHAIN_FLOW)
    first = await plait.run(flow, {"x": 4}, checkpointer=checkpointer, run_id="r1")
    assert first.status == "completed" and first.outputs == {"total": 11, "echo": 4}  # (1 + 4) * 2 + 1
    assert len(await store.runs.node_runs("r1")) == 6

    await _crash_after(store, "r1", keep=3)  # start, add, double saved; inc, total, echo lost
    row = await store.runs.get("r1")
    assert row.status == "running"

    # a restarted process finds the run and resumes it
    recovering = await store.runs.find_expired_running()
    assert [r.id for r in recovering] == ["r1"]
    assert await store.runs.acquire_lease("r1", "worker-2", 30)
    fresh = SqlCheckpointer(store.sessionmaker)
    try:
        again = await plait.resume(flow, "r1", checkpointer=fresh)
    finally:
        await fresh.close()
    assert again.status == "completed" and again.outputs == first.outputs
    assert again.nodes["add"].reused is False and again.nodes["inc"].status == "ok"

    cp = await checkpointer.load("r1")
    assert cp is not None
    assert [d.node_id for d in cp.deltas] == ["start", "add", "double", "inc", "total", "echo"]
    # Events saved before the crash keep their seqs; the continuation starts SEQ_GAP_AFTER_CRASH
    # further on, so seqs the crashed process may have streamed unsaved are never reused.
    seqs = [e.seq for e in cp.events]
    kept = [s for s in seqs if s < SEQ_GAP_AFTER_CRASH]
    assert kept == list(range(1, len(kept) + 1))
    after = seqs[len(kept) :]
    assert after and after == list(
        range(kept[-1] + SEQ_GAP_AFTER_CRASH + 1, kept[-1] + SEQ_GAP_AFTER_CRASH + 1 + len(after))
    )
    row = await store.runs.get("r1")
    assert row.status == "completed" and row.outputs == first.outputs
    assert row.context == {"vars": {"count": 11}}
    # Finishing a run releases its lease: nobody needs to hold a finished run.
    assert (row.lease_owner, row.lease_until) == (None, None)
    assert not await store.runs.release_lease("r1", "worker-2")


async def test_retry_from_a_node_reuses_upstream_outputs(checkpointer: SqlCheckpointer, store: Store) -> None:
    flow = plait.load_flow(CHAIN_FLOW)
    await plait.run(flow, {"x": 1}, checkpointer=checkpointer, run_id="r1")
    retried = await plait.retry(flow, "r1", "inc", checkpointer=checkpointer, new_run_id="r2")
    assert retried.status == "completed" and retried.outputs == {"total": 5, "echo": 1}
    nodes = await store.runs.node_runs("r2")
    assert [(n.node_id, n.reused) for n in nodes][:3] == [("start", True), ("add", True), ("double", True)]
    assert (await store.runs.get("r2")).status == "completed"


async def test_concurrent_runs_share_one_checkpointer(checkpointer: SqlCheckpointer, store: Store) -> None:
    flow = plait.load_flow(CHAIN_FLOW)

    async def one(i: int) -> plait.RunResult:
        result = await plait.run(flow, {"x": i}, checkpointer=checkpointer, run_id=f"r{i}")
        await store.runs.set_status(f"r{i}", "completed", expected="completed")  # a repo write in between
        return result

    results = await asyncio.gather(*(one(i) for i in range(20)))
    assert [r.outputs for r in results] == [{"total": (1 + i) * 2 + 1, "echo": i} for i in range(20)]
    for i in range(20):
        cp = await checkpointer.load(f"r{i}")
        assert cp is not None and cp.run.status == "completed" and len(cp.deltas) == 6
        _assert_event_log(cp.events)
    assert len(await store.runs.list_runs(status="completed", limit=100)) == 20
