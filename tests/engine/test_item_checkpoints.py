"""Loop iterations and map items are checkpointed: a run cut in the middle of a loop or map
resumes inside it, and the items that had finished are not run again (plait.engine.items)."""

from __future__ import annotations

import pytest

import plait
from item_flows import loop_flow, map_flow
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.engine.items import ITEM_STATUS
from plait_testing import CALLS, flow


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def cut_after_items(cp: InMemoryCheckpointer, run_id: str, finished: int) -> InMemoryCheckpointer:
    """The checkpoint as a crash would leave it right after the `finished`-th recorded item."""
    deltas = cp.runs[run_id].deltas
    items = [i for i, d in enumerate(deltas) if d.status == ITEM_STATUS]
    return cp.truncated(run_id, items[finished - 1] + 1)


async def test_each_map_item_is_recorded_once_it_finished() -> None:
    cp = InMemoryCheckpointer()
    result = await plait.run(map_flow(4, concurrency=2), checkpointer=cp, run_id="r")
    assert result.outputs == {"out": ["0", "11", "22", "33"]}
    items = [d for d in cp.runs["r"].deltas if d.status == ITEM_STATUS]
    assert sorted(d.node_id for d in items) == ["m@0", "m@1", "m@2", "m@3"]
    assert {d.node_id: d.output for d in items}["m@2"] == {"o": "22"}


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_a_map_cut_after_some_items_runs_only_the_missing_ones(concurrency: int) -> None:
    doc = map_flow(6, concurrency=concurrency)
    cp = InMemoryCheckpointer()
    full = await plait.run(doc, checkpointer=cp, run_id="r")
    assert CALLS["e"] == 6
    crashed = cut_after_items(cp, "r", 4)
    CALLS.clear()
    resumed = await plait.resume(doc, "r", checkpointer=crashed)
    assert resumed.status == "completed" and resumed.outputs == full.outputs
    assert CALLS["e"] == 2  # the 4 finished items were not run again
    assert resumed.nodes["m"].attempts == 2  # the cut attempt, then this one


async def test_a_loop_cut_after_some_iterations_resumes_inside_the_loop() -> None:
    doc = loop_flow(5)
    cp = InMemoryCheckpointer()
    full = await plait.run(doc, checkpointer=cp, run_id="r")
    # count doubles each iteration from 1: 32 at the end; the last result is 32 + 4
    assert full.outputs == {"out": "36", "total": 32}
    assert CALLS["e"] == 5
    crashed = cut_after_items(cp, "r", 3)
    CALLS.clear()
    resumed = await plait.resume(doc, "r", checkpointer=crashed)
    assert resumed.status == "completed" and resumed.outputs == full.outputs
    assert resumed.nodes["l"].output == full.nodes["l"].output
    assert CALLS["e"] == 2


async def test_a_map_inside_a_loop_resumes_inside_both() -> None:
    inner = map_flow(3)["nodes"][0]
    doc = flow(
        [
            {
                "id": "l",
                "type": "loop",
                "config": {
                    "max_iterations": 3,
                    "body": {
                        "nodes": [inner, {"id": "o", "type": "output", "config": {"value": "{{m}}"}}],
                        "edges": [{"source": "m", "target": "o"}],
                    },
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{l.result}}"}},
        ],
        [("l", "out")],
    )
    cp = InMemoryCheckpointer()
    full = await plait.run(doc, checkpointer=cp, run_id="r")
    assert full.status == "completed", full.error
    keys = [d.node_id for d in cp.runs["r"].deltas if d.status == ITEM_STATUS]
    assert keys[:4] == ["l@0/m@0", "l@0/m@1", "l@0/m@2", "l@0"]
    # cut after iteration 0 and the first item of iteration 1's map
    crashed = cp.truncated(
        "r", cp.runs["r"].deltas.index(next(d for d in cp.runs["r"].deltas if d.node_id == "l@1/m@0")) + 1
    )
    CALLS.clear()
    resumed = await plait.resume(doc, "r", checkpointer=crashed)
    assert resumed.outputs == full.outputs
    assert CALLS["e"] == 9 - 4


async def test_items_of_a_finished_node_are_not_reused_when_it_runs_again() -> None:
    doc = map_flow(3)
    cp = InMemoryCheckpointer()
    await plait.run(doc, checkpointer=cp, run_id="r")
    CALLS.clear()
    # a retry from the map runs every item again (its items belong to the first run)
    again = await plait.retry(doc, "r", "m", checkpointer=cp, new_run_id="r2")
    assert again.outputs == {"out": ["0", "11", "22"]} and CALLS["e"] == 3


async def test_an_uncheckpointed_run_records_nothing() -> None:
    result = await plait.run(map_flow(3))
    assert result.outputs == {"out": ["0", "11", "22"]} and CALLS["e"] == 3
