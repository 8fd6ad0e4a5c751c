"""A human node inside a loop body, through the API: each iteration's question is a task of the
loop node, answered on the task route; the run completes with every answer (plait.engine.body_wait)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from .test_api import make_flow, wait_status

LOOP_ASK = {
    "schema": "plait/flow@1",
    "id": "loop-ask",
    "nodes": [
        {"id": "start", "type": "start"},
        {
            "id": "l",
            "type": "loop",
            "config": {
                "max_iterations": 2,
                "variables": {"total": 0},
                "body": {
                    "nodes": [
                        {
                            "id": "ask",
                            "type": "human",
                            "config": {
                                "message": "Amount {{index}}?",
                                "fields": [{"name": "amount", "type": "integer"}],
                            },
                        },
                        {
                            "id": "add",
                            "type": "assign",
                            "config": {
                                "assignments": [{"variable": "total", "op": "+=", "value": "{{ask.amount}}"}]
                            },
                        },
                    ],
                    "edges": [{"source": "ask", "source_port": "submit", "target": "add"}],
                },
            },
        },
        {"id": "out", "type": "output", "config": {"name": "total", "value": "{{vars.total}}"}},
    ],
    "edges": [{"source": "start", "target": "l"}, {"source": "l", "target": "out"}],
}


async def next_task(client: httpx.AsyncClient, run_id: str, answered: set[str]) -> dict[str, Any]:
    """The run's task not answered yet, once the run waits for it."""
    deadline = time.monotonic() + 15
    while True:
        run = (await client.get(f"/api/v1/runs/{run_id}")).json()
        fresh = [t for t in run.get("tasks") or [] if t["token"] not in answered]
        if run["status"] == "waiting" and fresh:
            assert len(fresh) == 1, fresh
            (task,) = fresh
            return dict(task)
        assert run["status"] in ("running", "waiting") and time.monotonic() < deadline, run
        await asyncio.sleep(0.05)


async def test_a_loop_body_asks_people_through_its_loop_nodes_tasks(client: httpx.AsyncClient) -> None:
    await make_flow(client, LOOP_ASK)
    body = (await client.post("/api/v1/flows/loop-ask/runs", json={"inputs": {}})).json()
    assert body["status"] == "waiting", body
    run_id = body["id"]
    answered: set[str] = set()
    for i, amount in enumerate(["3", "4"]):
        task = await next_task(client, run_id, answered)
        assert task["node_id"] == "l" and task["message"] == f"Amount {i}?"
        url = f"/api/v1/human-tasks/{task['token']}/submit"
        r = await client.post(url, json={"values": {"amount": "x"}})
        assert r.status_code == 422  # refused before the run resumes
        r = await client.post(url, json={"values": {"amount": amount}})
        assert r.status_code == 200, r.text
        answered.add(task["token"])
    done = await wait_status(client, run_id, {"completed", "failed"})
    assert done["status"] == "completed", done
    assert done["outputs"] == {"total": 7}
