"""Sub-flow children of a checkpointed run are runs of their own (plait.engine.children): their own
record naming the parent, deltas, events and status; a parent that continues after a crash finds
its child and continues it, so the child's finished nodes are not run again."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.engine.children import MAX_CHILD_ID, child_run_id
from plait_testing import CALLS, flow


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def child_doc(fail_times: int = 0) -> dict[str, Any]:
    return flow(
        [
            {"id": "ca", "type": "test_echo", "config": {"value": "{{inputs.x}}-a"}},
            {"id": "cb", "type": "test_echo", "config": {"value": "{{ca}}-b", "fail_times": fail_times}},
            {"id": "o", "type": "output", "config": {"value": "{{cb}}"}},
        ],
        [("ca", "cb"), ("cb", "o")],
        id="child",
    )


def parent_doc(retry: int = 1) -> dict[str, Any]:
    return flow(
        [
            {
                "id": "sub",
                "type": "subflow",
                "config": {"flow": "child", "inputs": {"x": "hi"}},
                "retry": {"max_attempts": retry},
            },
            {"id": "out", "type": "output", "config": {"value": "{{sub.o}}"}},
        ],
        [("sub", "out")],
    )


def crashed(cp: InMemoryCheckpointer, parent: str, parent_deltas: int, child: str, child_deltas: int):
    """The store as a crash would leave it: the parent and its child each cut after some deltas."""
    cut = cp.truncated(parent, parent_deltas)
    cut.runs[child] = cp.truncated(child, child_deltas).runs[child]
    return cut


def index_of(cp: InMemoryCheckpointer, run_id: str, node_id: str, status: str) -> int:
    deltas = cp.runs[run_id].deltas
    return next(i for i, d in enumerate(deltas) if d.node_id == node_id and d.status == status)


async def test_a_checkpointed_run_s_child_is_a_run_of_its_own() -> None:
    cp = InMemoryCheckpointer()
    result = await plait.run(parent_doc(), checkpointer=cp, run_id="r", flows={"child": child_doc()})
    assert result.status == "completed", result.error
    assert result.outputs == {"out": "hi-a-b"}
    child = cp.runs["r.sub"]
    assert child.run.parent_run_id == "r" and child.run.flow_id == "child"
    assert child.run.status == "completed" and child.run.outputs == {"o": "hi-a-b"}
    assert child.run.inputs == {"x": "hi"}
    assert [d.node_id for d in child.deltas if d.status == "ok"] == ["ca", "cb", "o"]
    kinds = [e.type for e in child.events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert all(e.run_id == "r.sub" for e in child.events)
    # the parent's log still shows the child's node events as sub/<node> (the live canvas)
    parent_log = [(e.type, e.node_id) for e in cp.runs["r"].events]
    assert ("node_finished", "sub/cb") in parent_log
    assert cp.runs["r"].run.parent_run_id is None


async def test_a_crash_in_the_middle_of_a_child_resumes_inside_it() -> None:
    cp = InMemoryCheckpointer()
    flows = {"child": child_doc()}
    full = await plait.run(parent_doc(), checkpointer=cp, run_id="r", flows=flows)
    assert CALLS == {"ca": 1, "cb": 1}
    # parent: the subflow node started, not ended; child: `ca` done, `cb` started, not ended
    cut = crashed(
        cp,
        "r",
        index_of(cp, "r", "sub", "running") + 1,
        "r.sub",
        index_of(cp, "r.sub", "cb", "running") + 1,
    )
    CALLS.clear()
    resumed = await plait.resume(parent_doc(), "r", checkpointer=cut, flows=flows)
    assert resumed.status == "completed", resumed.error
    assert resumed.outputs == full.outputs
    assert CALLS == {"cb": 1}  # `ca` had finished in the child: not run again
    child = cut.runs["r.sub"]
    assert child.run.status == "completed"
    assert [e.type for e in child.events].count("node_rerun") == 1
    assert "r.sub~2" not in cut.runs


async def test_a_child_that_finished_before_the_crash_is_not_run_again() -> None:
    cp = InMemoryCheckpointer()
    flows = {"child": child_doc()}
    await plait.run(parent_doc(), checkpointer=cp, run_id="r", flows=flows)
    cut = crashed(cp, "r", index_of(cp, "r", "sub", "running") + 1, "r.sub", len(cp.runs["r.sub"].deltas))
    cut.runs["r.sub"].run.status, cut.runs["r.sub"].run.outputs = "completed", {"o": "hi-a-b"}
    CALLS.clear()
    resumed = await plait.resume(parent_doc(), "r", checkpointer=cut, flows=flows)
    assert resumed.status == "completed" and resumed.outputs == {"out": "hi-a-b"}
    assert CALLS == {}


async def test_a_retried_subflow_node_starts_the_next_child() -> None:
    cp = InMemoryCheckpointer()
    result = await plait.run(
        parent_doc(retry=2), checkpointer=cp, run_id="r", flows={"child": child_doc(fail_times=1)}
    )
    assert result.status == "completed", result.error
    assert cp.runs["r.sub"].run.status == "failed"
    assert cp.runs["r.sub~2"].run.status == "completed"
    assert cp.runs["r.sub~2"].run.parent_run_id == "r"


async def test_children_in_map_items_have_one_run_each_and_nest() -> None:
    doc = flow(
        [
            {
                "id": "m",
                "type": "map",
                "config": {
                    "items": ["p", "q"],
                    "body": {
                        "nodes": [
                            {
                                "id": "sub",
                                "type": "subflow",
                                "config": {"flow": "child", "inputs": {"x": "{{item}}"}},
                            },
                            {"id": "o", "type": "output", "config": {"value": "{{sub.o}}"}},
                        ],
                        "edges": [{"source": "sub", "target": "o"}],
                    },
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{m}}"}},
        ],
        [("m", "out")],
    )
    cp = InMemoryCheckpointer()
    result = await plait.run(doc, checkpointer=cp, run_id="r", flows={"child": child_doc()})
    assert result.outputs == {"out": ["p-a-b", "q-a-b"]}
    assert cp.runs["r.m@0.sub"].run.outputs == {"o": "p-a-b"}
    assert cp.runs["r.m@1.sub"].run.parent_run_id == "r"


async def test_a_grandchild_names_its_parent_child() -> None:
    middle = flow(
        [
            {"id": "inner", "type": "subflow", "config": {"flow": "child", "inputs": {"x": "{{inputs.x}}"}}},
            {"id": "o", "type": "output", "config": {"value": "{{inner.o}}"}},
        ],
        [("inner", "o")],
        id="middle",
    )
    parent = flow([{"id": "sub", "type": "subflow", "config": {"flow": "middle", "inputs": {"x": "g"}}}])
    cp = InMemoryCheckpointer()
    result = await plait.run(
        parent, checkpointer=cp, run_id="r", flows={"middle": middle, "child": child_doc()}
    )
    assert result.status == "completed", result.error
    assert cp.runs["r.sub.inner"].run.parent_run_id == "r.sub"
    assert cp.runs["r.sub.inner"].run.outputs == {"o": "g-a-b"}


async def test_a_run_without_a_checkpointer_keeps_its_children_in_memory() -> None:
    result = await plait.run(parent_doc(), flows={"child": child_doc()})
    assert result.status == "completed" and result.outputs == {"out": "hi-a-b"}


async def test_a_waiting_child_is_answered_through_its_own_run() -> None:
    child = flow(
        [
            {"id": "ask", "type": "human", "config": {"message": "ok?", "actions": ["yes"]}},
            {"id": "o", "type": "output", "config": {"value": "{{ask.action}}"}},
        ],
        [{"source": "ask", "source_port": "yes", "target": "o"}],
        id="child",
    )
    parent = flow([{"id": "sub", "type": "subflow", "config": {"flow": "child"}}])
    cp = InMemoryCheckpointer()
    first = await plait.run(parent, checkpointer=cp, run_id="r", flows={"child": child})
    assert first.status == "waiting"
    assert first.interrupt["payload"]["subflow"] == {"flow": "child", "node": "ask", "run_id": "r.sub"}
    assert cp.runs["r.sub"].run.status == "waiting"
    done = await plait.resume(parent, "r", {"action": "yes"}, checkpointer=cp, flows={"child": child})
    assert done.status == "completed", done.error
    assert cp.runs["r.sub"].run.status == "completed"
    assert "r.sub~2" not in cp.runs


def test_child_ids_are_url_safe_and_bounded() -> None:
    assert child_run_id("abc", "sub") == "abc.sub"
    assert child_run_id("abc", "l@2/m@0/sub", 3) == "abc.l@2.m@0.sub~3"
    odd = child_run_id("abc", "a/b?c")
    assert odd.startswith("sub-") and odd == child_run_id("abc", "a/b?c")
    assert len(child_run_id("x" * 190, "node" * 10)) <= MAX_CHILD_ID


async def test_a_crash_after_the_child_got_its_answer_does_not_answer_it_twice() -> None:
    child = flow(
        [
            {"id": "ask", "type": "human", "config": {"message": "ok?", "actions": ["yes"]}},
            {"id": "after", "type": "test_echo", "config": {"value": "{{ask.action}}!"}},
            {"id": "o", "type": "output", "config": {"value": "{{after}}"}},
        ],
        [{"source": "ask", "source_port": "yes", "target": "after"}, ("after", "o")],
        id="child",
    )
    parent = flow([{"id": "sub", "type": "subflow", "config": {"flow": "child"}}])
    flows = {"child": child}
    cp = InMemoryCheckpointer()
    assert (await plait.run(parent, checkpointer=cp, run_id="r", flows=flows)).status == "waiting"
    done = await plait.resume(parent, "r", {"action": "yes"}, checkpointer=cp, flows=flows)
    assert done.status == "completed" and done.nodes["sub"].output == {"o": "yes!"}
    # cut: the parent ran its subflow node again with the answer; the child had taken the answer
    # and started `after`
    parent_deltas = cp.runs["r"].deltas
    last_start = max(i for i, d in enumerate(parent_deltas) if d.node_id == "sub" and d.status == "running")
    cut = crashed(cp, "r", last_start + 1, "r.sub", index_of(cp, "r.sub", "after", "running") + 1)
    CALLS.clear()
    again = await plait.resume(parent, "r", checkpointer=cut, flows=flows)
    assert again.status == "completed", again.error
    assert again.nodes["sub"].output == {"o": "yes!"} and CALLS == {"after": 1}


def map_of_children() -> dict[str, Any]:
    return flow(
        [
            {
                "id": "m",
                "type": "map",
                "config": {
                    "items": ["p", "q"],
                    "max_concurrency": 1,
                    "body": {
                        "nodes": [
                            {
                                "id": "sub",
                                "type": "subflow",
                                "config": {"flow": "child", "inputs": {"x": "{{item}}"}},
                            },
                            {"id": "o", "type": "output", "config": {"value": "{{sub.o}}"}},
                        ],
                        "edges": [{"source": "sub", "target": "o"}],
                    },
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{m}}"}},
        ],
        [("m", "out")],
    )


@pytest.mark.parametrize("child_finished", [False, True])
async def test_a_map_item_s_child_continues_after_a_crash(child_finished: bool) -> None:
    cp = InMemoryCheckpointer()
    flows = {"child": child_doc()}
    full = await plait.run(map_of_children(), checkpointer=cp, run_id="r", flows=flows)
    assert full.outputs == {"out": ["p-a-b", "q-a-b"]}
    # the parent: item 0 recorded, item 1 not; item 1's child cut in `cb`, or finished
    child = "r.m@1.sub"
    child_cut = len(cp.runs[child].deltas) if child_finished else index_of(cp, child, "cb", "running") + 1
    cut = crashed(cp, "r", index_of(cp, "r", "m@0", "item") + 1, child, child_cut)
    if child_finished:
        cut.runs[child].run.status, cut.runs[child].run.outputs = "completed", {"o": "q-a-b"}
    CALLS.clear()
    resumed = await plait.resume(map_of_children(), "r", checkpointer=cut, flows=flows)
    assert resumed.status == "completed" and resumed.outputs == full.outputs
    calls = dict(CALLS)
    assert calls == ({} if child_finished else {"cb": 1})  # `ca` had finished: not run again
    assert "r.m@1.sub~2" not in cut.runs


async def test_a_map_run_again_by_its_policy_starts_new_children() -> None:
    """Items of a map that runs a second time (not continuing a cut execution) are new: their
    completed children from the first time are not reused."""
    cp = InMemoryCheckpointer()
    flows = {"child": child_doc()}
    await plait.run(map_of_children(), checkpointer=cp, run_id="r", flows=flows)
    # as if the map node had just started again in the same run: no item recorded, not restored
    cut = cp.truncated("r", index_of(cp, "r", "m", "running"))
    for key in ("r.m@0.sub", "r.m@1.sub"):
        cut.runs[key] = cp.runs[key]
    CALLS.clear()
    again = await plait.resume(map_of_children(), "r", checkpointer=cut, flows=flows)
    assert again.status == "completed", again.error
    assert CALLS == {"ca": 2, "cb": 2}
    assert cut.runs["r.m@0.sub~2"].run.status == "completed"
