"""A node the server stopped in the middle of an attempt runs again as a new attempt, and says so.

Task nodes are recorded (`running` deltas) before they run; a restored run whose last record of a
node is such a start runs it again with attempt = previous + 1 and a `node_rerun` event giving the
reason (plait.engine.checkpoint, plait.engine.runner)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import plait
from plait.engine import events as ev
from plait.engine.checkpoint import Checkpoint, InMemoryCheckpointer, NodeDelta, RunRecord
from plait.engine.events import Event
from plait.nodes import Node, NodeContext, default_registry
from plait_testing import CALLS, flow


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def echo(id_: str, **config: Any) -> dict[str, Any]:
    retry = config.pop("retry", None)
    node: dict[str, Any] = {"id": id_, "type": "test_echo", "config": config}
    if retry:
        node["retry"] = retry
    return node


def _chain() -> dict[str, Any]:
    return flow(
        [
            echo("a", value=1),
            echo("b", value="{{a}}"),
            {"id": "o", "type": "output", "config": {"value": "{{b}}"}},
        ],
        [("a", "b"), ("b", "o")],
    )


def _statuses(cp: InMemoryCheckpointer, run_id: str) -> list[tuple[str, str, int]]:
    return [(d.node_id, d.status, d.attempt) for d in cp.runs[run_id].deltas]


async def test_task_nodes_are_recorded_before_they_run() -> None:
    cp = InMemoryCheckpointer()
    result = await plait.run(_chain(), checkpointer=cp, run_id="r")
    assert result.status == "completed"
    assert _statuses(cp, "r") == [
        ("a", "running", 1),
        ("a", "ok", 1),
        ("b", "running", 1),
        ("b", "ok", 1),
        ("o", "ok", 1),  # an inline node: nothing outside plait to repeat
    ]


async def test_a_node_cut_short_runs_again_as_the_next_attempt_with_the_reason() -> None:
    cp = InMemoryCheckpointer()
    full = await plait.run(_chain(), checkpointer=cp, run_id="r")
    crashed = cp.truncated("r", 3)  # a done; b started, then the server stopped
    assert _statuses(crashed, "r")[-1] == ("b", "running", 1)
    CALLS.clear()
    again = await plait.resume(_chain(), "r", checkpointer=crashed)
    assert again.status == "completed" and again.outputs == full.outputs
    assert CALLS == {"b": 1}  # a is not run again; b is (at least once)
    assert again.nodes["b"].attempts == 2
    rerun = [e for e in again.events if e.type == ev.NODE_RERUN]
    assert len(rerun) == 1 and rerun[0].node_id == "b"
    assert isinstance(rerun[0].data, ev.NodeRerun) and rerun[0].data.attempt == 2
    assert "the server stopped while attempt 1 of this node ran" in rerun[0].data.reason
    kinds = [(e.type, e.data.get("attempt")) for e in again.events if e.node_id == "b"]
    assert kinds == [("node_rerun", 2), ("node_started", 2), ("node_finished", 2)]
    assert _statuses(crashed, "r")[3:] == [("b", "running", 2), ("b", "ok", 2), ("o", "ok", 1)]


async def test_a_node_that_finished_before_the_crash_is_not_rerun() -> None:
    cp = InMemoryCheckpointer()
    await plait.run(_chain(), checkpointer=cp, run_id="r")
    crashed = cp.truncated("r", 4)  # b ended (its delta saved), the run did not
    CALLS.clear()
    again = await plait.resume(_chain(), "r", checkpointer=crashed)
    assert again.status == "completed" and CALLS == {}
    assert not [e for e in again.events if e.type == ev.NODE_RERUN]


async def test_attempts_continue_after_a_retry_cut_short_and_max_attempts_still_counts() -> None:
    doc = flow([echo("a", fail_times=1, retry={"max_attempts": 3})])
    cp = InMemoryCheckpointer()
    await plait.run(doc, checkpointer=cp, run_id="r")
    assert _statuses(cp, "r") == [("a", "running", 1), ("a", "running", 2), ("a", "ok", 2)]
    crashed = cp.truncated("r", 2)  # attempt 1 failed, attempt 2 started, then the server stopped
    again = await plait.resume(doc, "r", checkpointer=crashed)
    assert again.status == "completed" and again.nodes["a"].attempts == 3
    (rerun,) = [e for e in again.events if e.type == ev.NODE_RERUN]
    assert rerun.data.attempt == 3 and "attempt 2" in rerun.data.reason

    # A rerun that fails has no attempts left when it was the last one allowed.
    failing = flow([echo("a", fail_times=9, retry={"max_attempts": 2})])
    cp = InMemoryCheckpointer()
    await plait.run(failing, checkpointer=cp, run_id="f")
    assert _statuses(cp, "f")[:2] == [("a", "running", 1), ("a", "running", 2)]
    again = await plait.resume(failing, "f", checkpointer=cp.truncated("f", 2))
    assert again.status == "failed" and again.nodes["a"].attempts == 3
    assert not [e for e in again.events if e.type == ev.NODE_RETRYING]


async def test_a_resumed_human_node_cut_short_is_rerun() -> None:
    doc = flow(
        [
            {"id": "ask", "type": "human", "config": {"actions": ["ok"]}},
            {"id": "o", "type": "output", "config": {"value": "{{ask}}"}},
        ],
        [{"source": "ask", "source_port": "ok", "target": "o"}],
    )
    cp = InMemoryCheckpointer()
    waiting = await plait.run(doc, checkpointer=cp, run_id="h")
    assert waiting.status == "waiting"
    done = await plait.resume(doc, "h", {"action": "ok"}, checkpointer=cp)
    assert done.status == "completed"
    statuses = [(n, s) for n, s, _ in _statuses(cp, "h")]
    assert statuses == [
        ("ask", "running"),
        ("ask", "waiting"),
        ("ask", "resumed"),
        ("ask", "running"),
        ("ask", "ok"),
        ("o", "ok"),
    ]
    again = await plait.resume(doc, "h", checkpointer=cp.truncated("h", 4))
    assert again.status == "completed" and again.outputs == done.outputs
    assert [e.data.attempt for e in again.events if e.type == ev.NODE_RERUN] == [2]


class _Watching:
    """A checkpointer that counts `save_started` calls (the in-memory one underneath)."""

    def __init__(self) -> None:
        self.inner = InMemoryCheckpointer()
        self.started_calls: list[list[str]] = []

    async def begin(self, record: RunRecord, events: Sequence[Event]) -> None:
        await self.inner.begin(record, events)

    async def save(self, run_id: str, delta: NodeDelta, events: Sequence[Event]) -> None:
        await self.inner.save(run_id, delta, events)

    async def save_started(self, run_id: str, deltas: Sequence[NodeDelta], events: Sequence[Event]) -> None:
        self.started_calls.append([d.node_id for d in deltas])
        await self.inner.save_started(run_id, deltas, events)

    async def save_decision(self, run_id: str, decision: dict[str, Any], events: Sequence[Event]) -> None:
        await self.inner.save_decision(run_id, decision, events)

    async def finish(
        self, run_id: str, status: str, outputs: Any, error: str | None, events: Sequence[Event]
    ) -> None:
        await self.inner.finish(run_id, status, outputs, error, events)

    async def load(self, run_id: str, *, events: bool = True) -> Checkpoint | None:
        return await self.inner.load(run_id, events=events)


SEEN: dict[str, list[tuple[str, str]]] = {}


class _SeesItsStart(Node):
    """Records what the checkpointer holds when it runs."""

    type_name = "test_sees_its_start"
    input_ports = ("*",)

    async def run(self, ctx: NodeContext) -> Any:
        cp = WATCHING[-1].inner.runs[ctx.run_id]
        SEEN[ctx.node_id] = [(d.node_id, d.status) for d in cp.deltas]
        started = [e for e in cp.events if e.type == ev.NODE_STARTED and e.node_id == ctx.node_id]
        return len(started)


WATCHING: list[_Watching] = []
if default_registry().get(_SeesItsStart.type_name) is None:
    default_registry().register(_SeesItsStart)


async def test_starts_are_saved_together_before_any_of_them_runs() -> None:
    doc = flow(
        [{"id": "src", "type": "start"}]
        + [{"id": f"w{i}", "type": "test_sees_its_start"} for i in range(5)]
        + [{"id": "o", "type": "output", "config": {"value": "{{w0}}"}}],
        [("src", f"w{i}") for i in range(5)] + [("w0", "o")],
        settings={"max_concurrency": 8},
    )
    cp = _Watching()
    WATCHING.append(cp)
    result = await plait.run(doc, {}, checkpointer=cp, run_id="fan")
    assert result.status == "completed"
    assert cp.started_calls == [[f"w{i}" for i in range(5)]]  # one save for the five starts
    for i in range(5):
        assert (f"w{i}", "running") in SEEN[f"w{i}"]
        assert result.nodes[f"w{i}"].output == 1  # its node_started event was saved too
