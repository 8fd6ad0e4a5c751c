"""A value is stored once. A node's output is in its `node_runs` row; the `node_finished` event
saved with that row, and the `run_started` / `run_finished` events saved with the run row's inputs
and outputs, refer to them instead of carrying copies, and reading the events back (the API's
event log, SSE replay, checkpoints) puts the values in again. Measured on the SQLite file."""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic import BaseModel, ConfigDict

import plait
from plait.engine import events as ev
from plait.nodes import Node, NodeContext, default_registry
from plait.store import SqlCheckpointer, Store
from plait.store.db import sqlite_path
from plait.store.models import RunEvent
from plait_testing import CALLS

SIZE = 600 * 1024  # under the default output budget of 1 MiB
TEXT = "x" * SIZE


class _BigConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = 0


class BigNode(Node):
    """Outputs `size` characters (made here, not passed in: the run's inputs stay small)."""

    type_name = "test_big_output"
    Config = _BigConfig

    async def run(self, ctx: NodeContext) -> Any:
        return "x" * self.config.size  # type: ignore[attr-defined]


if default_registry().get(BigNode.type_name) is None:
    default_registry().register(BigNode)


def _flow(*, output_node: bool) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": "big", "type": "test_big_output", "config": {"size": SIZE}}]
    edges = []
    if output_node:
        nodes.append({"id": "out", "type": "output", "config": {"value": "{{big}}"}})
        edges.append({"source": "big", "target": "out"})
    return {"schema": "plait/flow@1", "id": "big", "nodes": nodes, "edges": edges}


def _db_bytes(store: Store) -> int | None:
    """The database's size with its WAL folded in (None: not a SQLite file)."""
    path = sqlite_path(store.engine.url)
    if path is None:
        return None
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = (
            con.execute("PRAGMA page_count").fetchone()[0]
            - con.execute("PRAGMA freelist_count").fetchone()[0]
        )
        return pages * con.execute("PRAGMA page_size").fetchone()[0]
    finally:
        con.close()


async def _copies(
    store: Store, checkpointer: SqlCheckpointer, doc: dict[str, Any], run_id: str, inputs: dict[str, Any]
) -> float | None:
    """How many times SIZE bytes the run added to the database (None: not a SQLite file)."""
    before = _db_bytes(store)
    result = await plait.run(doc, inputs, checkpointer=checkpointer, run_id=run_id)
    assert result.status == "completed", result.error
    after = _db_bytes(store)
    return None if before is None or after is None else (after - before) / SIZE


async def test_an_output_is_stored_once(store: Store, checkpointer: SqlCheckpointer) -> None:
    copies = await _copies(store, checkpointer, _flow(output_node=False), "r1", {})
    if copies is not None:
        assert 0.9 < copies < 1.2, copies  # was 2: the node run and its node_finished event

    # The events read back carry the output as it was emitted...
    events = await store.events.list_events("r1")
    (finished,) = [e for e in events if e.type == ev.NODE_FINISHED]
    assert isinstance(finished.data, ev.NodeFinished) and finished.data.output == TEXT
    assert finished.to_dict()["output"] == TEXT
    cp = await checkpointer.load("r1")
    assert cp is not None and cp.events == events
    # ... while the stored row refers to the node run's output.
    async with store.sessionmaker() as session:
        row = await session.get(RunEvent, {"run_id": "r1", "seq": finished.seq})
    assert row is not None and row.data is not None
    assert "output" not in row.data and row.data["output_in"] == "node_runs"


async def test_run_outputs_are_not_stored_again_in_run_finished(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    copies = await _copies(store, checkpointer, _flow(output_node=True), "r2", {})
    if copies is not None:
        # the node's output, the output node's (the same value) and the run's outputs; was 6
        assert 2.8 < copies < 3.3, copies
    events = await store.events.list_events("r2")
    outputs = {e.node_id: e.data.output for e in events if isinstance(e.data, ev.NodeFinished)}
    assert outputs == {"big": TEXT, "out": TEXT}
    (done,) = [e for e in events if isinstance(e.data, ev.RunFinished)]
    assert done.data.outputs == {"out": TEXT}
    # Replaying after a seq (SSE Last-Event-ID) finds the values too.
    later = await store.events.list_events("r2", after_seq=done.seq - 1)
    assert [e.seq for e in later] == [done.seq] and later[0].data.outputs == {"out": TEXT}


async def test_run_inputs_are_not_stored_again_in_run_started(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    doc = {"schema": "plait/flow@1", "id": "f", "nodes": [{"id": "n", "type": "test_big_output"}]}
    copies = await _copies(store, checkpointer, doc, "r4", {"text": TEXT})
    if copies is not None:
        assert 0.9 < copies < 1.2, copies  # the run row's inputs; was 2 (and run_started's copy)
    events = await store.events.list_events("r4")
    assert isinstance(events[0].data, ev.RunStarted) and events[0].data.inputs == {"text": TEXT}


async def test_events_read_back_are_the_events_emitted(store: Store, checkpointer: SqlCheckpointer) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "f",
        "nodes": [
            {"id": "a", "type": "test_echo", "config": {"value": {"n": 1}}},
            {"id": "o", "type": "output", "config": {"value": "{{a.n}}"}},
            {"id": "bad", "type": "test_echo", "config": {"fail_times": 1}, "requires": ["o"]},
        ],
        "edges": [{"source": "a", "target": "o"}],
    }
    CALLS.pop("bad", None)
    result = await plait.run(doc, {"q": 1}, checkpointer=checkpointer, run_id="r3")
    assert result.status == "failed"
    events = await store.events.list_events("r3")
    assert [e.to_dict() for e in events] == [e.to_dict() for e in result.events]
