"""Checkpoints record where each node's input came from (`NodeDelta.input`), and `port_value`
rebuilds the value from the sources' outputs exactly as the engine delivered it."""

from __future__ import annotations

import plait
from plait.engine.checkpoint import InMemoryCheckpointer, port_value
from plait_testing import CALLS, flow


def echo(id_: str, **config) -> dict:
    return {"id": id_, "type": "test_echo", "config": config}


async def test_deltas_name_the_edges_that_delivered_the_input():
    doc = flow(
        [
            {"id": "start", "type": "start"},
            echo(
                "a", value={"left": "L", "right": "R"}, ports=["left", "right"], all_ports=["left", "right"]
            ),
            echo("b"),
            echo("c"),
            echo("j"),
        ],
        [
            ("start", "a"),
            {"source": "a", "source_port": "left", "target": "b"},
            {"source": "a", "source_port": "right", "target": "c"},
            ("b", "j"),
            ("c", "j"),
        ],
    )
    cp = InMemoryCheckpointer()
    result = await plait.run(doc, {"x": 1}, checkpointer=cp)
    assert result.status == "completed"
    deltas = {d.node_id: d for d in cp.runs[result.run_id].deltas}
    assert deltas["start"].input is None
    assert deltas["a"].input == (("start", "out", "in"),)
    assert deltas["b"].input == (("a", "left", "in"),)
    assert sorted(deltas["j"].input) == [("b", "out", "in"), ("c", "out", "in")]
    outputs = {d.node_id: d.output for d in deltas.values()}
    src, port, _ = deltas["b"].input[0]
    assert port_value(outputs[src], port) == "L"  # what b received
    assert result.nodes["b"].output == "L"


async def test_a_failed_node_records_its_input_too():
    CALLS.pop("bad", None)
    doc = flow(
        [{"id": "start", "type": "start"}, echo("bad", fail_times=5)],
        [("start", "bad")],
    )
    cp = InMemoryCheckpointer()
    result = await plait.run(doc, {"q": "?"}, checkpointer=cp)
    assert result.status == "failed"
    (delta,) = [d for d in cp.runs[result.run_id].deltas if d.node_id == "bad" and d.status != "running"]
    assert delta.status == "error" and delta.input == (("start", "out", "in"),)


def test_port_value_rule():
    assert port_value({"a": 1}, "out") == {"a": 1}
    assert port_value({"a": 1}, "a") == 1
    assert port_value({"a": 1}, "b") == {"a": 1}
    assert port_value("text", "true") == "text"
