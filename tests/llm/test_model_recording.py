"""Every model call says who answered (issue 14, defect 2): the `node_finished` event of an llm,
categorize or agent node carries `model: {provider, model}`, so a run with `provider: auto` that
fell back to the node's script says `scripted`, not silently."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.engine import events as ev


def _flow(node: dict[str, Any]) -> dict[str, Any]:
    return {"id": "rec", "nodes": [node], "edges": []}


def _finished(result: Any, node_id: str) -> ev.NodeFinished:
    (data,) = [e.data for e in result.events if e.node_id == node_id and isinstance(e.data, ev.NodeFinished)]
    return data


@pytest.mark.parametrize("provider", ["scripted", "auto"])
async def test_a_scripted_answer_is_recorded_as_scripted(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    node = {"id": "ask", "type": "llm", "config": {"provider": provider, "prompt": "hi", "script": ["hello"]}}
    result = await plait.run(_flow(node))
    assert result.status == "completed", result.error
    data = _finished(result, "ask")
    assert data.model == {"provider": "scripted", "model": "scripted"}
    assert data.wire()["model"] == {"provider": "scripted", "model": "scripted"}


async def test_categorize_and_agent_record_their_model() -> None:
    cat = {
        "id": "cat",
        "type": "categorize",
        "config": {
            "provider": "scripted",
            "model": "m1",
            "categories": [{"name": "bug"}, {"name": "other"}],
            "script": ["bug"],
        },
    }
    agent = {
        "id": "ag",
        "type": "agent",
        "config": {"provider": "scripted", "prompt": "go", "script": ["done"]},
    }
    result = await plait.run({"id": "rec2", "nodes": [cat, agent], "edges": []})
    assert result.status == "completed", result.error
    assert _finished(result, "cat").model == {"provider": "scripted", "model": "m1"}
    assert _finished(result, "ag").model == {"provider": "scripted", "model": "scripted"}


def test_the_field_round_trips_through_the_wire_form() -> None:
    data = ev.NodeFinished(True, output="x", duration_ms=1.0, model={"provider": "openai", "model": "smol"})
    assert ev.NodeFinished.from_wire(data.wire()).model == {"provider": "openai", "model": "smol"}
    assert "model" not in ev.NodeFinished(True, output="x", duration_ms=1.0).wire()
