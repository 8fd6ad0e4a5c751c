"""The HTTP API in-process (httpx ASGITransport): flows, versions, runs, SSE, human tasks, errors."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from .conftest import API_KEY, human_flow, linear_flow


def parse_sse(text: str) -> list[dict[str, Any]]:
    events = []
    for block in text.split("\n\n"):
        fields: dict[str, Any] = {}
        for line in block.splitlines():
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
        if "data" in fields:
            events.append(
                {"id": int(fields["id"]), "event": fields["event"], "data": json.loads(fields["data"])}
            )
    return events


async def make_flow(client: httpx.AsyncClient, doc: dict[str, Any], publish: bool = True) -> str:
    r = await client.post("/api/v1/flows", json={"document": doc})
    assert r.status_code == 201, r.text
    if publish:
        r = await client.post(f"/api/v1/flows/{doc['id']}/versions", json={"note": "v"})
        assert r.status_code == 201, r.text
    return doc["id"]


async def wait_status(
    client: httpx.AsyncClient, run_id: str, statuses: set[str], timeout: float = 15
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        r = await client.get(f"/api/v1/runs/{run_id}")
        assert r.status_code == 200, r.text
        body = r.json()
        if body["status"] in statuses:
            return body
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.05)


# ------------------------------------------------------------------------------------------ meta
async def test_health_and_auth(client: httpx.AsyncClient) -> None:
    bare = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    async with bare:
        assert (await bare.get("/healthz")).status_code == 200
        assert (await bare.get("/")).status_code == 200
        r = await bare.get("/api/v1/flows")
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "unauthorized"
        r = await bare.get("/api/v1/flows", headers={"x-api-key": "nope"})
        assert r.status_code == 401
        r = await bare.get("/api/v1/flows", headers={"Authorization": f"Bearer {API_KEY}"})
        assert r.status_code == 200
        r = await bare.get("/api/v1/human-tasks/unknown-token")
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "not_found"


async def test_database_keys_are_accepted(app: Any, client: httpx.AsyncClient) -> None:
    services = app.state.services
    _, key = await services.store.api_keys.create("ci")
    r = await client.get("/api/v1/flows", headers={"x-api-key": key})
    assert r.status_code == 200


# ----------------------------------------------------------------------------------------- flows
async def test_flow_crud_versions_export(client: httpx.AsyncClient) -> None:
    doc = linear_flow("crud", n=1)
    doc["nodes"].append(
        {
            "id": "call",
            "type": "http",
            "config": {
                "url": "https://example.com",
                "headers": {"X-Api-Key": "sk-123", "Authorization": "{{env.TOKEN}}"},
            },
        }
    )
    r = await client.post("/api/v1/flows", json={"document": doc, "name": "My flow"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["id"] == "crud" and body["name"] == "My flow" and body["latest_version"] == 0
    r = await client.post("/api/v1/flows", json={"document": doc})
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "conflict"

    r = await client.get("/api/v1/flows")
    assert [f["id"] for f in r.json()] == ["crud"]
    r = await client.put("/api/v1/flows/crud", json={"description": "d"})
    assert r.json()["description"] == "d"

    r = await client.post("/api/v1/flows/crud/versions", json={"note": "first"})
    assert r.status_code == 201 and r.json()["version"] == 1
    r = await client.post("/api/v1/flows/crud/versions")
    assert r.json()["version"] == 2
    r = await client.get("/api/v1/flows/crud/versions")
    assert [v["version"] for v in r.json()] == [1, 2]
    r = await client.get("/api/v1/flows/crud/versions/1")
    assert r.json()["note"] == "first" and r.json()["document"]["id"] == "crud"
    assert (await client.delete("/api/v1/flows/crud/versions/2")).status_code == 204
    assert (await client.get("/api/v1/flows/crud/versions/2")).status_code == 404

    r = await client.get("/api/v1/flows/crud/export")
    exported = json.loads(r.text)
    headers = exported["nodes"][-1]["config"]["headers"]
    assert headers["X-Api-Key"] == "********"
    assert headers["Authorization"] == "{{env.TOKEN}}"
    r = await client.get("/api/v1/flows/crud/export", params={"format": "yaml", "version": "1"})
    assert r.status_code == 200 and "sk-123" not in r.text and "id: crud" in r.text

    assert (await client.delete("/api/v1/flows/crud")).status_code == 204
    assert (await client.get("/api/v1/flows/crud")).status_code == 404
    assert (await client.delete("/api/v1/flows/crud")).status_code == 404


async def test_import_yaml_and_invalid_publish(client: httpx.AsyncClient) -> None:
    text = "schema: plait/flow@1\nid: imp\nnodes:\n  - {id: start, type: start}\n  - {id: o, type: output, config: {value: 1}}\nedges:\n  - {source: start, target: o}\n"
    r = await client.post("/api/v1/flows/import", json={"content": text, "publish": True})
    assert r.status_code == 201, r.text
    assert r.json()["latest_version"] == 1
    r = await client.post("/api/v1/flows/import", json={"content": "{not json"})
    assert r.status_code == 422 and r.json()["error"]["details"]["problems"]
    r = await client.post("/api/v1/flows/import", json={"content": "/etc/passwd"})
    assert r.status_code == 422

    bad = {"schema": "plait/flow@1", "id": "bad", "nodes": [{"id": "x", "type": "no_such_type"}], "edges": []}
    r = await client.post("/api/v1/flows", json={"document": bad})
    assert r.status_code == 201 and r.json()["problems"]
    r = await client.post("/api/v1/flows/bad/versions")
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "invalid_flow" and err["details"]["problems"]
    r = await client.post("/api/v1/flows/bad/runs", params={"version": "draft"}, json={"inputs": {}})
    assert r.status_code == 422 and r.json()["error"]["details"]["problems"]


# ------------------------------------------------------------------------------------------ runs
async def test_sync_run_and_status(client: httpx.AsyncClient) -> None:
    await make_flow(client, linear_flow("lin", n=2))
    r = await client.post("/api/v1/flows/lin/runs", json={"inputs": {"query": "hi"}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "completed" and body["outputs"] == {"result": "hi!"} and body["error"] is None
    r = await client.get(f"/api/v1/runs/{body['id']}")
    detail = r.json()
    assert detail["inputs"] == {"query": "hi"} and detail["version"] == 1
    assert {n: v["status"] for n, v in detail["nodes"].items()} == {
        "start": "ok",
        "d0": "ok",
        "d1": "ok",
        "out": "ok",
    }
    assert "duration_ms" in detail["nodes"]["d0"]
    r = await client.get("/api/v1/runs", params={"flow_id": "lin", "status": "completed"})
    assert [x["id"] for x in r.json()] == [body["id"]]
    assert (await client.get("/api/v1/runs", params={"flow_id": "other"})).json() == []


async def test_run_input_and_version_errors(client: httpx.AsyncClient) -> None:
    await make_flow(client, linear_flow("lin", n=1), publish=False)
    r = await client.post("/api/v1/flows/lin/runs", json={"inputs": {}})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "invalid_input" and err["details"]["problems"][0]["field"] == "inputs.query"
    r = await client.post(
        "/api/v1/flows/lin/runs", params={"version": "latest"}, json={"inputs": {"query": "x"}}
    )
    assert r.status_code == 409
    r = await client.post("/api/v1/flows/lin/runs", params={"version": "7"}, json={"inputs": {"query": "x"}})
    assert r.status_code == 404
    r = await client.post(
        "/api/v1/flows/lin/runs", params={"version": "bogus"}, json={"inputs": {"query": "x"}}
    )
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
    r = await client.post("/api/v1/flows/lin/runs", params={"mode": "sync"}, json={"inputs": {"query": "x"}})
    assert r.status_code == 200 and r.json()["status"] == "completed"  # default: the draft
    r = await client.post("/api/v1/flows/nope/runs", json={"inputs": {}})
    assert r.status_code == 404
    r = await client.post(
        "/api/v1/flows/lin/runs", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    r = await client.post("/api/v1/flows/lin/runs", json={"inputs": [1]})
    assert r.status_code == 422
    assert (await client.get("/api/v1/runs/nope")).status_code == 404


async def test_background_run_and_webhook(client: httpx.AsyncClient) -> None:
    await make_flow(client, linear_flow("lin", n=2, delay=0.05))
    r = await client.post(
        "/api/v1/flows/lin/runs", params={"mode": "background"}, json={"inputs": {"query": "bg"}}
    )
    assert r.status_code == 202
    run_id = r.json()["id"]
    body = await wait_status(client, run_id, {"completed"})
    assert body["outputs"] == {"result": "bg!"}
    r = await client.post("/api/v1/webhooks/lin", json={"query": "hook"})
    assert r.status_code == 202
    body = await wait_status(client, r.json()["id"], {"completed"})
    assert body["outputs"] == {"result": "hook!"}
    r = await client.post("/api/v1/webhooks/lin", json={"wrong": 1})
    assert r.status_code == 422


async def test_stream_mode(client: httpx.AsyncClient) -> None:
    await make_flow(client, linear_flow("lin", n=2))
    r = await client.post(
        "/api/v1/flows/lin/runs", params={"mode": "stream"}, json={"inputs": {"query": "s"}}
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.text)
    assert events[0]["event"] == "run_started" and events[-1]["event"] == "run_finished"
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["data"]["outputs"] == {"result": "s!"}


async def test_events_replay_and_last_event_id(client: httpx.AsyncClient) -> None:
    await make_flow(client, linear_flow("lin", n=4, delay=0.1))
    r = await client.post(
        "/api/v1/flows/lin/runs", params={"mode": "background"}, json={"inputs": {"query": "e"}}
    )
    run_id = r.json()["id"]
    got: list[dict[str, Any]] = []
    # Attach while running, read a few events, drop the connection, re-attach with Last-Event-ID.
    async with client.stream("GET", f"/api/v1/runs/{run_id}/events") as resp:
        assert resp.status_code == 200
        buf = ""
        async for chunk in resp.aiter_text():
            buf += chunk
            got = parse_sse(buf.rsplit("\n\n", 1)[0] + "\n\n") if "\n\n" in buf else []
            if len(got) >= 3:
                break
    assert len(got) >= 3
    got = got[:3]  # ASGITransport may buffer the whole stream: keep what a dropped client had seen
    last = got[-1]["id"]
    r = await client.get(f"/api/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(last)})
    rest = parse_sse(r.text)
    ids = [e["id"] for e in got] + [e["id"] for e in rest]
    assert ids == list(range(1, len(ids) + 1)), ids
    assert rest[-1]["event"] == "run_finished"
    # The whole log again after the run finished, from the store.
    r = await client.get(f"/api/v1/runs/{run_id}/events")
    full = parse_sse(r.text)
    assert [e["id"] for e in full] == ids
    assert [e["event"] for e in full] == [e["event"] for e in got + rest]
    r = await client.get(f"/api/v1/runs/{run_id}/events", params={"after": len(ids) - 1})
    assert [e["event"] for e in parse_sse(r.text)] == ["run_finished"]


async def test_cancel_running_and_retry(client: httpx.AsyncClient) -> None:
    await make_flow(client, linear_flow("slow", n=3, delay=2.0))
    r = await client.post(
        "/api/v1/flows/slow/runs", params={"mode": "background"}, json={"inputs": {"query": "c"}}
    )
    run_id = r.json()["id"]
    await wait_status(client, run_id, {"running"})
    t0 = time.monotonic()
    r = await client.post(f"/api/v1/runs/{run_id}/cancel")
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "cancelled"
    assert time.monotonic() - t0 < 1.5
    assert (await client.post(f"/api/v1/runs/{run_id}/cancel")).status_code == 409

    await make_flow(client, linear_flow("lin", n=3))
    r = await client.post("/api/v1/flows/lin/runs", json={"inputs": {"query": "r"}})
    first = r.json()["id"]
    r = await client.post(f"/api/v1/runs/{first}/retry", json={"from_node": "d2"})
    assert r.status_code == 202
    body = await wait_status(client, r.json()["id"], {"completed", "failed"})
    assert body["status"] == "completed" and body["outputs"] == {"result": "r!"}
    assert body["nodes"]["d0"].get("reused") is True and not body["nodes"]["d2"].get("reused")
    r = await client.post(f"/api/v1/runs/{first}/retry", json={"from_node": "nope"})
    assert r.status_code == 422
    assert (await client.get(f"/api/v1/runs/{first}/decisions")).json() == []


# ----------------------------------------------------------------------------------- human tasks
async def test_human_task_lifecycle(client: httpx.AsyncClient) -> None:
    await make_flow(client, human_flow("hum"))
    r = await client.post("/api/v1/flows/hum/runs", json={"inputs": {"query": "budget"}})
    body = r.json()
    assert body["status"] == "waiting", body
    run_id = body["id"]
    token = body["tasks"][0]["token"]
    detail = (await client.get(f"/api/v1/runs/{run_id}")).json()
    assert detail["nodes"]["review"]["status"] == "waiting" and detail["tasks"][0]["token"] == token

    anon = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    async with anon:
        r = await anon.get(f"/api/v1/human-tasks/{token}")
        assert r.status_code == 200
        task = r.json()
        assert task["message"] == "Approve budget?" and task["status"] == "pending"
        assert task["actions"] == ["approve", "reject"] and task["prefill"] == {"amount": "3"}
        assert [f["name"] for f in task["fields"]] == ["comment", "amount"]

        r = await anon.post(
            f"/api/v1/human-tasks/{token}/submit", json={"action": "approve", "values": {"amount": "x"}}
        )
        assert r.status_code == 422
        err = r.json()["error"]
        problems = err["details"]["problems"]
        assert {
            "code": "invalid_input",
            "message": "comment: required",
            "field": "values.comment",
        } in problems
        assert any(p.get("field") == "values.amount" and "amount" in p["message"] for p in problems)
        r = await anon.post(
            f"/api/v1/human-tasks/{token}/submit", json={"action": "maybe", "values": {"comment": "c"}}
        )
        assert r.status_code == 422

        r = await anon.post(
            f"/api/v1/human-tasks/{token}/submit", json={"action": "approve", "values": {"comment": "ok"}}
        )
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "submitted"
        r = await anon.post(
            f"/api/v1/human-tasks/{token}/submit", json={"action": "approve", "values": {"comment": "again"}}
        )
        assert r.status_code == 409
    body = await wait_status(client, run_id, {"completed", "failed"})
    assert body["status"] == "completed" and body["outputs"] == {"decision": "yes: ok"}


async def test_resume_route(client: httpx.AsyncClient) -> None:
    await make_flow(client, human_flow("hum"))
    run_id = (await client.post("/api/v1/flows/hum/runs", json={"inputs": {"query": "q"}})).json()["id"]
    r = await client.post(f"/api/v1/runs/{run_id}/resume", json={"node_id": "start", "data": {}})
    assert r.status_code == 409
    r = await client.post(
        f"/api/v1/runs/{run_id}/resume", json={"node_id": "review", "data": {"action": "reject"}}
    )
    assert r.status_code == 422
    r = await client.post(
        f"/api/v1/runs/{run_id}/resume",
        json={"node_id": "review", "data": {"action": "reject", "values": {"comment": "no"}}},
    )
    assert r.status_code == 202, r.text
    body = await wait_status(client, run_id, {"completed", "failed"})
    assert body["outputs"] == {"decision": "no: no"}
    r = await client.post(f"/api/v1/runs/{run_id}/resume", json={"data": {}})
    assert r.status_code == 409


async def test_human_task_expiry(client: httpx.AsyncClient) -> None:
    await make_flow(client, human_flow("hx", timeout_s=0.5))
    body = (await client.post("/api/v1/flows/hx/runs", json={"inputs": {"query": "q"}})).json()
    assert body["status"] == "waiting"
    token = body["tasks"][0]["token"]
    body = await wait_status(client, body["id"], {"failed", "completed"})
    assert body["status"] == "failed" and "expired" in body["error"]
    assert body["nodes"]["review"]["status"] == "error"
    r = await client.get(f"/api/v1/human-tasks/{token}")
    assert r.json()["status"] == "expired"
    r = await client.post(
        f"/api/v1/human-tasks/{token}/submit", json={"action": "approve", "values": {"comment": "late"}}
    )
    assert r.status_code == 410 and r.json()["error"]["code"] == "gone"


async def test_cancel_waiting_run_ends_its_stream(client: httpx.AsyncClient) -> None:
    await make_flow(client, human_flow("hum"))
    body = (await client.post("/api/v1/flows/hum/runs", json={"inputs": {"query": "q"}})).json()
    run_id, token = body["id"], body["tasks"][0]["token"]
    r = await client.post(f"/api/v1/runs/{run_id}/cancel")
    assert r.json()["status"] == "cancelled"
    r = await client.get(f"/api/v1/runs/{run_id}/events")
    events = parse_sse(r.text)
    assert events[-1]["event"] == "run_finished" and events[-1]["data"]["status"] == "cancelled"
    r = await client.post(f"/api/v1/human-tasks/{token}/submit", json={"values": {"comment": "x"}})
    assert r.status_code == 409


@pytest.mark.parametrize("path", ["/api/v1/flows/x%00y", "/api/v1/runs/x%00y", "/api/v1/human-tasks/x%00y"])
async def test_odd_ids_are_404(client: httpx.AsyncClient, path: str) -> None:
    r = await client.get(path)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


async def test_a_human_task_has_the_fields_the_edge_llm_decider_added(client: httpx.AsyncClient) -> None:
    review = {"message": "Refund?", "fields": [{"name": "note", "type": "text", "required": False}]}
    added = {"fields": [{"name": "amount", "type": "number"}], "message": "Refund 120 EUR?"}
    doc = {
        "schema": "plait/flow@1",
        "id": "edge-hum",
        "settings": {
            "policy": "edge_llm",
            "decider": {
                "provider": "scripted",
                "script": [
                    {"json": {"mode": "next", "next": [{"node": "review", "human": added}]}},
                    {"json": {"mode": "stop"}},
                ],
            },
        },
        "nodes": [{"id": "review", "type": "human", "config": review}],
    }
    await make_flow(client, doc)
    body = (await client.post("/api/v1/flows/edge-hum/runs", json={"inputs": {}})).json()
    assert body["status"] == "waiting", body
    token = body["tasks"][0]["token"]
    task = (await client.get(f"/api/v1/human-tasks/{token}")).json()
    assert task["message"] == "Refund 120 EUR?"
    assert [f["name"] for f in task["fields"]] == ["note", "amount"]
    r = await client.post(f"/api/v1/human-tasks/{token}/submit", json={"values": {"note": "ok"}})
    assert r.status_code == 422 and "amount: required" in r.text
    r = await client.post(f"/api/v1/human-tasks/{token}/submit", json={"values": {"amount": "120"}})
    assert r.status_code == 200, r.text
    body = await wait_status(client, body["id"], {"completed", "failed"})
    assert body["status"] == "completed", body
    assert body["nodes"]["review"]["output"] == {"amount": 120, "action": "submit"}


async def test_a_sub_flow_asks_people_through_its_parents_tasks(client: httpx.AsyncClient) -> None:
    child = {
        "schema": "plait/flow@1",
        "id": "child-ask",
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "ask",
                "type": "human",
                "config": {"message": "Amount?", "fields": [{"name": "amount", "type": "integer"}]},
            },
            {"id": "out", "type": "output", "config": {"name": "amount", "value": "{{ask.amount}}"}},
        ],
        "edges": [
            {"source": "start", "target": "ask"},
            {"source": "ask", "source_port": "submit", "target": "out"},
        ],
    }
    parent = {
        "schema": "plait/flow@1",
        "id": "parent-ask",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "sub", "type": "subflow", "config": {"flow": "child-ask", "inputs": {}}},
            {"id": "out", "type": "output", "config": {"name": "got", "value": "{{sub.amount}}"}},
        ],
        "edges": [{"source": "start", "target": "sub"}, {"source": "sub", "target": "out"}],
    }
    await make_flow(client, child)
    await make_flow(client, parent)
    body = (await client.post("/api/v1/flows/parent-ask/runs", json={"inputs": {}})).json()
    assert body["status"] == "waiting", body
    (task,) = body["tasks"]
    assert task["node_id"] == "sub" and task["message"] == "Amount?"
    shown = (await client.get(f"/api/v1/human-tasks/{task['token']}")).json()
    assert [f["name"] for f in shown["fields"]] == ["amount"]
    r = await client.post(f"/api/v1/human-tasks/{task['token']}/submit", json={"values": {"amount": "many"}})
    assert r.status_code == 422 and "amount" in r.text  # refused before the run resumes
    r = await client.post(f"/api/v1/human-tasks/{task['token']}/submit", json={"values": {"amount": "7"}})
    assert r.status_code == 200, r.text
    done = await wait_status(client, body["id"], {"completed", "failed"})
    assert done["status"] == "completed", done
    assert done["outputs"] == {"got": 7}
