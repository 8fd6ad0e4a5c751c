"""Sub-flow children over HTTP: a child is a run of its own (GET /runs/{child}), listed with
`?parent_run_id=` and named in its parent's detail; it is visible to whoever can see its parent
(even without access to the child's flow), controlled through the parent (409 on the child), and
cancelled with it. The top-level listing does not show children."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from .test_api import make_flow, wait_status


def child_doc(flow_id: str = "kid") -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "ask", "type": "human", "config": {"message": "Go on?", "actions": ["yes"]}},
            {"id": "out", "type": "output", "config": {"name": "said", "value": "{{ask.action}}"}},
        ],
        "edges": [
            {"source": "start", "target": "ask"},
            {"source": "ask", "source_port": "yes", "target": "out"},
        ],
    }


def parent_doc(flow_id: str = "mom", child: str = "kid") -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "sub", "type": "subflow", "config": {"flow": child, "inputs": {}}},
            {"id": "out", "type": "output", "config": {"name": "got", "value": "{{sub.said}}"}},
        ],
        "edges": [{"source": "start", "target": "sub"}, {"source": "sub", "target": "out"}],
    }


async def waiting_parent(client: httpx.AsyncClient, **headers: str) -> dict[str, Any]:
    body = (await client.post("/api/v1/flows/mom/runs", json={"inputs": {}}, headers=headers)).json()
    assert body["status"] == "waiting", body
    return body


async def test_a_child_run_is_inspectable_and_listed_under_its_parent(client: httpx.AsyncClient) -> None:
    await make_flow(client, child_doc())
    await make_flow(client, parent_doc())
    parent = await waiting_parent(client)
    child_id = f"{parent['id']}.sub"

    detail = (await client.get(f"/api/v1/runs/{parent['id']}")).json()
    assert [c["id"] for c in detail["children"]] == [child_id]
    assert detail["children"][0]["status"] == "waiting" and detail["parent_run_id"] is None

    child = (await client.get(f"/api/v1/runs/{child_id}")).json()
    assert child["parent_run_id"] == parent["id"] and child["flow_id"] == "kid"
    assert child["status"] == "waiting" and child["nodes"]["ask"]["status"] == "waiting"
    assert child["tasks"] == []  # the person is asked through the parent's task
    listed = (await client.get("/api/v1/runs", params={"parent_run_id": parent["id"]})).json()
    assert [r["id"] for r in listed] == [child_id]
    top = (await client.get("/api/v1/runs")).json()
    assert parent["id"] in [r["id"] for r in top] and child_id not in [r["id"] for r in top]

    # a child is controlled through its parent
    r = await client.post(f"/api/v1/runs/{child_id}/cancel")
    assert r.status_code == 409 and parent["id"] in r.text

    (task,) = parent["tasks"]
    r = await client.post(f"/api/v1/human-tasks/{task['token']}/submit", json={"action": "yes"})
    assert r.status_code == 200, r.text
    done = await wait_status(client, parent["id"], {"completed", "failed"})
    assert done["status"] == "completed" and done["outputs"] == {"got": "yes"}, done
    child = (await client.get(f"/api/v1/runs/{child_id}")).json()
    assert child["status"] == "completed" and child["outputs"] == {"said": "yes"}
    assert child["duration_ms"] is not None
    events = (await client.get(f"/api/v1/runs/{child_id}/events")).text
    assert "event: run_finished" in events


async def test_cancelling_the_parent_cancels_its_child(client: httpx.AsyncClient) -> None:
    await make_flow(client, child_doc())
    await make_flow(client, parent_doc())
    parent = await waiting_parent(client)
    r = await client.post(f"/api/v1/runs/{parent['id']}/cancel")
    assert r.status_code == 200, r.text
    await wait_status(client, parent["id"], {"cancelled"})
    child = await wait_status(client, f"{parent['id']}.sub", {"cancelled"})
    assert child["finished_at"] is not None


async def test_a_child_is_visible_to_whoever_can_see_its_parent(client: httpx.AsyncClient) -> None:
    keys: dict[str, str] = {}
    users: dict[str, str] = {}
    for who in ("owner", "viewer", "other"):
        user = (
            await client.post(
                "/api/v1/users",
                json={"email": f"{who}@example.com", "role": "editor", "password": f"{who}-password"},
            )
        ).json()
        users[who] = user["id"]
        made = await client.post(
            f"/api/v1/users/{user['id']}/api-keys", json={"name": who, "scopes": ["read", "write", "run"]}
        )
        keys[who] = made.json()["key"]
    owner = {"x-api-key": keys["owner"]}
    for doc in (child_doc(), parent_doc()):
        assert (await client.post("/api/v1/flows", json={"document": doc}, headers=owner)).status_code == 201
        r = await client.post(f"/api/v1/flows/{doc['id']}/versions", json={}, headers=owner)
        assert r.status_code == 201, r.text
    r = await client.put(
        f"/api/v1/flows/mom/shares/{users['viewer']}", json={"role": "viewer"}, headers=owner
    )
    assert r.status_code < 300, r.text
    parent = await waiting_parent(client, **owner)
    child_id = f"{parent['id']}.sub"

    # the child acts as the parent's user
    as_owner = await client.get(f"/api/v1/runs/{child_id}", headers=owner)
    assert as_owner.status_code == 200
    # the viewer sees the parent's flow, not the child's: the child is seen with its parent
    viewer = {"x-api-key": keys["viewer"]}
    assert (await client.get("/api/v1/flows/kid", headers=viewer)).status_code == 404
    assert (await client.get(f"/api/v1/runs/{child_id}", headers=viewer)).status_code == 200
    listed = await client.get("/api/v1/runs", params={"parent_run_id": parent["id"]}, headers=viewer)
    assert [r["id"] for r in listed.json()] == [child_id]
    assert (await client.post(f"/api/v1/runs/{child_id}/cancel", headers=viewer)).status_code == 403
    # someone who cannot see the parent sees neither
    other = {"x-api-key": keys["other"]}
    assert (await client.get(f"/api/v1/runs/{child_id}", headers=other)).status_code == 404
    hidden = await client.get("/api/v1/runs", params={"parent_run_id": parent["id"]}, headers=other)
    assert hidden.status_code == 404
    assert child_id not in (await client.get("/api/v1/runs", headers=other)).text


async def test_cancelling_the_parent_stops_its_running_child(client: httpx.AsyncClient) -> None:
    slow = {
        "schema": "plait/flow@1",
        "id": "slowkid",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "wait", "type": "delay", "config": {"seconds": 30}},
            {"id": "out", "type": "output", "config": {"name": "said", "value": "late"}},
        ],
        "edges": [{"source": "start", "target": "wait"}, {"source": "wait", "target": "out"}],
    }
    await make_flow(client, slow)
    await make_flow(client, parent_doc("slowmom", "slowkid"))
    r = await client.post("/api/v1/flows/slowmom/runs", params={"mode": "background"}, json={"inputs": {}})
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    deadline = time.monotonic() + 10
    while (await client.get(f"/api/v1/runs/{run_id}.sub")).status_code == 404:  # not begun yet
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    child = await wait_status(client, f"{run_id}.sub", {"running"})
    assert child["parent_run_id"] == run_id
    r = await client.post(f"/api/v1/runs/{run_id}/cancel")
    assert r.status_code == 200, r.text
    await wait_status(client, run_id, {"cancelled"})
    child = await wait_status(client, f"{run_id}.sub", {"cancelled"}, timeout=5)
    assert child["nodes"]["wait"]["status"] == "cancelled"
