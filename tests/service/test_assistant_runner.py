"""The assistant's flow runner: the working flow runs as a real, persisted draft run of the
canvas's flow, as the user who asked, and comes back with its metrics (spec B58)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from plait.service import Services, Settings
from plait.service.assistant_runner import AssistantFlowRunner

CANVAS: dict[str, Any] = {
    "schema": "plait/flow@1",
    "id": "canvas",
    "inputs": {"type": "object", "properties": {"q": {"type": "string"}}},
    "nodes": [
        {"id": "start", "type": "start"},
        {"id": "out", "type": "output", "config": {"name": "answer", "value": "{{inputs.q}}"}},
    ],
    "edges": [{"source": "start", "target": "out"}],
}


@pytest.fixture
async def services(tmp_path: Path) -> Any:
    svc = await Services.open(
        Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/r.db", require_auth=False)
    )
    try:
        yield svc
    finally:
        await svc.close()


async def test_the_working_flow_runs_as_a_draft_run_of_the_canvas(services: Services) -> None:
    who = await services.users.local_admin()
    await services.flows.create(CANVAS, owner_id=who.user_id)
    working = copy.deepcopy(CANVAS)  # the assistant added an llm node the user has not applied
    working["nodes"].insert(
        1,
        {
            "id": "ask",
            "type": "llm",
            "config": {
                "provider": "scripted",
                "prompt": "{{inputs.q}}",
                "script": [{"content": "forty two", "usage": {"input_tokens": 7, "output_tokens": 2}}],
            },
        },
    )
    working["nodes"][2]["config"]["value"] = "{{ask}}"
    working["edges"] = [{"source": "start", "target": "ask"}, {"source": "ask", "target": "out"}]
    runner = AssistantFlowRunner(services.runs, flow_id="canvas", owner_id=who.user_id)

    out = await runner.run(working, {"q": "the answer?"})

    assert out["status"] == "completed", out
    assert out["result"] == {"answer": "forty two"}
    assert (out["input_tokens"], out["output_tokens"], out["total_tokens"]) == (7, 2, 9)
    assert out["duration_seconds"] > 0
    # persisted, in the flow's history, acting as the user, keeping the document it ran
    (listed,) = await services.runs.list(flow_id="canvas")
    assert listed["id"] == out["run_id"] == runner.run_ids[0]
    row = await services.store.runs.get(out["run_id"])
    assert row.owner_id == who.user_id and row.document == working
    # the saved draft is untouched
    assert (await services.store.flows.get("canvas")).draft == CANVAS


async def test_a_failed_run_reports_its_error(services: Services) -> None:
    who = await services.users.local_admin()
    await services.flows.create(CANVAS, owner_id=who.user_id)
    broken = copy.deepcopy(CANVAS)
    broken["nodes"][1]["config"]["value"] = "{{ missing_node.text }}"
    runner = AssistantFlowRunner(services.runs, flow_id="canvas", owner_id=who.user_id)
    out = await runner.run(broken, {"q": "x"})  # an invalid document never starts
    assert out["status"] == "not_started" and "missing_node" in str(out["problems"])
    assert runner.run_ids == [] and await services.runs.list(flow_id="canvas") == []
