"""An edge-LLM flow through the server: created over the API, run with its decider script, its
context observed while it waits for a person, the task answered through the tokenized endpoint,
and every decision stored in the `decisions` table and served by GET /runs/{id}/decisions.

Runs on SQLite, and on PostgreSQL too when PLAIT_TEST_POSTGRES_URL is set."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

import plait
from plait.api import create_app
from plait.service import Settings
from plait.store import Store

API_KEY = "edge-key-0123456789"
POSTGRES_URL = os.environ.get("PLAIT_TEST_POSTGRES_URL")


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param(
            "postgres", marks=pytest.mark.skipif(not POSTGRES_URL, reason="PLAIT_TEST_POSTGRES_URL")
        ),
    ]
)
async def database_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    if request.param == "postgres":
        from sqlalchemy import text

        from plait.store.models import Base

        assert POSTGRES_URL
        store = await Store.open(POSTGRES_URL)
        try:
            async with store.engine.begin() as conn:
                names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
                await conn.execute(text(f"TRUNCATE {names} CASCADE"))
        finally:
            await store.close()
        return POSTGRES_URL
    return f"sqlite+aiosqlite:///{tmp_path}/plait.db"


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(database_url=database_url, api_key=API_KEY, sweep_interval_s=0.1))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://test",
            headers={"x-api-key": API_KEY},
            timeout=30,
        ) as c,
    ):
        yield c


def decide(mode: str, nxt: list | None = None, skips: list | None = None, reason: str = "") -> dict:
    return {"json": {"mode": mode, "next": nxt or [], "skips": skips or [], "reason": reason}}


def support_flow() -> dict[str, Any]:
    """Seed 002's shape: inline nodes with JSON Schemas, `requires`, a human node, a scripted decider."""
    script = [
        decide("next", [{"node": "triage", "input": {"priority": "high"}}], reason="classify first"),
        decide(
            "next",
            [
                {
                    "node": "review",
                    "input": {"approved": True},
                    "human": {"message": "High-priority refund: approve?"},
                }
            ],
            skips=["auto_reply"],
            reason="high priority needs a person",
        ),
        decide("next", [{"node": "answer", "input": {"answer": "Refund granted"}}], reason="reply"),
    ]
    return {
        "schema": "plait/flow@1",
        "id": "support",
        "name": "Support ticket",
        "settings": {
            "policy": "edge_llm",
            "decider": {"provider": "scripted", "model": "decider", "script": script},
        },
        "nodes": [
            {
                "id": "triage",
                "type": "output",
                "input_schema": {
                    "type": "object",
                    "properties": {"priority": {"enum": ["low", "high"]}},
                    "required": ["priority"],
                },
                "output_schema": {"type": "object", "required": ["priority"]},
            },
            {
                "id": "auto_reply",
                "type": "message",
                "requires": ["triage"],
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "config": {"text": "Auto: {{input.text}}"},
            },
            {
                "id": "review",
                "type": "human",
                "requires": ["triage"],
                "input_schema": {"type": "object"},
                "config": {
                    "message": "Review the ticket",
                    "fields": [{"name": "approved", "type": "boolean"}],
                },
            },
            {
                "id": "answer",
                "type": "output",
                "requires": ["review"],
                "input_schema": {
                    "type": "object",
                    "properties": {"answer": {"type": "string"}},
                    "required": ["answer"],
                },
                "config": {"value": "{{input.answer}} (approved: {{review.approved}})"},
            },
        ],
    }


async def wait_status(client: httpx.AsyncClient, run_id: str, statuses: set[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while True:
        body = (await client.get(f"/api/v1/runs/{run_id}")).json()
        if body["status"] in statuses:
            return body
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.05)


async def test_edge_flow_over_the_api(client: httpx.AsyncClient) -> None:
    # A flow with inline nodes and JSON Schemas can be created (and a bad decider is refused).
    bad = support_flow()
    bad["id"] = "bad"
    bad["settings"]["decider"] = {"provider": "scripted", "model": "m", "temprature": 0}
    assert (await client.post("/api/v1/flows", json={"document": bad})).status_code == 201  # a draft
    r = await client.post("/api/v1/flows/bad/versions", json={"note": "v1"})
    assert r.status_code == 422 and "settings.decider.temprature" in r.text
    r = await client.post("/api/v1/flows", json={"document": support_flow()})
    assert r.status_code == 201, r.text
    assert (await client.post("/api/v1/flows/support/versions", json={"note": "v1"})).status_code == 201

    # Started, it runs triage, skips the auto reply and waits on the human node.
    r = await client.post("/api/v1/flows/support/runs", json={"inputs": {}})
    body = r.json()
    assert body["status"] == "waiting", body
    run_id, task = body["id"], body["tasks"][0]
    assert task["message"] == "High-priority refund: approve?" and task["prefill"] == {"approved": True}

    # Its context is observable while it waits.
    detail = (await client.get(f"/api/v1/runs/{run_id}")).json()
    assert detail["status"] == "waiting"
    nodes = detail["nodes"]
    assert nodes["triage"]["status"] == "ok" and nodes["triage"]["output"] == {"priority": "high"}
    assert nodes["auto_reply"]["status"] == "skipped" and nodes["review"]["status"] == "waiting"
    assert "answer" not in nodes or nodes["answer"]["status"] == "pending"

    decisions = (await client.get(f"/api/v1/runs/{run_id}/decisions")).json()
    assert [(d["step"], d["node_id"], d["data"]["mode"]) for d in decisions] == [
        (1, None, "next"),
        (2, "triage", "next"),
    ]
    assert decisions[1]["data"]["skips"] == ["auto_reply"]
    assert decisions[1]["data"]["reason"] == "high priority needs a person"

    # The person answers through the tokenized form; the run resumes and the decider goes on.
    anon = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    async with anon:
        r = await anon.post(
            f"/api/v1/human-tasks/{task['token']}/submit", json={"values": {"approved": "yes"}}
        )
        assert r.status_code == 200, r.text
    done = await wait_status(client, run_id, {"completed", "failed"})
    assert done["status"] == "completed", done
    assert done["outputs"] == {"triage": {"priority": "high"}, "answer": "Refund granted (approved: true)"}
    assert done["nodes"]["review"]["status"] == "ok"

    decisions = (await client.get(f"/api/v1/runs/{run_id}/decisions")).json()
    assert [(d["step"], d["node_id"]) for d in decisions] == [(1, None), (2, "triage"), (3, "review")]
    assert decisions[2]["data"]["next"] == [{"node": "answer", "input": {"answer": "Refund granted"}}]
    assert all(d["created_at"] > 0 for d in decisions)
    r = await client.get(f"/api/v1/runs/{run_id}/events")
    assert r.text.count("event: decision") == 3


async def test_sql_checkpointer_keeps_decisions_for_restore(database_url: str) -> None:
    store = await Store.open(database_url)
    try:
        doc = support_flow()
        first = await plait.run(doc, checkpointer=store.checkpointer)
        assert first.status == "waiting", first.error
        cp = await store.checkpointer.load(first.run_id)
        assert cp is not None and [d["step"] for d in cp.decisions] == [1, 2]
        assert cp.decisions == first.decisions
        rows = await store.decisions.list_decisions(first.run_id)
        assert [(r.step, r.node_id) for r in rows] == [(1, None), (2, "triage")]
        # A fresh process resumes from the stored checkpoint: the decider's script goes on at step 3.
        done = await plait.resume(doc, first.run_id, {"approved": False}, checkpointer=store.checkpointer)
        assert done.status == "completed", done.error
        assert done.outputs["answer"] == "Refund granted (approved: false)"
        assert [d["step"] for d in done.decisions] == [1, 2, 3]
    finally:
        await store.close()
