"""Token usage of model nodes reaches the store and the API: per node and summed per run."""

from __future__ import annotations

import httpx

from .test_api import make_flow

DOC = {
    "schema": "plait/flow@1",
    "id": "ask",
    "nodes": [
        {"id": "start", "type": "start"},
        {
            "id": "a",
            "type": "llm",
            "config": {"provider": "scripted", "prompt": "one two", "script": ["x y z"]},
        },
        {"id": "b", "type": "llm", "config": {"provider": "scripted", "prompt": "{{a}}", "script": ["ok"]}},
        {"id": "out", "type": "output", "config": {"name": "answer"}},
    ],
    "edges": [
        {"source": "start", "target": "a"},
        {"source": "a", "target": "b"},
        {"source": "b", "target": "out"},
    ],
}


async def test_run_detail_and_list_carry_usage(client: httpx.AsyncClient) -> None:
    await make_flow(client, DOC)
    r = await client.post("/api/v1/flows/ask/runs", json={"inputs": {}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "completed" and body["outputs"] == {"answer": "ok"}
    total = {"input_tokens": 5, "output_tokens": 4, "total_tokens": 9}
    assert body["usage"] == total
    detail = (await client.get(f"/api/v1/runs/{body['id']}")).json()
    assert detail["usage"] == total
    assert detail["nodes"]["a"]["usage"] == {"input_tokens": 2, "output_tokens": 3, "total_tokens": 5}
    assert detail["nodes"]["b"]["usage"] == {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
    listed = (await client.get("/api/v1/runs", params={"flow_id": "ask"})).json()
    assert listed[0]["tokens"] == 9
