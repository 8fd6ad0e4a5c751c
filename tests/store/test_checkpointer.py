from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncIterator

import pytest

from plait.engine.checkpoint import Checkpointer, NodeDelta, RunRecord
from plait.engine.events import Event
from plait.store import SqlCheckpointer, Store
from plait.store.db import sqlite_path


def _events(run_id: str, start: int, n: int, node: str | None = None) -> list[Event]:
    return [
        Event(
            start + i,
            "node_token",
            run_id,
            1700000000.123456789 + start + i,
            node,
            {"delta": f"t{start + i}"},
        )
        for i in range(n)
    ]


def _deltas() -> list[NodeDelta]:
    return [
        NodeDelta("start", "ok", {"x": 1, "nested": {"a": [1, 2, None]}}, None, None, None, 1, 1.25, 0.125),
        NodeDelta(
            "assign", "ok", {"count": 2}, None, {"count": 2, "s": "é"}, started_at=2.5, duration_ms=0.0625
        ),
        NodeDelta(
            "branch",
            "ok",
            "yes",
            ("yes", "maybe"),
            attempt=3,
            started_at=3.0,
            duration_ms=12.75,
            usage={"input_tokens": 5, "output_tokens": 7},
        ),
        NodeDelta("broken", "error", error="node 'broken' failed: boom", attempt=2, started_at=4.0),
        NodeDelta(
            "ask",
            "waiting",
            vars={"count": 3},
            started_at=5.0,
            interrupt={"id": "ask", "kind": "human", "payload": {"actions": ["ok"]}, "expires_at": None},
        ),
        NodeDelta("ask", "resumed", resume={"action": "ok", "values": {"note": "hi"}}),
        NodeDelta("ask", "ok", {"action": "ok"}, ("ok",), reused=True),
        NodeDelta("empty", "ok", None),
        NodeDelta("falsy", "ok", {"zero": 0, "empty": "", "list": [], "false": False}),
    ]


def test_implements_the_engine_protocol() -> None:
    def accepts(cp: Checkpointer) -> None: ...

    accepts(SqlCheckpointer.__new__(SqlCheckpointer))


async def test_round_trip(checkpointer: SqlCheckpointer, store: Store) -> None:
    record = RunRecord(
        "r1", "flow-a", {"x": 1, "q": "ü"}, {"count": 0}, 1700000000.987654321, parent_run_id="p0"
    )
    await checkpointer.begin(record, [Event(1, "run_started", "r1", 1.0, None, {"flow_id": "flow-a"})])
    deltas = _deltas()
    sent = [Event(1, "run_started", "r1", 1.0, None, {"flow_id": "flow-a"})]
    seq = 1
    for i, delta in enumerate(deltas):
        batch = _events("r1", seq + 1, i % 4, delta.node_id)  # some saves carry no events
        await checkpointer.save("r1", delta, batch)
        sent.extend(batch)
        seq += len(batch)
    final = Event(
        seq + 1,
        "run_finished",
        "r1",
        9.0,
        None,
        {"status": "completed", "outputs": {"out": [1, "two"]}, "usage": {"input_tokens": 5}},
    )
    await checkpointer.finish("r1", "completed", {"out": [1, "two"]}, None, [final])

    # a different checkpointer (another process) loads exactly what was saved
    fresh = SqlCheckpointer(store.sessionmaker)
    try:
        cp = await fresh.load("r1")
    finally:
        await fresh.close()
    assert cp is not None
    assert cp.deltas == deltas
    assert cp.deltas[2].ports == ("yes", "maybe") and isinstance(cp.deltas[2].ports, tuple)
    assert cp.events == [*sent, final]
    assert [e.seq for e in cp.events] == list(range(1, seq + 2))
    assert cp.run == RunRecord(
        "r1",
        "flow-a",
        {"x": 1, "q": "ü"},
        {"count": 0},
        1700000000.987654321,
        parent_run_id="p0",
        status="completed",
        outputs={"out": [1, "two"]},
        error=None,
    )

    row = await store.runs.get("r1")
    assert row.context == {"vars": {"count": 3, "s": "é"}}
    assert row.last_seq == seq + 1
    assert row.usage == {"input_tokens": 5}
    assert row.finished_at is not None and row.started_at is not None
    nodes = await store.runs.node_runs("r1")
    assert [n.event_seq for n in nodes][:3] == [None, 2, 4]


async def test_events_equal_in_order(checkpointer: SqlCheckpointer) -> None:
    await checkpointer.begin(RunRecord("r1", "f", {}, {}, 1.0), [])
    sent: list[Event] = []
    seq = 0
    for i in range(50):
        batch = [
            Event(seq + 1, "node_started", "r1", time.time(), f"n{i}"),
            Event(seq + 2, "node_finished", "r1", time.time(), f"n{i}", {"ok": True, "output": i}),
            Event(seq + 3, "edge_fired", "r1", time.time(), None, {"edge": f"n{i}->n{i + 1}"}),
        ]
        seq += 3
        sent.extend(batch)
        await checkpointer.save("r1", NodeDelta(f"n{i}", "ok", i), batch)
    cp = await checkpointer.load("r1")
    assert cp is not None
    assert cp.events == sent
    assert [d.node_id for d in cp.deltas] == [f"n{i}" for i in range(50)]


async def test_load_unknown_run(checkpointer: SqlCheckpointer) -> None:
    assert await checkpointer.load("nope") is None


async def test_begin_on_a_queued_run(checkpointer: SqlCheckpointer, store: Store) -> None:
    await store.runs.create("r1", "f", inputs={"x": 1}, version=4, now=50.0)
    record = RunRecord("r1", "f", {"x": 1, "default": True}, {"v": 1}, 99.0)
    await checkpointer.begin(record, [Event(1, "run_started", "r1", 1.0)])
    row = await store.runs.get("r1")
    assert (row.status, row.created_at, row.version, row.inputs) == (
        "running",
        50.0,
        4,
        {"x": 1, "default": True},
    )
    assert row.context == {"vars": {"v": 1}} and row.variables == {"v": 1} and row.last_seq == 1


async def test_finish_releases_the_lease_of_a_finished_run_only(
    checkpointer: SqlCheckpointer, store: Store
) -> None:
    for run_id, status in (("done", "completed"), ("paused", "waiting")):
        await store.runs.create(run_id, "f", lease_owner="me", lease_until=time.time() + 60)
        await checkpointer.begin(RunRecord(run_id, "f", {}, {}, 1.0), [Event(1, "run_started", run_id, 1.0)])
        await checkpointer.finish(run_id, status, None, None, [Event(2, "run_finished", run_id, 2.0)])
    done, paused = await store.runs.get("done"), await store.runs.get("paused")
    assert (done.status, done.lease_owner, done.lease_until) == ("completed", None, None)
    assert (paused.status, paused.lease_owner) == ("waiting", "me") and paused.lease_until is not None


async def test_restart_keeps_the_live_context(checkpointer: SqlCheckpointer, store: Store) -> None:
    record = RunRecord("r1", "f", {}, {"v": 1}, 10.0)
    await checkpointer.begin(record, [Event(1, "run_started", "r1", 1.0)])
    await checkpointer.save(
        "r1", NodeDelta("a", "ok", 1, vars={"v": 2}), [Event(2, "node_finished", "r1", 2.0)]
    )
    await checkpointer.finish("r1", "waiting", {}, None, [Event(3, "run_finished", "r1", 3.0)])
    waiting = await store.runs.get("r1")
    assert waiting.status == "waiting" and waiting.finished_at is None

    # resume: the engine begins again with the run's *initial* variables
    cp = await checkpointer.load("r1")
    assert cp is not None and cp.run.variables == {"v": 1} and cp.run.status == "waiting"
    await checkpointer.begin(cp.run, [])
    row = await store.runs.get("r1")
    assert row.status == "running" and row.context == {"vars": {"v": 2}} and row.last_seq == 3
    assert row.created_at == 10.0 and row.outputs is None
    await checkpointer.save("r1", NodeDelta("b", "ok", 2, vars={"w": 1}), [Event(4, "x", "r1", 4.0)])
    assert (await store.runs.get("r1")).context == {"vars": {"v": 2, "w": 1}}
    await checkpointer.finish("r1", "failed", None, "node 'c' failed: x", [])
    row = await store.runs.get("r1")
    assert (row.status, row.error, row.outputs, row.last_seq) == ("failed", "node 'c' failed: x", None, 4)
    assert row.finished_at is not None


async def test_variables_without_cache_are_merged_from_the_database(
    checkpointer: SqlCheckpointer, store: Store
) -> None:
    await checkpointer.begin(RunRecord("r1", "f", {}, {"a": 1, "b": 1}, 1.0), [])
    await checkpointer.save("r1", NodeDelta("x", "ok", vars={"a": 2}), [])
    other = SqlCheckpointer(store.sessionmaker)  # knows nothing of r1
    try:
        await other.save("r1", NodeDelta("y", "ok", vars={"b": 3}), [])
        assert (await store.runs.get("r1")).context == {"vars": {"a": 2, "b": 3}}
        await other.save("r1", NodeDelta("z", "ok", vars={"c": 4}), [])  # now from its cache
    finally:
        await other.close()
    assert (await store.runs.get("r1")).context == {"vars": {"a": 2, "b": 3, "c": 4}}


async def test_a_failed_save_leaves_nothing_behind(checkpointer: SqlCheckpointer, store: Store) -> None:
    await checkpointer.begin(RunRecord("r1", "f", {}, {}, 1.0), [Event(1, "run_started", "r1", 1.0)])
    await checkpointer.save("r1", NodeDelta("a", "ok", 1), [Event(2, "node_finished", "r1", 2.0)])
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        # seq 2 already exists: the whole save must roll back, node row included
        await checkpointer.save("r1", NodeDelta("b", "ok", 2, vars={"v": 1}), [Event(2, "again", "r1", 3.0)])
    cp = await checkpointer.load("r1")
    assert cp is not None
    assert [d.node_id for d in cp.deltas] == ["a"]
    assert [e.seq for e in cp.events] == [1, 2]
    row = await store.runs.get("r1")
    # A save that sets no variable leaves the run row alone (last_seq follows at finish).
    assert row.last_seq == 1 and row.context == {"vars": {}}
    await checkpointer.save(
        "r1", NodeDelta("b", "ok", 2), [Event(3, "node_finished", "r1", 3.0)]
    )  # still usable


async def test_save_needs_a_begun_run(checkpointer: SqlCheckpointer) -> None:
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        await checkpointer.save("ghost", NodeDelta("a", "ok"), [])


async def test_save_latency(
    checkpointer: SqlCheckpointer, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prints microseconds per save (3 events + a node delta, like one engine step); `-s` shows it."""
    n = int(os.environ.get("PLAIT_TEST_SAVE_N", "300"))
    await checkpointer.begin(RunRecord("bench", "f", {}, {"i": 0}, time.time()), [])
    seq = 0

    def step(i: int) -> tuple[NodeDelta, list[Event]]:
        nonlocal seq
        output = {"text": "hello world", "i": i}
        events = [
            Event(seq + 1, "node_started", "bench", time.time(), f"n{i}"),
            Event(seq + 2, "node_finished", "bench", time.time(), f"n{i}", {"ok": True, "output": output}),
            Event(seq + 3, "edge_fired", "bench", time.time(), None, {"edge": "a->b"}),
        ]
        seq += 3
        delta = NodeDelta(f"n{i}", "ok", output, vars={"i": i} if i % 5 == 0 else None, duration_ms=0.5)
        return delta, events

    for i in range(20):  # warm up
        await checkpointer.save("bench", *step(i))
    t0 = time.perf_counter()
    for i in range(n):
        await checkpointer.save("bench", *step(i))
    us = (time.perf_counter() - t0) / n * 1e6
    mode = "writer-thread" if checkpointer._writer is not None else "async-engine"
    with capsys.disabled():
        print(f"\n  SqlCheckpointer.save on {backend} ({mode}): {us:.0f} us per save (n={n})")
    assert us < 100_000


@pytest.fixture
async def sqlite_writer(store: Store, backend: str) -> AsyncIterator[SqlCheckpointer]:
    if backend != "sqlite":
        pytest.skip("the writer thread is SQLite-only")
    cp = SqlCheckpointer(store.sessionmaker, sqlite_writer_thread=True)
    try:
        yield cp
    finally:
        await cp.close()


async def test_a_run_alone_writes_on_its_own_thread(sqlite_writer: SqlCheckpointer, store: Store) -> None:
    """Nothing to group-commit with: every write runs inline and the writer thread never starts."""
    await store.runs.create("r1", "f")
    await sqlite_writer.begin(RunRecord("r1", "f", {}, {}, 1.0), [Event(1, "run_started", "r1", 1.0)])
    await sqlite_writer.save(
        "r1", NodeDelta("a", "ok", 1, vars={"v": 1}), [Event(2, "node_finished", "r1", 2.0)]
    )
    await sqlite_writer.finish("r1", "completed", {"v": 1}, None, [Event(3, "run_finished", "r1", 3.0)])
    assert sqlite_writer._writer is not None and sqlite_writer._writer._thread is None
    row = await store.runs.get("r1")
    assert (row.status, row.outputs, row.last_seq, row.context) == (
        "completed",
        {"v": 1},
        3,
        {"vars": {"v": 1}},
    )


async def test_concurrent_runs_share_the_writer_thread(sqlite_writer: SqlCheckpointer, store: Store) -> None:
    """Once a second run is active, writes go through the writer thread (group commits)."""
    runs = [f"r{i}" for i in range(4)]
    for run_id in runs:
        await sqlite_writer.begin(RunRecord(run_id, "f", {}, {}, 1.0), [Event(1, "run_started", run_id, 1.0)])

    async def steps(run_id: str) -> None:
        for i in range(5):
            event = Event(i + 2, "node_finished", run_id, 2.0 + i)
            await sqlite_writer.save(run_id, NodeDelta(f"n{i}", "ok", i, vars={"i": i}), [event])
        await sqlite_writer.finish(
            run_id, "completed", {"i": 4}, None, [Event(7, "run_finished", run_id, 9.0)]
        )

    await asyncio.gather(*(steps(run_id) for run_id in runs))
    assert sqlite_writer._writer is not None and sqlite_writer._writer._thread is not None
    for run_id in runs:
        cp = await sqlite_writer.load(run_id)
        assert cp is not None and [e.seq for e in cp.events] == list(range(1, 8))
        assert (await store.runs.get(run_id)).context == {"vars": {"i": 4}}


async def test_a_foreign_write_lock_queues_the_write_and_the_loop_keeps_running(
    sqlite_writer: SqlCheckpointer, store: Store
) -> None:
    """Another connection holds SQLite's write lock: the inline write must not wait on the event
    loop thread; it is queued to the writer thread and lands once the lock is released."""
    await sqlite_writer.begin(RunRecord("r1", "f", {}, {}, 1.0), [Event(1, "run_started", "r1", 1.0)])
    path = sqlite_path(store.engine.url)
    assert path is not None
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        save = asyncio.create_task(
            sqlite_writer.save("r1", NodeDelta("a", "ok", 1), [Event(2, "node_finished", "r1", 2.0)])
        )
        started = time.monotonic()
        for _ in range(20):  # the loop stays responsive while the save waits (busy timeout: 30 s)
            await asyncio.sleep(0.01)
        assert time.monotonic() - started < 3 and not save.done()
        other.execute("COMMIT")
    finally:
        other.close()
    await asyncio.wait_for(save, 10)
    cp = await sqlite_writer.load("r1")
    assert cp is not None and [d.node_id for d in cp.deltas] == ["a"]


async def test_load_without_events_keeps_the_last_seq(checkpointer: SqlCheckpointer) -> None:
    """What restoring needs: everything but the (possibly long) event log, and the seq to go on from."""
    assert (await checkpointer.load("r1", events=False)) is None
    await checkpointer.begin(RunRecord("r1", "f", {"q": 1}, {}, 1.0), [])
    cp = await checkpointer.load("r1", events=False)
    assert cp is not None and cp.events == [] and cp.last_seq == 0
    await checkpointer.save("r1", NodeDelta("a", "ok", 1), _events("r1", 1, 40, "a"))
    await checkpointer.save("r1", NodeDelta("b", "ok", 2), _events("r1", 41, 2, "b"))
    light = await checkpointer.load("r1", events=False)
    full = await checkpointer.load("r1")
    assert light is not None and full is not None
    assert light.events == [] and light.last_seq == full.last_seq == 42 and len(full.events) == 42
    assert light.deltas == full.deltas and light.run.inputs == {"q": 1}
