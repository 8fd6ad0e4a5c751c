"""A node's `on_error` (plait.engine.on_error): `fail` (the default) fails the run, `default`
continues with a value, `route` sends the error message down the node's `error` port; a restored
run keeps the handled outcome."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.nodes import default_registry
from plait.spec import FlowDocument
from plait.spec.validate import validate_document
from plait_testing import CALLS, flow


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def failing(on_error: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"id": "risky", "type": "test_echo", "config": {"value": "fine", "fail_times": 9}}
    if on_error is not None:
        node["on_error"] = on_error
    node.update(extra)
    return node


def _default_flow() -> dict[str, Any]:
    return flow(
        [
            failing({"mode": "default", "default": {"answer": "fallback"}}),
            {"id": "after", "type": "test_echo", "config": {"value": "got {{risky.answer}}"}},
            {"id": "o", "type": "output", "config": {"value": "{{after}}"}},
        ],
        [("risky", "after"), ("after", "o")],
    )


def _route_flow() -> dict[str, Any]:
    return flow(
        [
            failing({"mode": "route"}),
            {"id": "normal", "type": "test_echo", "config": {"value": "normal path"}},
            {"id": "handler", "type": "test_echo", "config": {"value": "handled: {{risky.error}}"}},
            {"id": "o", "type": "output", "config": {"value": "{{handler}}"}},
        ],
        [
            ("risky", "normal"),
            {"source": "risky", "source_port": "error", "target": "handler"},
            ("handler", "o"),
        ],
    )


async def test_fail_stays_the_default() -> None:
    doc = flow([failing(), {"id": "o", "type": "output", "config": {"value": "{{risky}}"}}], [("risky", "o")])
    result = await plait.run(doc)
    assert result.status == "failed"
    assert "scripted failure 1" in (result.error or "")
    CALLS.clear()
    explicit = flow([failing({"mode": "fail"})], [])
    assert (await plait.run(explicit)).status == "failed"


async def test_default_value_continues_the_run() -> None:
    result = await plait.run(_default_flow())
    assert result.status == "completed", result.error
    assert result.outputs == {"o": "got fallback"}
    risky = result.nodes["risky"]
    assert risky.status == "ok" and risky.output == {"answer": "fallback"}
    assert risky.error == "scripted failure 1"
    finished = [e for e in result.events if e.type == "node_finished" and e.node_id == "risky"]
    assert finished[0].data.ok is True and finished[0].data.output == {"answer": "fallback"}


async def test_default_comes_after_the_retries() -> None:
    doc = _default_flow()
    doc["nodes"][0]["retry"] = {"max_attempts": 3}
    result = await plait.run(doc)
    assert result.status == "completed"
    assert CALLS["risky"] == 3 and result.nodes["risky"].attempts == 3
    assert result.nodes["risky"].error == "scripted failure 3"


async def test_route_goes_to_the_error_port_with_the_message() -> None:
    result = await plait.run(_route_flow())
    assert result.status == "completed", result.error
    assert result.outputs == {"o": "handled: scripted failure 1"}
    assert result.nodes["risky"].output == {"error": "scripted failure 1"}
    assert result.nodes["risky"].ports == ("error",)
    assert result.nodes["normal"].status == "skipped"
    assert "normal" not in CALLS


async def test_route_without_a_failure_takes_the_normal_path() -> None:
    doc = _route_flow()
    doc["nodes"][0]["config"]["fail_times"] = 0
    doc["nodes"][3]["config"]["value"] = "{{normal}}"
    doc["edges"].append({"source": "normal", "target": "o"})
    result = await plait.run(doc)
    assert result.status == "completed", result.error
    assert result.outputs == {"o": "normal path"}
    assert result.nodes["handler"].status == "skipped"


def test_validation_of_on_error() -> None:
    def problems(doc: dict[str, Any]) -> list[tuple[str, str | None]]:
        found = validate_document(FlowDocument.model_validate(doc), default_registry())
        return [(p.code, p.field) for p in found]

    assert problems(_route_flow()) == []
    no_route = _route_flow()
    no_route["nodes"][0]["on_error"] = {"mode": "default", "default": 1}
    assert ("unknown_port", "source_port") in problems(no_route)
    misplaced = _route_flow()
    misplaced["nodes"][0]["on_error"] = {"mode": "route", "default": "x"}
    assert ("invalid_on_error", "on_error.default") in problems(misplaced)
    with pytest.raises(ValueError):
        FlowDocument.model_validate(flow([failing({"mode": "retry"})]))


async def test_a_restored_run_keeps_the_handled_outcome() -> None:
    cp = InMemoryCheckpointer()
    full = await plait.run(_default_flow(), checkpointer=cp, run_id="r")
    assert full.status == "completed"
    statuses = [(d.node_id, d.status) for d in cp.runs["r"].deltas]
    handled_at = statuses.index(("risky", "ok")) + 1
    assert cp.runs["r"].deltas[handled_at - 1].error == "scripted failure 1"
    crashed = cp.truncated("r", handled_at)  # the server stopped right after the handled failure
    CALLS.clear()
    again = await plait.resume(_default_flow(), "r", checkpointer=crashed)
    assert again.status == "completed" and again.outputs == full.outputs
    assert "risky" not in CALLS  # not executed again: its checkpoint holds the default
    assert again.nodes["risky"].error == "scripted failure 1"


async def test_a_node_cut_short_is_run_again_and_handled_again() -> None:
    cp = InMemoryCheckpointer()
    full = await plait.run(_route_flow(), checkpointer=cp, run_id="r")
    crashed = cp.truncated("r", 1)  # risky started, then the server stopped
    assert [(d.node_id, d.status) for d in crashed.runs["r"].deltas] == [("risky", "running")]
    CALLS.clear()
    again = await plait.resume(_route_flow(), "r", checkpointer=crashed)
    assert again.status == "completed" and again.outputs == full.outputs
    assert CALLS == {"risky": 1, "handler": 1}
    assert again.nodes["risky"].attempts == 2


async def test_an_inline_node_failure_is_handled_too() -> None:
    doc = flow(
        [
            {"id": "src", "type": "test_echo", "config": {"value": [1]}},
            {
                "id": "pick",
                "type": "list_ops",
                "config": {"operation": "nth", "n": 5},
                "on_error": {"mode": "default", "default": "none"},
            },
            {"id": "o", "type": "output", "config": {"value": "{{pick}}"}},
        ],
        [("src", "pick"), ("pick", "o")],
    )
    result = await plait.run(doc)
    assert result.status == "completed", result.error
    assert result.outputs == {"o": "none"}
    assert "out of range" in (result.nodes["pick"].error or "")


async def test_on_error_in_a_map_body() -> None:
    body = {
        "nodes": [
            {
                "id": "pick",
                "type": "list_ops",
                "config": {"operation": "nth", "n": 2, "source": "{{item}}"},
                "on_error": {"mode": "route"},
            },
            {"id": "bad", "type": "output", "config": {"value": "missing: {{pick.error}}"}},
            {"id": "good", "type": "output", "config": {"value": "{{pick}}"}},
        ],
        "edges": [
            {"source": "pick", "target": "good"},
            {"source": "pick", "source_port": "error", "target": "bad"},
        ],
    }
    doc = flow(
        [
            {"id": "each", "type": "map", "config": {"items": [[1, 2], [3]], "body": body}},
            {"id": "o", "type": "output", "config": {"value": "{{each}}"}},
        ],
        [("each", "o")],
    )
    result = await plait.run(doc)
    assert result.status == "completed", result.error
    first, second = result.outputs["o"]
    assert first == 2  # the body's one output that ran: the normal path
    assert second.startswith("missing: nth: n=2 is out of range")  # the error path
