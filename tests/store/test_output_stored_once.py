"""A value is stored once. A node's output is in its `node_runs` row; the `node_finished` event
saved with that row, and the `run_started` / `run_finished` events saved with the run row's inputs
and outputs, refer to them instead of carrying copies, and reading the events back (the API's
event log, SSE replay, checkpoints) puts the values in again. A large value (over 64 KiB of JSON)
is stored once in `blobs`, however many rows hold it (an output node passing it through, the
run's outputs, a map carrying it, a retry reusing it). Measured on the SQLite file, and counted
in every table's rows on both databases."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from alembic import command
from pydantic import BaseModel, ConfigDict
from sqlalchemy import delete, select, update

import plait
from plait.engine import events as ev
from plait.nodes import Node, NodeContext, default_registry
from plait.store import SqlCheckpointer, Store
from plait.store.blobs import BLOB_KEY, INLINE_MAX
from plait.store.db import json_dumps, sqlite_path
from plait.store.migrate import alembic_config
from plait.store.models import Base, Blob, NodeRunRow, Run, RunEvent
from plait_testing import CALLS

SIZE = 600 * 1024  # under the default output budget of 1 MiB
TEXT = "x" * SIZE


class _BigConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = 0
    tag: str = ""
    count: int = 0


class BigNode(Node):
    """Outputs `size` characters (made here, not passed in: the run's inputs stay small); with a
    `tag`, they start with `<<tag>>` (a text found nowhere else: not in the node's config); with a
    `count`, a list of that many of them."""

    type_name = "test_big_output"
    Config = _BigConfig

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        text = f"<<{cfg.tag}>>" + "x" * cfg.size if cfg.tag else "x" * cfg.size  # type: ignore[attr-defined]
        return [text] * cfg.count if cfg.count else text  # type: ignore[attr-defined]


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
        # the node's output, the output node's (the same value) and the run's outputs share one
        # blob; was 6 (copies in the events too), then 3
        assert 0.9 < copies < 1.2, copies
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


# ------------------------------------------------------------------------ large values in blobs
def _tagged(tag: str, size: int = SIZE) -> str:
    return f"<<{tag}>>" + "x" * size


async def _occurrences(store: Store, needle: str) -> dict[str, int]:
    """How many times `needle` occurs in each table's rows (tables where it does)."""
    found: dict[str, int] = {}
    async with store.engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            for row in (await conn.execute(select(table))).all():
                for value in row:
                    if value is None:
                        continue
                    n = (value if isinstance(value, str) else json_dumps(value)).count(needle)
                    if n:
                        found[table.name] = found.get(table.name, 0) + n
    return found


def _pass_through(tag: str) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "big",
        "nodes": [
            {"id": "big", "type": "test_big_output", "config": {"size": SIZE, "tag": tag}},
            {"id": "out", "type": "output", "config": {"value": "{{big}}"}},
        ],
        "edges": [{"source": "big", "target": "out"}],
    }


async def test_a_value_passed_through_an_output_node_is_stored_once(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    tag = uuid.uuid4().hex
    copies = await _copies(store, checkpointer, _pass_through(tag), "r5", {})
    if copies is not None:
        assert 0.9 < copies < 1.2, copies  # was 3: both node runs and the run's outputs
    assert await _occurrences(store, f"<<{tag}>>") == {"blobs": 1}
    value = _tagged(tag)

    # Every reader puts the value back: the run row, the node runs, the events, a checkpoint.
    row = await store.runs.get("r5")
    assert row is not None and row.outputs == {"out": value}
    assert [r.outputs for r in await store.runs.list_runs()] == [{"out": value}]
    assert {n.node_id: n.output for n in await store.runs.node_runs("r5")} == {"big": value, "out": value}
    events = await store.events.list_events("r5")
    assert {e.node_id: e.data.output for e in events if isinstance(e.data, ev.NodeFinished)} == {
        "big": value,
        "out": value,
    }
    cp = await checkpointer.load("r5")
    assert cp is not None and cp.events == events and cp.run.outputs == {"out": value}
    assert [d.output for d in cp.deltas if d.status == "ok"] == [value, value]

    # The columns hold references; small values stay inline.
    async with store.sessionmaker() as session:
        run = await session.get(Run, "r5")
        outs = (await session.execute(select(NodeRunRow.output).where(NodeRunRow.run_id == "r5"))).scalars()
        blobs = (await session.execute(select(Blob))).scalars().all()
    assert run is not None and set(run.outputs) == {BLOB_KEY}
    assert all(set(o) == {BLOB_KEY} for o in outs if o is not None)
    # the text, and {"out": <reference>} (the run's outputs: the value found inside is not copied)
    assert sorted(b.refs for b in blobs) == [False, True]
    assert all(b.size == len(b.data.encode()) for b in blobs)


async def test_a_map_carrying_a_large_value_stores_it_once(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    tag = uuid.uuid4().hex
    size = 200 * 1024  # two of them, within the output budget
    doc = {
        "schema": "plait/flow@1",
        "id": "m",
        "nodes": [
            {"id": "big", "type": "test_big_output", "config": {"size": size, "tag": tag, "count": 2}},
            {
                "id": "m",
                "type": "map",
                "config": {
                    "items": "{{big}}",
                    "body": {"nodes": [{"id": "o", "type": "output", "config": {"value": "{{item}}"}}]},
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{m}}"}},
        ],
        "edges": [{"source": "big", "target": "m"}, {"source": "m", "target": "out"}],
    }
    result = await plait.run(doc, {}, checkpointer=checkpointer, run_id="r6")
    assert result.status == "completed", result.error
    value = [_tagged(tag, size)] * 2
    assert result.outputs == {"out": value}
    # the list's items, the map's body events: all one blob
    assert await _occurrences(store, f"<<{tag}>>") == {"blobs": 1}
    assert (await store.runs.get("r6")).outputs == {"out": value}  # type: ignore[union-attr]
    events = await store.events.list_events("r6")
    assert [e.to_dict() for e in events] == [e.to_dict() for e in result.events]


async def test_values_that_look_like_references_read_back_as_they_were(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    fake = {BLOB_KEY: "0" * 64}
    nested = {"a": fake, "big": "y" * (INLINE_MAX + 10)}
    doc = {
        "schema": "plait/flow@1",
        "id": "f",
        "nodes": [
            {"id": "a", "type": "test_echo", "config": {"value": fake}},
            {"id": "b", "type": "test_echo", "config": {"value": nested}},
            {"id": "c", "type": "test_echo", "config": {"value": [fake, "z" * (INLINE_MAX + 10)]}},
        ],
    }
    result = await plait.run(doc, {}, checkpointer=checkpointer, run_id="r7")
    assert result.status == "completed", result.error
    outputs = {n.node_id: n.output for n in await store.runs.node_runs("r7")}
    assert outputs == {"a": fake, "b": nested, "c": [fake, "z" * (INLINE_MAX + 10)]}
    cp = await checkpointer.load("r7")
    assert cp is not None and {d.node_id: d.output for d in cp.deltas} == outputs


async def test_retry_and_crash_recovery_read_the_large_value_back(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    tag = uuid.uuid4().hex
    value = _tagged(tag)
    flow = plait.load_flow(_pass_through(tag))
    first = await plait.run(flow, {}, checkpointer=checkpointer, run_id="r8")
    assert first.outputs == {"out": value}

    # Retry from the output node: `big`'s output is reused from the stored run.
    retried = await plait.retry(flow, "r8", "out", checkpointer=checkpointer, new_run_id="r9")
    assert retried.status == "completed" and retried.outputs == {"out": value}
    assert retried.nodes["big"].reused is True
    assert (await store.runs.get("r9")).outputs == {"out": value}  # type: ignore[union-attr]

    # A crash after `big` was saved: a new process resumes with its output read back.
    big_row = (await store.runs.node_runs("r8"))[0]
    assert big_row.node_id == "big"
    async with store.sessionmaker.begin() as s:
        await s.execute(delete(NodeRunRow).where(NodeRunRow.run_id == "r8", NodeRunRow.id > big_row.id))
        await s.execute(delete(RunEvent).where(RunEvent.run_id == "r8", RunEvent.seq > big_row.event_seq))
        await s.execute(
            update(Run)
            .where(Run.id == "r8")
            .values(status="running", outputs=None, finished_at=None, last_seq=big_row.event_seq)
        )
    assert [r.id for r in await store.runs.find_expired_running()] == ["r8"]
    fresh = SqlCheckpointer(store.sessionmaker)
    try:
        again = await plait.resume(flow, "r8", checkpointer=fresh)
    finally:
        await fresh.close()
    assert again.status == "completed" and again.outputs == {"out": value}
    assert again.nodes["big"].status == "ok"

    # Two runs, a retry and a recovery later, the value is still stored once.
    assert await _occurrences(store, f"<<{tag}>>") == {"blobs": 1}


async def test_a_waiting_run_resumes_with_the_large_value(
    store: Store, checkpointer: SqlCheckpointer
) -> None:
    tag = uuid.uuid4().hex
    value = _tagged(tag)
    doc = {
        "schema": "plait/flow@1",
        "id": "h",
        "nodes": [
            {"id": "big", "type": "test_big_output", "config": {"size": SIZE, "tag": tag}},
            {"id": "ask", "type": "human", "config": {"actions": ["ok"]}},
            {"id": "out", "type": "output", "config": {"value": "{{big}}"}},
        ],
        "edges": [
            {"source": "big", "target": "ask"},
            {"source": "ask", "source_port": "ok", "target": "out"},
        ],
    }
    flow = plait.load_flow(doc)
    waiting = await plait.run(flow, {}, checkpointer=checkpointer, run_id="r10")
    assert waiting.status == "waiting"
    task = await store.human_tasks.create_from_interrupt("r10", waiting.interrupts[0])
    answered = await store.human_tasks.submit(task.token, {"action": "ok"})
    assert answered is not None
    other = SqlCheckpointer(store.sessionmaker)
    try:
        done = await plait.resume(flow, "r10", answered.result, checkpointer=other)
    finally:
        await other.close()
    assert done.status == "completed" and done.outputs == {"out": value}
    assert await _occurrences(store, f"<<{tag}>>") == {"blobs": 1}


async def test_a_downgrade_puts_the_values_back_inline(store: Store, checkpointer: SqlCheckpointer) -> None:
    tag = uuid.uuid4().hex
    result = await plait.run(_pass_through(tag), {}, checkpointer=checkpointer, run_id="r11")
    assert result.status == "completed", result.error

    def downgrade(conn: object) -> None:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0004")

    await checkpointer.close()
    async with store.engine.connect() as conn:
        await conn.run_sync(downgrade)
        await conn.commit()
    value = _tagged(tag)
    async with store.sessionmaker() as session:
        outputs = (
            (await session.execute(select(NodeRunRow.output).where(NodeRunRow.run_id == "r11")))
            .scalars()
            .all()
        )
        # Columns, not ORM rows: the models have columns later revisions added (runs.trigger_id).
        run_outputs = (await session.execute(select(Run.outputs).where(Run.id == "r11"))).scalar_one()
        events = (
            (await session.execute(select(RunEvent.data).where(RunEvent.run_id == "r11"))).scalars().all()
        )
    assert [o for o in outputs if o is not None] == [value, value]
    assert run_outputs == {"out": value}
    assert all(BLOB_KEY not in json_dumps(data) for data in events)
