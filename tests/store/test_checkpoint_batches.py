"""The SQL checkpointer writes the deltas of inline nodes with the next durable write
(`BatchCheckpointer`, `RunJournal.save(hold=True)`): one transaction for the inline nodes before
a task and the task's `running` row, one for the inline nodes after the last task and the run's
end. What is stored is what one save per delta stored (node rows in order, events with their
outputs, variables), and a process that dies before such a write only runs the inline nodes
again."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

import plait
from plait.engine.checkpoint import InMemoryCheckpointer, NodeDelta
from plait.engine.events import Event
from plait.store import SqlCheckpointer, Store
from plait_testing import CALLS

FLOW: dict[str, Any] = {
    "schema": "plait/flow@1",
    "id": "batches",
    "variables": {"count": 1},
    "nodes": [
        {"id": "start", "type": "start"},
        {
            "id": "add",
            "type": "assign",
            "config": {"assignments": [{"variable": "count", "op": "+=", "value": "{{inputs.x}}"}]},
        },
        {"id": "pick", "type": "if", "config": {"when": [{"ref": "inputs.x", "op": ">", "value": 0}]}},
        {"id": "batch_echo", "type": "test_echo", "config": {"value": "{{vars.count}}"}},
        {
            "id": "inc",
            "type": "assign",
            "config": {"assignments": [{"variable": "count", "op": "+=", "value": 1}]},
        },
        {"id": "total", "type": "output", "config": {"name": "total", "value": "{{vars.count}}"}},
        {"id": "seen", "type": "output", "config": {"name": "seen", "value": "{{batch_echo}}"}},
    ],
    "edges": [
        {"source": "start", "target": "add"},
        {"source": "add", "target": "pick"},
        {"source": "pick", "source_port": "true", "target": "batch_echo"},
        {"source": "batch_echo", "target": "inc"},
        {"source": "inc", "target": "total"},
        {"source": "inc", "target": "seen"},
    ],
}
OUTPUTS = {"total": 6, "seen": 5}  # count: 1 + 4 = 5 when echoed, + 1


def _shape(deltas: Sequence[NodeDelta]) -> list[tuple[str, str, Any, Any]]:
    return [(d.node_id, d.status, d.output, d.vars) for d in deltas]


async def test_inline_nodes_go_with_the_next_durable_write(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    flow = plait.load_flow(FLOW)
    memory = InMemoryCheckpointer()
    expected = await plait.run(flow, {"x": 4}, checkpointer=memory, run_id="m")
    assert expected.outputs == OUTPUTS

    writes: list[str] = []
    for name in ("begin", "save", "save_started", "save_batch", "finish", "finish_batch"):
        method = getattr(checkpointer, name)

        async def counted(*args: Any, _name: str = name, _method: Any = method, **kw: Any) -> Any:
            writes.append(_name)
            return await _method(*args, **kw)

        setattr(checkpointer, name, counted)
    result = await plait.run(flow, {"x": 4}, checkpointer=checkpointer, run_id="r1")
    assert result.status == "completed" and result.outputs == OUTPUTS
    # start, add, pick with the echo's start; the echo; inc, total, seen with the end.
    assert writes == ["begin", "save_batch", "save", "finish_batch"]

    stored = await checkpointer.load("r1")
    mem = await memory.load("m")
    assert stored is not None and mem is not None
    assert _shape(stored.deltas) == _shape(mem.deltas)
    assert [(e.seq, e.type, e.node_id) for e in stored.events] == [
        (e.seq, e.type, e.node_id) for e in mem.events
    ]
    outputs = {e.node_id: e.data.output for e in stored.events if e.type == "node_finished"}
    assert outputs == {e.node_id: e.data.output for e in mem.events if e.type == "node_finished"}
    assert stored.run.status == "completed" and stored.run.outputs == OUTPUTS
    row = await store.runs.get("r1")
    assert row is not None and row.context == {"vars": {"count": 6}}


class DiesAtTheEnd(SqlCheckpointer):
    """The process dies as it writes the run's end (inline nodes after the last task included)."""

    async def finish_batch(self, *args: Any, **kw: Any) -> None:
        raise asyncio.CancelledError

    async def finish(self, *args: Any, **kw: Any) -> None:
        raise asyncio.CancelledError


async def test_held_inline_nodes_that_never_landed_run_again_after_a_crash(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    flow = plait.load_flow(FLOW)
    dying = DiesAtTheEnd(store.sessionmaker, writer=store.sqlite_writer)
    try:
        CALLS.pop("batch_echo", None)
        with pytest.raises(asyncio.CancelledError):
            await plait.run(flow, {"x": 4}, checkpointer=dying, run_id="r1")
    finally:
        await dying.close()
    cut = await checkpointer.load("r1", events=False)
    assert cut is not None and cut.run.status == "running"
    # The echo landed (its own write); inc, total and seen went down with the end.
    assert [d.node_id for d in cut.deltas if d.status == "ok"] == ["start", "add", "pick", "batch_echo"]

    again = await plait.resume(flow, "r1", checkpointer=checkpointer)
    assert again.status == "completed" and again.outputs == OUTPUTS
    assert CALLS["batch_echo"] == 1  # the task is not run again
    done = await checkpointer.load("r1")
    assert done is not None
    oks = [d.node_id for d in done.deltas if d.status == "ok"]
    assert oks == ["start", "add", "pick", "batch_echo", "inc", "total", "seen"]
    seqs = [e.seq for e in done.events]
    assert seqs == sorted(set(seqs))
    assert [e for e in done.events if isinstance(e, Event) and e.type == "run_finished"][-1].data.status == (
        "completed"
    )
