"""Run budgets (plait.engine.limits): the output size of a node, the depth of sub-flows and the
node executions of a run tree, each broken with a clear error naming the limit and the fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

import plait
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.engine.limits import DEFAULT_LIMITS, RunLimits, output_size_over
from plait.engine.services import RunServices
from plait_testing import flow


def _services(**limits: int) -> RunServices:
    return RunServices(limits=RunLimits(**limits))


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


# ------------------------------------------------------------------------------- output size
@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        12345678901234567890,
        -1.5e300,
        "",
        "x" * 1000,
        "é" * 600,  # two bytes each
        '"\\\n\x01' * 300,  # escapes: up to six bytes each
        {"a": [1, 2, {"b": "c" * 500}], "d": None},
        [["x" * 10] * 10] * 10,
        ("t", 1),
    ],
)
def test_output_size_is_the_size_of_the_json_encoding(value: Any) -> None:
    size = _json_size(value)
    assert output_size_over(value, size) is None  # at the limit: within it
    if size > 1:
        assert output_size_over(value, size - 1) == size
    assert output_size_over(value, 0) is None  # 0: no limit


def test_output_size_of_values_that_are_not_json() -> None:
    assert output_size_over({"when": object()}, 10) is not None  # measured through str()
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    assert output_size_over(deep, 10) is None  # not this check's business (nor a crash)


def _big(node_type: str) -> dict[str, Any]:
    return flow(
        [
            {"id": "big", "type": node_type, "config": {"value": "{{inputs.text}}"}},
            {"id": "out", "type": "output", "config": {"value": "{{big}}"}},
        ],
        [("big", "out")],
    )


@pytest.mark.parametrize("node_type", ["test_echo", "output"])  # a task node, an inline node
async def test_an_output_over_the_limit_fails_its_node_with_the_size_limit_and_fix(node_type: str) -> None:
    doc = _big(node_type)
    text = "x" * 3000
    result = await plait.run(
        doc,
        {"text": text},
        checkpointer=InMemoryCheckpointer(),
        services=_services(max_node_output_bytes=2048),
    )
    assert result.status == "failed"
    assert result.nodes["big"].status == "error"
    message = result.nodes["big"].error or ""
    assert "node 'big'" in message and "3,002 bytes" in message and "2.0 KiB (2,048 bytes)" in message
    assert "PLAIT_MAX_NODE_OUTPUT_BYTES" in message and "fix:" in message
    assert result.error and result.error.startswith("node 'big' failed: the output of node 'big' is")
    assert result.nodes["big"].attempts == 1  # not retried: the same output would come back

    within = await plait.run(doc, {"text": "x" * 2000}, services=_services(max_node_output_bytes=2048))
    assert within.status == "completed" and within.outputs["out"] == "x" * 2000
    unlimited = await plait.run(doc, {"text": text}, services=_services(max_node_output_bytes=0))
    assert unlimited.status == "completed"


async def test_the_default_output_limit_is_one_mebibyte() -> None:
    assert DEFAULT_LIMITS.max_node_output_bytes == 1 << 20
    result = await plait.run(_big("test_echo"), {"text": "x" * (1 << 20)})
    assert result.status == "failed" and "over the limit of 1.0 MiB" in (result.error or "")


async def test_a_retried_node_is_not_retried_for_its_output_size() -> None:
    doc = flow(
        [
            {
                "id": "big",
                "type": "test_echo",
                "config": {"value": "{{inputs.text}}"},
                "retry": {"max_attempts": 3},
            }
        ]
    )
    result = await plait.run(doc, {"text": "x" * 100}, services=_services(max_node_output_bytes=50))
    assert result.status == "failed" and result.nodes["big"].attempts == 1
    assert not [e for e in result.events if e.type == "node_retrying"]


# ------------------------------------------------------------------------------- node executions
def _map(items: int) -> dict[str, Any]:
    body = {
        "nodes": [
            {"id": "e", "type": "test_echo", "config": {"value": "{{item}}"}},
            {"id": "o", "type": "output", "config": {"value": "{{e}}"}},
        ],
        "edges": [{"source": "e", "target": "o"}],
    }
    return flow(
        [
            {
                "id": "m",
                "type": "map",
                "config": {"items": list(range(items)), "body": body, "max_concurrency": 8},
            }
        ]
    )


async def test_loop_and_map_iterations_count_as_node_executions() -> None:
    ok = await plait.run(_map(10), services=_services(max_node_executions=21))  # m + 10 x (e, o)
    assert ok.status == "completed", ok.error
    over = await plait.run(_map(10), services=_services(max_node_executions=20))
    assert over.status == "failed"
    assert "the run reached its limit of 20 node executions" in (over.error or "")
    assert "PLAIT_MAX_NODE_EXECUTIONS" in (over.error or "")


async def test_retries_count_as_node_executions() -> None:
    doc = flow([{"id": "a", "type": "test_echo", "config": {"fail_times": 5}, "retry": {"max_attempts": 5}}])
    result = await plait.run(doc, services=_services(max_node_executions=3))
    assert result.status == "failed" and "limit of 3 node executions" in (result.error or "")
    assert result.nodes["a"].attempts == 4  # the 4th start found the budget spent and did not run


def _recursive(fanout: int) -> dict[str, Any]:
    """A flow that runs itself as a sub-flow `fanout` times: it never ends on its own."""
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "start"}]
    nodes += [
        {"id": f"s{i}", "type": "subflow", "config": {"flow": "rec", "inputs": {}}} for i in range(fanout)
    ]
    return flow(nodes, [("start", f"s{i}") for i in range(fanout)], id="rec")


def _child_starts(result: plait.RunResult) -> int:
    return sum(1 for e in result.events if e.type == "node_started" and e.node_id and "/" in e.node_id)


async def test_a_self_recursive_subflow_fanning_out_stops_at_the_execution_limit() -> None:
    rec = _recursive(2)
    result = await plait.run(rec, flows={"rec": rec}, services=_services(max_node_executions=300))
    assert result.status == "failed"
    assert "the run reached its limit of 300 node executions" in (result.error or "")
    # Every child node start is counted (and forwarded to the parent's log): bounded by the limit
    # plus the starts refused once it was spent (one per branch still running then).
    assert 250 <= _child_starts(result) <= 600
    assert len(result.events) < 2000


async def test_the_default_execution_limit_stops_a_recursion_bomb() -> None:
    rec = _recursive(2)
    result = await plait.run(rec, flows={"rec": rec})
    assert result.status == "failed"
    assert "limit of 10,000 node executions" in (result.error or "")
    assert _child_starts(result) <= 2 * DEFAULT_LIMITS.max_node_executions


async def test_sub_flow_depth_limit() -> None:
    rec = _recursive(1)
    result = await plait.run(rec, flows={"rec": rec}, services=_services(max_subflow_depth=3))
    assert result.status == "failed"
    assert "sub-flows are nested deeper than 3 levels" in (result.error or "")
    assert "PLAIT_MAX_SUBFLOW_DEPTH" in (result.error or "")
    depths = {e.node_id.count("/") for e in result.events if e.type == "node_started" and e.node_id}
    assert max(depths) == 3  # the parent's nodes, then three levels of children
    default = await plait.run(rec, flows={"rec": rec})
    assert "nested deeper than 16 levels" in (default.error or "")


async def test_each_top_level_run_has_its_own_execution_count() -> None:
    services = _services(max_node_executions=21)
    for _ in range(3):  # the same services for every run, as the server does
        result = await plait.run(_map(10), services=services)
        assert result.status == "completed", result.error
