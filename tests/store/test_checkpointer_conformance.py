"""One checkpointer contract, every checkpointer (as LangGraph tests its savers): in memory, SQL
on SQLite (writer thread and async engine) and SQL on PostgreSQL (with PLAIT_TEST_POSTGRES_URL).

What the engine relies on: `load` gives back exactly what `begin`, `save`, `save_decision` and
`finish` were handed (deltas field by field, ports and input sources as tuples, events in seq
order, decisions in step order), `load(events=False)` keeps everything but the event log and
still knows the seq to go on from, a run begun again keeps its progress, and a run cut short by
a crash restores and completes with the outputs it would have had.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

import plait
from plait.engine import events as ev
from plait.engine.checkpoint import Checkpoint, Checkpointer, NodeDelta, RunRecord
from plait.engine.events import Event

from .conftest import SaverUnderTest


def _ev(run_id: str, seq: int, type_: str = "node_token", node: str | None = None, **data: Any) -> Event:
    return Event(seq, type_, run_id, 1700000000.5 + seq, node, data or {"delta": f"t{seq}"})


def _deltas() -> list[NodeDelta]:
    return [
        NodeDelta("start", "ok", {"x": 1, "nested": {"a": [1, 2, None]}}, started_at=1.25, duration_ms=0.125),
        NodeDelta(
            "assign",
            "ok",
            {"count": 2},
            vars={"count": 2, "s": "é"},
            input=(("start", "out", "in"),),
            started_at=2.5,
        ),
        NodeDelta(
            "branch",
            "ok",
            "yes",
            ("yes", "maybe"),
            attempt=3,
            usage={"input_tokens": 5, "output_tokens": 7},
            input=(("assign", "out", "in"), ("start", "x", "extra")),
        ),
        NodeDelta("broken", "error", error="node 'broken' failed: boom", attempt=2, started_at=4.0),
        NodeDelta(
            "ask",
            "waiting",
            vars={"count": 3},
            interrupt={"id": "ask", "kind": "human", "payload": {"actions": ["ok"]}, "expires_at": None},
        ),
        NodeDelta("ask", "resumed", resume={"action": "ok", "values": {"note": "hi"}}),
        NodeDelta("ask", "ok", {"action": "ok"}, ("ok",), reused=True),
        NodeDelta("empty", "ok", None),
        NodeDelta("falsy", "ok", {"zero": 0, "empty": "", "list": [], "false": False}),
    ]


def _record(run_id: str = "r1") -> RunRecord:
    return RunRecord(run_id, "flow-a", {"x": 1, "q": "ü"}, {"count": 0}, 1700000000.25, parent_run_id="p0")


async def _load(cp: Checkpointer, run_id: str = "r1", *, events: bool = True) -> Checkpoint:
    loaded = await cp.load(run_id, events=events)
    assert loaded is not None
    return loaded


async def _save_all(cp: Checkpointer, run_id: str, deltas: Sequence[NodeDelta], seq: int) -> list[Event]:
    """Save `deltas`, each with 0-3 events numbered on from `seq`; returns the events sent."""
    sent: list[Event] = []
    for i, delta in enumerate(deltas):
        batch = [_ev(run_id, seq + k + 1, node=delta.node_id) for k in range(i % 4)]
        await cp.save(run_id, delta, batch)
        sent.extend(batch)
        seq += len(batch)
    return sent


async def test_load_of_an_unknown_run_is_none(saver: SaverUnderTest) -> None:
    assert await saver.cp.load("nope") is None
    assert await saver.cp.load("nope", events=False) is None


async def test_begin_then_load(saver: SaverUnderTest) -> None:
    started = _ev("r1", 1, "run_started", flow_id="flow-a", inputs={"x": 1, "q": "ü"})
    await saver.cp.begin(_record(), [started])
    cp = await _load(saver.reopen())
    assert (cp.run.run_id, cp.run.flow_id, cp.run.inputs, cp.run.variables) == (
        "r1",
        "flow-a",
        {"x": 1, "q": "ü"},
        {"count": 0},
    )
    assert (cp.run.created_at, cp.run.parent_run_id, cp.run.status) == (1700000000.25, "p0", "running")
    assert (cp.run.outputs, cp.run.error) == (None, None)
    assert cp.deltas == [] and cp.decisions == []
    assert cp.events == [started] and cp.last_seq == 1 and cp.highest_seq == 1


async def test_a_run_without_events_numbers_from_zero(saver: SaverUnderTest) -> None:
    await saver.cp.begin(_record(), [])
    for events in (True, False):
        cp = await _load(saver.reopen(), events=events)
        assert cp.events == [] and cp.last_seq == 0 and cp.highest_seq == 0


async def test_save_and_finish_round_trip_every_field(saver: SaverUnderTest) -> None:
    await saver.cp.begin(_record(), [_ev("r1", 1, "run_started", flow_id="flow-a", inputs={"x": 1})])
    deltas = _deltas()
    sent = await _save_all(saver.cp, "r1", deltas, 1)
    last = 1 + len(sent)
    final = _ev("r1", last + 1, "run_finished", status="completed", outputs={"out": [1, "two"]}, usage={})
    await saver.cp.finish("r1", "completed", {"out": [1, "two"]}, None, [final])

    cp = await _load(saver.reopen())
    assert cp.deltas == deltas
    branch = cp.deltas[2]
    assert branch.ports == ("yes", "maybe") and isinstance(branch.ports, tuple)
    assert branch.input == (("assign", "out", "in"), ("start", "x", "extra"))
    assert isinstance(branch.input, tuple) and all(isinstance(src, tuple) for src in branch.input)
    assert cp.deltas[6].ports == ("ok",) and cp.deltas[6].reused is True
    assert cp.events[1:] == [*sent, final]
    assert [e.seq for e in cp.events] == list(range(1, last + 2))
    assert (cp.run.status, cp.run.outputs, cp.run.error) == ("completed", {"out": [1, "two"]}, None)
    assert cp.last_seq == cp.highest_seq == last + 1


async def test_events_keep_their_typed_payloads(saver: SaverUnderTest) -> None:
    await saver.cp.begin(_record(), [])
    sent = [
        Event(1, "node_started", "r1", 1.5, "a", ev.NodeStarted("test_echo", attempt=2)),
        Event(2, "node_finished", "r1", 2.5, "a", ev.NodeFinished(True, {"v": [1]}, branch=["out"])),
        Event(3, "edge_fired", "r1", 3.5, None, ev.EdgeFired("a->b", "a", "b")),
        Event(4, "node_skipped", "r1", 4.5, "c", ev.NodeSkipped()),
    ]
    await saver.cp.save("r1", NodeDelta("a", "ok", {"v": [1]}, ("out",)), sent)
    cp = await _load(saver.reopen())
    assert [e.to_dict() for e in cp.events] == [e.to_dict() for e in sent]
    assert isinstance(cp.events[1].data, ev.NodeFinished) and cp.events[1].data.branch == ["out"]


async def test_load_without_events_keeps_the_seq_to_go_on_from(saver: SaverUnderTest) -> None:
    await saver.cp.begin(_record(), [_ev("r1", 1, "run_started", flow_id="flow-a", inputs={"x": 1})])
    await saver.cp.save("r1", NodeDelta("a", "ok", 1), [_ev("r1", 1 + i, node="a") for i in range(1, 40)])
    await saver.cp.save("r1", NodeDelta("b", "ok", 2, ("out",)), [_ev("r1", 41, node="b"), _ev("r1", 42)])
    light = await _load(saver.reopen(), events=False)
    full = await _load(saver.reopen())
    assert light.events == [] and len(full.events) == 42
    assert light.last_seq == full.last_seq == 42 and light.highest_seq == full.highest_seq == 42
    assert light.deltas == full.deltas and light.run.inputs == full.run.inputs == {"x": 1, "q": "ü"}
    assert light.decisions == full.decisions == []


async def test_decisions_come_back_in_step_order_with_their_events(saver: SaverUnderTest) -> None:
    await saver.cp.begin(_record(), [_ev("r1", 1, "run_started", flow_id="flow-a", inputs={"x": 1})])
    records = [
        {
            "step": step,
            "mode": "next",
            "next": [{"node": f"n{step}", "input": {}}],
            "skips": [],
            "reason": "r",
            "at": at,
        }
        for step, at in ((1, None), (2, "n1"), (3, "n2"))
    ]
    seq = 1
    for step, record in enumerate(records, start=1):
        seq += 1
        await saver.cp.save_decision("r1", record, [_ev("r1", seq, "decision", **record)])
        seq += 1
        await saver.cp.save("r1", NodeDelta(f"n{step}", "ok", step), [_ev("r1", seq, node=f"n{step}")])
    for events in (True, False):
        cp = await _load(saver.reopen(), events=events)
        assert cp.decisions == records
        assert [d["step"] for d in cp.decisions] == [1, 2, 3]
        assert cp.highest_seq == seq
    cp = await _load(saver.reopen())
    assert [e.type for e in cp.events] == ["run_started"] + ["decision", "node_token"] * 3


async def test_waiting_then_begun_again_keeps_the_progress(saver: SaverUnderTest) -> None:
    """Restart (a resume, a recovery): `begin` on a run that exists keeps its deltas, events,
    decisions and record, and the run is running again."""
    await saver.cp.begin(_record(), [_ev("r1", 1, "run_started", flow_id="flow-a", inputs={"x": 1})])
    await saver.cp.save("r1", NodeDelta("a", "ok", 1, vars={"count": 5}), [_ev("r1", 2, node="a")])
    ask = NodeDelta("ask", "waiting", interrupt={"id": "ask", "kind": "human", "payload": {}})
    await saver.cp.save("r1", ask, [_ev("r1", 3, node="ask")])
    await saver.cp.finish(
        "r1", "waiting", {}, None, [_ev("r1", 4, "run_finished", status="waiting", outputs={}, usage={})]
    )
    paused = await _load(saver.reopen(), events=False)
    assert paused.run.status == "waiting" and paused.last_seq == 4
    assert paused.run.variables == {"count": 0}  # the initial variables: deltas replay onto them

    again = saver.reopen()
    # The engine begins a restored run with a fresh record of it (status running).
    await again.begin(replace(paused.run, status="running", outputs=None, error=None), [])
    running = await _load(saver.reopen())
    assert running.run.status == "running"
    assert [(d.node_id, d.status) for d in running.deltas] == [("a", "ok"), ("ask", "waiting")]
    assert running.deltas[0].vars == {"count": 5}
    assert [e.seq for e in running.events] == [1, 2, 3, 4] and running.highest_seq == 4
    assert (running.run.created_at, running.run.inputs) == (1700000000.25, {"x": 1, "q": "ü"})

    await again.save("r1", NodeDelta("ask", "resumed", resume={"action": "ok"}), [])
    await again.save("r1", NodeDelta("ask", "ok", {"action": "ok"}, ("ok",)), [_ev("r1", 5, node="ask")])
    await again.finish(
        "r1",
        "failed",
        None,
        "node 'x' failed: no",
        [_ev("r1", 6, "run_finished", status="failed", outputs={}, usage={})],
    )
    done = await _load(saver.reopen())
    assert (done.run.status, done.run.outputs, done.run.error) == ("failed", None, "node 'x' failed: no")
    assert [d.status for d in done.deltas] == ["ok", "waiting", "resumed", "ok"]
    assert [e.seq for e in done.events] == [1, 2, 3, 4, 5, 6]


# ------------------------------------------------------------------ through the engine
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
        {"id": "pick", "type": "if", "config": {"when": [{"ref": "inputs.x", "op": ">", "value": 0}]}},
        {
            "id": "double",
            "type": "assign",
            "config": {"assignments": [{"variable": "count", "op": "*=", "value": 2}]},
        },
        {"id": "never", "type": "output", "config": {"value": "no"}},
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
        {"source": "add", "target": "pick"},
        {"source": "pick", "source_port": "true", "target": "double"},
        {"source": "pick", "source_port": "false", "target": "never"},
        {"source": "double", "target": "inc"},
        {"source": "inc", "target": "total"},
        {"source": "inc", "target": "echo"},
    ],
}


class CrashAfter:
    """A checkpointer whose process dies after `saves` node saves: the next save never lands
    (the run's task is cancelled there) and nothing after it is written."""

    def __init__(self, inner: Checkpointer, saves: int) -> None:
        self.inner = inner
        self.saves = saves

    async def begin(self, record: RunRecord, events: Sequence[Event]) -> None:
        await self.inner.begin(record, events)

    async def save(self, run_id: str, delta: NodeDelta, events: Sequence[Event]) -> None:
        if self.saves == 0:
            raise asyncio.CancelledError
        self.saves -= 1
        await self.inner.save(run_id, delta, events)

    async def save_decision(self, run_id: str, decision: dict[str, Any], events: Sequence[Event]) -> None:
        await self.inner.save_decision(run_id, decision, events)

    async def finish(
        self,
        run_id: str,
        status: str,
        outputs: dict[str, Any] | None,
        error: str | None,
        events: Sequence[Event],
    ) -> None:
        raise AssertionError("a crashed run does not finish")

    async def load(self, run_id: str, *, events: bool = True) -> Checkpoint | None:
        return await self.inner.load(run_id, events=events)


@pytest.mark.parametrize("saves", [1, 3, 5])
async def test_a_crash_truncated_run_restores_and_completes(saver: SaverUnderTest, saves: int) -> None:
    flow = plait.load_flow(CHAIN_FLOW)
    whole = await plait.run(flow, {"x": 4}, checkpointer=saver.cp, run_id="whole")
    assert whole.status == "completed" and whole.outputs == {"total": 11, "echo": 4}  # (1 + 4) * 2 + 1

    with pytest.raises(asyncio.CancelledError):
        await plait.run(flow, {"x": 4}, checkpointer=CrashAfter(saver.cp, saves), run_id="r1")
    cut = await _load(saver.reopen(), events=False)
    assert cut.run.status == "running" and len(cut.deltas) == saves

    fresh = saver.reopen()  # the process that takes the run over
    again = await plait.resume(flow, "r1", checkpointer=fresh)
    assert again.status == "completed" and again.outputs == whole.outputs

    done = await _load(saver.reopen())
    assert done.run.status == "completed" and done.run.outputs == whole.outputs
    oks = [d.node_id for d in done.deltas if d.status == "ok"]
    assert (
        sorted(oks) == sorted(set(oks)) == sorted(d.node_id for d in (await _load(saver.cp, "whole")).deltas)
    )
    assert done.deltas[: len(cut.deltas)] == cut.deltas
    pick = next(d for d in done.deltas if d.node_id == "pick")
    assert pick.ports == ("true",) and pick.input == (("add", "out", "in"),)
    seqs = [e.seq for e in done.events]
    assert seqs == sorted(set(seqs)) and seqs[-1] == done.highest_seq
    assert done.events[-1].type == "run_finished"
