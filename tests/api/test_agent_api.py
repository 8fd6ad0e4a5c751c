"""An agent's tool approval through the HTTP API: the run waits, POST /runs/{id}/resume approves
or denies, and the agent finishes (scripted provider, a real HTTP tool call to 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from .test_api import make_flow, wait_status

HITS: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        HITS.append(self.path)
        body = json.dumps({"status": "green"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def status_server(monkeypatch):
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    HITS.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def agent_doc(url: str) -> dict[str, Any]:
    script = [
        {"tool_calls": [{"name": "http_request", "arguments": {"url": f"{url}/status"}}]},
        {"content": "approved: the status is green"},
    ]
    return {
        "schema": "plait/flow@1",
        "id": "ops-agent",
        "inputs": {"type": "object", "properties": {"q": {"type": "string"}}},
        "nodes": [
            {"id": "agent", "type": "agent", "config": {
                "provider": "scripted", "prompt": "{{inputs.q}}", "script": script,
                "tools": ["http_request"], "permissions": {"http_request": "ask"}}},
            {"id": "out", "type": "output", "config": {"name": "answer", "value": "{{agent.content}}"}},
        ],
        "edges": [{"source": "agent", "target": "out"}],
    }  # fmt: skip


async def test_approve_through_the_resume_endpoint(client: httpx.AsyncClient, status_server: str) -> None:
    await make_flow(client, agent_doc(status_server))
    body = (await client.post("/api/v1/flows/ops-agent/runs", json={"inputs": {"q": "status?"}})).json()
    assert body["status"] == "waiting", body
    run_id = body["id"]
    assert HITS == []
    r = await client.post(
        f"/api/v1/runs/{run_id}/resume", json={"node_id": "agent", "data": {"action": "maybe"}}
    )
    assert r.status_code == 422
    r = await client.post(
        f"/api/v1/runs/{run_id}/resume", json={"node_id": "agent", "data": {"action": "approve"}}
    )
    assert r.status_code == 202, r.text
    done = await wait_status(client, run_id, {"completed", "failed"})
    assert done["status"] == "completed", done
    assert done["outputs"] == {"answer": "approved: the status is green"}
    assert HITS == ["/status"]


async def test_deny_through_the_resume_endpoint(client: httpx.AsyncClient, status_server: str) -> None:
    doc = agent_doc(status_server)
    doc["nodes"][0]["config"]["script"][1] = {"content": "I could not check the status."}
    await make_flow(client, doc)
    run_id = (await client.post("/api/v1/flows/ops-agent/runs", json={"inputs": {"q": "status?"}})).json()[
        "id"
    ]
    r = await client.post(f"/api/v1/runs/{run_id}/resume", json={"data": {"action": "deny", "reason": "no"}})
    assert r.status_code == 202, r.text
    done = await wait_status(client, run_id, {"completed", "failed"})
    assert done["outputs"] == {"answer": "I could not check the status."}
    assert HITS == []


async def test_approval_task_in_the_task_api(client: httpx.AsyncClient, status_server: str) -> None:
    await make_flow(client, agent_doc(status_server))
    body = (await client.post("/api/v1/flows/ops-agent/runs", json={"inputs": {"q": "status?"}})).json()
    (task,) = body["tasks"]
    assert task["kind"] == "tool_approval" and task["node_id"] == "agent"
    assert task["message"] == "The agent wants to call http_request. Approve?"
    assert task["actions"] == ["approve", "deny"]
    r = await client.post(f"/api/v1/human-tasks/{task['token']}/submit", json={"action": "approve"})
    assert r.status_code == 200, r.text
    done = await wait_status(client, body["id"], {"completed", "failed"})
    assert done["outputs"] == {"answer": "approved: the status is green"}
    assert HITS == ["/status"]
