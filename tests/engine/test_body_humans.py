"""A human node inside a loop or map body: the body waits through its node, the run waits with
the person's task, and the answer continues the body where it stopped (plait.engine.body_wait)."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.engine.checkpoint import InMemoryCheckpointer
from plait_testing import CALLS, flow


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def body() -> dict[str, Any]:
    return {
        "nodes": [
            {"id": "e", "type": "test_echo", "config": {"value": "{{index}}"}},
            {
                "id": "ask",
                "type": "human",
                "config": {
                    "message": "item {{e}}?",
                    "actions": ["yes", "no"],
                    "fields": [{"name": "why", "required": False}],
                },
            },
            {"id": "y", "type": "output", "config": {"name": "r", "value": "{{e}}:{{ask.why}}"}},
            {"id": "n", "type": "output", "config": {"name": "r", "value": "{{e}}:no"}},
        ],
        "edges": [
            {"source": "e", "target": "ask"},
            {"source": "ask", "source_port": "yes", "target": "y"},
            {"source": "ask", "source_port": "no", "target": "n"},
        ],
    }


async def test_a_human_node_in_a_loop_body_asks_once_per_iteration() -> None:
    doc = flow(
        [
            {"id": "l", "type": "loop", "config": {"max_iterations": 3, "body": body()}},
            {"id": "out", "type": "output", "config": {"value": "{{l.result}}"}},
        ],
        [("l", "out")],
    )
    cp = InMemoryCheckpointer()
    result = await plait.run(doc, checkpointer=cp, run_id="h")
    for i in range(3):
        assert result.status == "waiting", result.error
        assert result.interrupt["node_id"] == "l"
        assert result.interrupt["payload"]["message"] == f"item {i}?"
        assert result.interrupt["payload"]["actions"] == ["yes", "no"]
        if i == 0:
            with pytest.raises(plait.NodeError, match="unknown action"):
                await plait.resume(doc, "h", {"action": "maybe"}, checkpointer=cp)
        result = await plait.resume(doc, "h", {"action": "yes", "values": {"why": f"w{i}"}}, checkpointer=cp)
    assert result.status == "completed", result.error
    assert result.outputs == {"out": "2:w2"}
    assert CALLS["e"] == 3  # each iteration's work before the question ran once


async def test_a_human_node_in_a_map_body_asks_for_each_item() -> None:
    doc = flow(
        [
            {
                "id": "m",
                "type": "map",
                "config": {"items": ["a", "b", "c"], "max_concurrency": 3, "body": body()},
            },
            {"id": "out", "type": "output", "config": {"value": "{{m}}"}},
        ],
        [("m", "out")],
    )
    cp = InMemoryCheckpointer()
    result = await plait.run(doc, checkpointer=cp, run_id="hm")
    answers = 0
    while result.status == "waiting":
        assert result.interrupt["node_id"] == "m"
        item = result.interrupt["payload"]["message"].split()[1].rstrip("?")
        action = {"action": "no"} if item == "1" else {"action": "yes", "values": {"why": "ok"}}
        result = await plait.resume(doc, "hm", action, checkpointer=cp)
        answers += 1
        assert answers <= 3
    assert result.status == "completed", result.error
    assert answers == 3
    assert result.outputs == {"out": ["0:ok", "1:no", "2:ok"]}
