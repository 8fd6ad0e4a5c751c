"""The deployment's run budgets reach every run the service executes (`Settings.limits`, from
PLAIT_MAX_NODE_OUTPUT_BYTES, PLAIT_MAX_SUBFLOW_DEPTH and PLAIT_MAX_NODE_EXECUTIONS): a
self-recursive sub-flow fanning out two ways stops with a clear error after a bounded number of
node executions and events, and an output over the limit fails its node."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from plait.engine.limits import DEFAULT_LIMITS, RunLimits
from plait.service import Services, Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path}/s.db",
        api_key="k",
        lease_ttl_s=1.0,
        sweep_interval_s=0.1,
        sse_heartbeat_s=0.2,
    )


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().limits == DEFAULT_LIMITS
    monkeypatch.setenv("PLAIT_MAX_NODE_OUTPUT_BYTES", "5000")
    monkeypatch.setenv("PLAIT_MAX_SUBFLOW_DEPTH", "4")
    monkeypatch.setenv("PLAIT_MAX_NODE_EXECUTIONS", "0")
    assert Settings.from_env().limits == RunLimits(
        max_node_output_bytes=5000, max_subflow_depth=4, max_node_executions=0
    )
    monkeypatch.setenv("PLAIT_MAX_NODE_EXECUTIONS", "lots")
    with pytest.raises(ValueError, match="PLAIT_MAX_NODE_EXECUTIONS must be a whole number"):
        Settings.from_env()
    monkeypatch.setenv("PLAIT_MAX_NODE_EXECUTIONS", "-1")
    with pytest.raises(ValueError, match="PLAIT_MAX_NODE_EXECUTIONS must be 0"):
        Settings.from_env()


async def _finished(services: Services, run_id: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        row = await services.store.runs.get(run_id)
        if row is not None and row.status in ("completed", "failed", "cancelled"):
            return row
        assert time.monotonic() < deadline, row.status if row else None
        await asyncio.sleep(0.05)


RECURSIVE = {
    "schema": "plait/flow@1",
    "id": "rec",
    "nodes": [
        {"id": "start", "type": "start"},
        {"id": "left", "type": "subflow", "config": {"flow": "rec", "inputs": {}}},
        {"id": "right", "type": "subflow", "config": {"flow": "rec", "inputs": {}}},
    ],
    "edges": [{"source": "start", "target": "left"}, {"source": "start", "target": "right"}],
}


async def test_a_recursion_bomb_stops_at_the_execution_limit(settings: Settings) -> None:
    limit = 400
    s = await Services.open(replace(settings, limits=RunLimits(max_node_executions=limit)))
    try:
        await s.flows.create(RECURSIVE)
        await s.flows.publish("rec")
        run_id, _ = await s.runs.start("rec", {})
        row = await _finished(s, run_id)
        assert row.status == "failed"
        assert f"the run reached its limit of {limit} node executions" in row.error
        assert "PLAIT_MAX_NODE_EXECUTIONS" in row.error
        runs = await s.store.runs.list_runs(top_level=True, limit=1000)
        assert [r.id for r in runs] == [run_id]  # sub-flow children are runs of their own, below it
        children = await s.store.runs.list_runs(parent_run_id=run_id, limit=1000)
        assert {c.id for c in children} <= {f"{run_id}.left", f"{run_id}.right"} and children
        assert all(c.status in ("failed", "cancelled") for c in children)
        events = await s.store.events.list_events(run_id)
        starts = [e for e in events if e.type == "node_started"]
        assert limit <= len(starts) <= 2 * limit  # bounded: the limit, and the starts it refused
        assert len(events) <= 6 * limit
    finally:
        await s.close()


async def test_the_depth_limit_applies_to_service_runs(settings: Settings) -> None:
    chain = {**RECURSIVE, "nodes": RECURSIVE["nodes"][:2], "edges": RECURSIVE["edges"][:1]}
    s = await Services.open(replace(settings, limits=RunLimits(max_subflow_depth=2)))
    try:
        await s.flows.create(chain)
        await s.flows.publish("rec")
        run_id, _ = await s.runs.start("rec", {})
        row = await _finished(s, run_id)
        assert row.status == "failed" and "sub-flows are nested deeper than 2 levels" in row.error
    finally:
        await s.close()


async def test_an_output_over_the_limit_fails_its_node(settings: Settings) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "big",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "twice", "type": "output", "config": {"value": "{{inputs.text}}{{inputs.text}}"}},
        ],
        "edges": [{"source": "start", "target": "twice"}],
    }
    s = await Services.open(replace(settings, limits=RunLimits(max_node_output_bytes=1000)))
    try:
        await s.flows.create(doc)
        await s.flows.publish("big")
        run_id, _ = await s.runs.start("big", {"text": "x" * 600})  # the start node: 613 bytes
        row = await _finished(s, run_id)
        assert row.status == "failed"
        assert "the output of node 'twice' is 1.2 KiB (1,202 bytes) as JSON" in row.error
        assert "over the limit of 1,000 bytes per node output" in row.error
        detail = await s.runs.get(run_id)
        assert detail["nodes"]["twice"]["status"] == "error"
        assert "PLAIT_MAX_NODE_OUTPUT_BYTES" in detail["nodes"]["twice"]["error"]
    finally:
        await s.close()
