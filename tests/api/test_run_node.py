"""Run one node of a flow's draft ("Run this step"): with the inputs it had in an earlier run, or
with pinned inputs; only that node runs, user code still runs in the sandbox, and who may not run
the flow may not run one of its nodes."""

from __future__ import annotations

import os
from typing import Any

import httpx

from plait.service.runs.one_node import EarlierRun, ancestors, step_document

from .conftest import API_KEY
from .test_api import make_flow, wait_status
from .test_users_api import _client, _user


def triage_flow(flow_id: str = "tri") -> dict[str, Any]:
    """start -> classify (a transform reading the input) -> shout (reads classify by reference
    and by its edge) -> out; `tail` after shout must not run in a one-node run."""
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "inputs": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "classify",
                "type": "transform",
                "config": {"mapping": {"label": "bug: {{inputs.query}}"}},
            },
            {
                "id": "shout",
                "type": "text",
                "config": {
                    "operation": "template",
                    "template": "{{classify.label | upper}} / {{inputs.query}}",
                },
            },
            {"id": "out", "type": "output", "config": {"name": "answer", "value": "{{shout}}"}},
        ],
        "edges": [
            {"source": "start", "target": "classify"},
            {"source": "classify", "target": "shout"},
            {"source": "shout", "target": "out"},
        ],
    }


async def _run_full(client: httpx.AsyncClient, flow_id: str, query: str) -> dict[str, Any]:
    r = await client.post(f"/api/v1/flows/{flow_id}/runs?version=draft", json={"inputs": {"query": query}})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "completed", r.text
    return r.json()


async def test_one_node_runs_with_the_inputs_of_the_last_run(client: httpx.AsyncClient) -> None:
    await make_flow(client, triage_flow(), publish=False)
    first = await _run_full(client, "tri", "printer on fire")
    # the user changes the node, then runs it alone: the new config, the old inputs
    doc = triage_flow()
    doc["nodes"][2]["config"]["template"] = "NEW {{classify.label}} ({{inputs.query}})"
    assert (await client.put("/api/v1/flows/tri", json={"document": doc})).status_code == 200
    r = await client.post("/api/v1/flows/tri/nodes/shout/run", json={"from_run": first["id"]})
    assert r.status_code == 202, r.text
    started = r.json()
    assert started["node_id"] == "shout" and started["from_run"] == first["id"]
    assert set(started["stubs"]) == {"start", "classify"} and started["missing"] == []
    body = await wait_status(client, started["id"], {"completed", "failed"})
    assert body["status"] == "completed", body
    assert body["nodes"]["shout"]["output"] == "NEW bug: printer on fire (printer on fire)"
    assert "out" not in body["nodes"]  # nothing downstream ran
    assert body["flow_id"] == "tri" and body["version"] is None  # a draft run of the flow
    # without naming a run: the flow's newest run in which the node ran (not the step run's)
    r = await client.post("/api/v1/flows/tri/nodes/SHOUT/run", json={})
    assert r.status_code == 202, r.text
    body = await wait_status(client, r.json()["id"], {"completed", "failed"})
    assert body["nodes"]["shout"]["output"] == "NEW bug: printer on fire (printer on fire)"


async def test_pinned_inputs_replace_what_the_node_got(client: httpx.AsyncClient) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "pin",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "echo", "type": "output", "config": {"name": "echo"}},  # its input port's value
        ],
        "edges": [{"source": "start", "target": "echo"}],
    }
    await make_flow(client, doc, publish=False)
    r = await client.post("/api/v1/flows/pin/nodes/echo/run", json={"pinned": {"in": {"a": [1, "{{x}}"]}}})
    assert r.status_code == 202, r.text
    assert r.json()["pinned"] is True
    body = await wait_status(client, r.json()["id"], {"completed", "failed"})
    assert body["status"] == "completed", body
    assert body["nodes"]["echo"]["output"] == {"a": [1, "{{x}}"]}  # as pinned, never rendered


async def test_a_missing_node_is_a_404_naming_it(client: httpx.AsyncClient) -> None:
    await make_flow(client, triage_flow("tri2"), publish=False)
    r = await client.post("/api/v1/flows/tri2/nodes/nope/run", json={})
    assert r.status_code == 404, r.text
    assert "'nope'" in r.json()["error"]["message"]


async def test_a_node_that_cannot_run_alone_is_a_422_saying_why(client: httpx.AsyncClient) -> None:
    await make_flow(client, triage_flow("tri3"), publish=False)  # never ran: classify has no output
    r = await client.post("/api/v1/flows/tri3/nodes/shout/run", json={})
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert "'shout'" in message and "classify" in message


async def test_a_run_of_another_flow_is_refused(client: httpx.AsyncClient) -> None:
    await make_flow(client, triage_flow("tri4"), publish=False)
    await make_flow(client, triage_flow("tri5"), publish=False)
    other = await _run_full(client, "tri5", "x")
    r = await client.post("/api/v1/flows/tri4/nodes/shout/run", json={"from_run": other["id"]})
    assert r.status_code == 422 and "not a run of flow" in r.text


async def test_code_runs_in_the_sandbox(client: httpx.AsyncClient) -> None:
    code = "import os\n\ndef main(label):\n    return {'upper': label.upper(), 'pid': os.getpid()}\n"
    doc = triage_flow("sand")
    doc["nodes"][2] = {
        "id": "shout",
        "type": "code",
        "config": {"code": code, "arguments": {"label": "{{classify.label}}"}},
    }
    await make_flow(client, doc, publish=False)
    first = await _run_full(client, "sand", "q")
    r = await client.post("/api/v1/flows/sand/nodes/shout/run", json={"from_run": first["id"]})
    assert r.status_code == 202, r.text
    body = await wait_status(client, r.json()["id"], {"completed", "failed"}, timeout=30)
    assert body["status"] == "completed", body
    out = body["nodes"]["shout"]["output"]
    assert out["upper"] == "BUG: Q"
    assert out["pid"] != os.getpid()  # not the server's process


async def test_a_viewer_may_not_run_a_node(app: Any) -> None:
    async with _client(app, API_KEY) as admin:
        owner_id, owner_key = await _user(admin, "own@example.com")
        viewer_id, viewer_key = await _user(admin, "vw@example.com")
        async with _client(app, owner_key) as owner, _client(app, viewer_key) as viewer:
            await make_flow(owner, triage_flow("shared"), publish=False)
            r = await owner.put(f"/api/v1/flows/shared/shares/{viewer_id}", json={"role": "viewer"})
            assert r.status_code == 200, r.text
            first = await _run_full(owner, "shared", "q")
            r = await viewer.post("/api/v1/flows/shared/nodes/shout/run", json={"from_run": first["id"]})
            assert r.status_code == 403, r.text
            assert (await viewer.get(f"/api/v1/runs/{first['id']}")).status_code == 200


def test_the_step_document_stubs_upstream_nodes_and_drops_downstream_ones() -> None:
    draft = triage_flow()
    draft["nodes"].append({"id": "side", "type": "start", "requires": []})
    earlier = EarlierRun(
        "r1",
        {"query": "q"},
        {"start": {"query": "q"}, "classify": {"label": "L"}, "shout": "old"},
        {"shout": [("classify", "out", "in")]},
    )
    assert ancestors(draft, "shout") == ["start", "classify"]
    step = step_document(draft, "shout", earlier)
    ids = [n["id"] for n in step.document["nodes"]]
    assert ids == ["start", "classify", "shout"]
    target = step.document["nodes"][-1]
    assert target["requires"] == ["start"]  # read by reference only; classify comes by its edge
    assert step.document["edges"] == [{"source": "classify", "target": "shout", "target_port": "in"}]
    assert step.document["variables"]["plait_step_values"] == [{"query": "q"}, {"label": "L"}]
