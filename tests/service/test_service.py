"""The service layer without HTTP: restart recovery, waiting runs, secrets scrubbing, examples."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from plait.service import Conflict, Invalid, NotFound, Services, Settings
from plait.service.flows import scrub_secrets

REPO = Path(__file__).resolve().parents[2]


def chain(flow_id: str = "chain", n: int = 4, delay: float = 0.2) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "start"}]
    edges = []
    prev = "start"
    for i in range(n):
        nodes.append({"id": f"d{i}", "type": "delay", "config": {"seconds": delay}})
        edges.append({"source": prev, "target": f"d{i}"})
        prev = f"d{i}"
    nodes.append({"id": "out", "type": "output", "config": {"name": "v", "value": "{{inputs.x}}"}})
    edges.append({"source": prev, "target": "out"})
    return {"schema": "plait/flow@1", "id": flow_id, "nodes": nodes, "edges": edges}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path}/s.db",
        api_key="k",
        lease_ttl_s=1.0,
        sweep_interval_s=0.1,
        sse_heartbeat_s=0.2,
    )


async def wait_for(services: Services, run_id: str, statuses: set[str], timeout: float = 15) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        row = await services.store.runs.get(run_id)
        if row is not None and row.status in statuses:
            return row
        assert time.monotonic() < deadline, row.status if row else None
        await asyncio.sleep(0.05)


async def test_shutdown_mid_run_then_restart_continues(settings: Settings) -> None:
    a = await Services.open(settings)
    await a.flows.create(chain())
    await a.flows.publish("chain")
    run_id, _ = await a.runs.start("chain", {"x": 7})
    deadline = time.monotonic() + 10
    while not any(r.node_id == "d1" for r in await a.store.runs.node_runs(run_id)):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    await a.close()  # interrupts the run without cancelling it, releases the lease
    row = await (b := await Services.open(settings)).store.runs.get(run_id)
    try:
        assert row is not None
        row = await wait_for(b, run_id, {"completed", "failed"})
        assert row.status == "completed" and row.outputs == {"v": 7}
        oks = [r.node_id for r in await b.store.runs.node_runs(run_id) if r.status == "ok"]
        assert sorted(oks) == sorted(set(oks))  # no node recorded twice
    finally:
        await b.close()


async def test_waiting_runs_stay_waiting_across_restart(settings: Settings) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "h",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "ask", "type": "human", "config": {"fields": [{"name": "a"}]}},
            {"id": "out", "type": "output", "config": {"name": "a", "value": "{{ask.a}}"}},
        ],
        "edges": [
            {"source": "start", "target": "ask"},
            {"source": "ask", "source_port": "submit", "target": "out"},
        ],
    }
    a = await Services.open(settings)
    await a.flows.create(doc)
    result = await a.runs.run_sync("h", {}, version="draft")
    assert result["status"] == "waiting"
    token = result["tasks"][0]["token"]
    await a.close()
    b = await Services.open(settings)
    try:
        await asyncio.sleep(0.3)
        assert (await b.store.runs.get(result["id"])).status == "waiting"
        with pytest.raises(Invalid):
            await b.runs.submit_task(token, {"a": None})
        await b.runs.submit_task(token, {"a": "yes"})
        row = await wait_for(b, result["id"], {"completed", "failed"})
        assert row.outputs == {"a": "yes"}
        with pytest.raises(Conflict):
            await b.runs.submit_task(token, {"a": "again"})
        with pytest.raises(NotFound):
            await b.runs.get_task("nope")
    finally:
        await b.close()


async def test_import_examples_once(settings: Settings) -> None:
    s = await Services.open(settings)
    try:
        imported = await s.import_examples(REPO / "examples")
        assert "expense-approval" in imported
        assert await s.import_examples(REPO / "examples") == []
    finally:
        await s.close()


def test_scrub_secrets() -> None:
    doc = {
        "nodes": [
            {
                "config": {
                    "api_key": "sk-1",
                    "token": "{{env.T}}",
                    "headers": {"Authorization": "Bearer x"},
                    "n": 1,
                }
            }
        ]
    }
    clean = scrub_secrets(doc)
    cfg = clean["nodes"][0]["config"]
    assert cfg == {
        "api_key": "********",
        "token": "{{env.T}}",
        "headers": {"Authorization": "********"},
        "n": 1,
    }
    assert doc["nodes"][0]["config"]["api_key"] == "sk-1"


def test_scrub_secrets_in_mcp_servers_keeps_references() -> None:
    settings = {
        "mcp_servers": {
            "gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_literal", "REF": "${GITHUB_TOKEN}"}},
            "web": {
                "url": "https://mcp.example.com/mcp",
                "headers": {
                    "Authorization": "Bearer ${WEB_TOKEN}",
                    "X-Api-Key": "k-literal",
                    "Cookie": "s=1",
                },
            },
        }
    }
    clean = scrub_secrets(settings)["mcp_servers"]
    assert clean["gh"]["env"] == {"GITHUB_TOKEN": "********", "REF": "${GITHUB_TOKEN}"}
    assert clean["web"]["headers"] == {
        "Authorization": "Bearer ${WEB_TOKEN}",
        "X-Api-Key": "********",
        "Cookie": "********",
    }


async def test_cancel_flag_in_the_database_reaches_the_run(settings: Settings) -> None:
    s = await Services.open(settings)
    try:
        await s.flows.create(chain("slow", n=2, delay=5.0))
        run_id, _ = await s.runs.start("slow", {"x": 1}, version="draft")
        await wait_for(s, run_id, {"running"})
        assert await s.store.runs.request_cancel(run_id)  # as another process would
        row = await wait_for(s, run_id, {"cancelled", "completed", "failed"}, timeout=3)
        assert row.status == "cancelled"
    finally:
        await s.close()


async def test_orphaned_queued_run_is_started_on_recovery(settings: Settings) -> None:
    s = await Services.open(settings)
    try:
        await s.flows.create(chain("c", n=1, delay=0.0))
        await s.flows.publish("c")
        await s.store.runs.create(
            "orphan", "c", inputs={"x": 5}, version=1, status="queued", now=time.time() - 60
        )
        assert "orphan" in await s.runs.recover()
        row = await wait_for(s, "orphan", {"completed", "failed"})
        assert row.status == "completed" and row.outputs == {"v": 5}
    finally:
        await s.close()


def echo_flow(text: str) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "echo",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "out", "type": "output", "config": {"name": "v", "value": text}},
        ],
        "edges": [{"source": "start", "target": "out"}],
    }


async def test_cached_latest_version_and_variables_follow_changes(settings: Settings) -> None:
    """Runs read the latest version and the variables from a short-lived cache: changes made
    through this process show at once, another process's within the TTL."""
    a = await Services.open(settings)
    b = await Services.open(settings)  # a second server on the same database
    try:
        await a.flows.create(echo_flow("one {{env.GREETING}}"))
        await a.flows.publish("echo")
        await a.store.variables.set("GREETING", "hi")
        assert (await a.runs.run_sync("echo", {}))["outputs"] == {"v": "one hi"}

        await a.flows.update("echo", echo_flow("two {{env.GREETING}}"))
        await a.flows.publish("echo")
        await a.store.variables.set("GREETING", "hello")
        assert (await a.runs.run_sync("echo", {}))["outputs"] == {"v": "two hello"}

        # b cached version 2 and "hello"; a publishes version 3 and changes the variable.
        assert (await b.runs.run_sync("echo", {}))["outputs"] == {"v": "two hello"}
        await a.flows.update("echo", echo_flow("three {{env.GREETING}}"))
        await a.flows.publish("echo")
        await a.store.variables.set("GREETING", "hey")
        deadline = time.monotonic() + b.flows.cache_ttl_s + 5
        while (await b.runs.run_sync("echo", {}))["outputs"] != {"v": "three hey"}:
            assert time.monotonic() < deadline, "b never saw the new version and variable"
            await asyncio.sleep(0.1)

        await a.flows.delete_version("echo", 3)
        assert (await a.runs.run_sync("echo", {}))["outputs"] == {"v": "two hey"}
    finally:
        await b.close()
        await a.close()


async def test_a_draft_run_continues_the_document_it_started_with(settings: Settings) -> None:
    """Editing the draft while a run of it waits (or after it ran) does not change that run:
    resume, recovery and retry use the document the run started with."""
    doc = {
        "schema": "plait/flow@1",
        "id": "d",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "ask", "type": "human", "config": {"fields": [{"name": "a"}]}},
            {"id": "out", "type": "output", "config": {"name": "a", "value": "first {{ask.a}}"}},
        ],
        "edges": [
            {"source": "start", "target": "ask"},
            {"source": "ask", "source_port": "submit", "target": "out"},
        ],
    }
    a = await Services.open(settings)
    try:
        await a.flows.create(doc)
        waiting = await a.runs.run_sync("d", {}, version="draft")
        assert waiting["status"] == "waiting"
        # The draft changes: `ask` is gone, `out` says something else.
        await a.flows.update(
            "d",
            {
                "schema": "plait/flow@1",
                "id": "d",
                "nodes": [
                    {"id": "start", "type": "start"},
                    {"id": "out", "type": "output", "config": {"name": "a", "value": "second"}},
                ],
                "edges": [{"source": "start", "target": "out"}],
            },
        )
        await a.runs.submit_task(waiting["tasks"][0]["token"], {"a": "yes"})
        row = await wait_for(a, waiting["id"], {"completed", "failed"})
        assert (row.status, row.outputs) == ("completed", {"a": "first yes"})

        retried = await a.runs.retry(waiting["id"], "out")
        row = await wait_for(a, retried, {"completed", "failed"})
        assert (row.status, row.outputs) == ("completed", {"a": "first yes"})

        fresh = await a.runs.run_sync("d", {}, version="draft")
        assert fresh["outputs"] == {"a": "second"}
    finally:
        await a.close()
