"""Loop iterations and map items are checkpointed as rows of their own (plait.engine.items); the
run view lists nodes, not those rows."""

from __future__ import annotations

import httpx


async def test_the_run_view_lists_nodes_not_item_checkpoints(client: httpx.AsyncClient) -> None:
    doc = {
        "id": "mapped",
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "m",
                "type": "map",
                "config": {
                    "items": [1, 2, 3],
                    "body": {
                        "nodes": [{"id": "o", "type": "output", "config": {"value": "{{item}}"}}],
                        "edges": [],
                    },
                },
            },
            {"id": "out", "type": "output", "config": {"name": "all", "value": "{{m}}"}},
        ],
        "edges": [{"source": "start", "target": "m"}, {"source": "m", "target": "out"}],
    }
    assert (await client.post("/api/v1/flows", json={"document": doc})).status_code == 201
    r = await client.post("/api/v1/flows/mapped/runs", params={"version": "draft"}, json={})
    assert r.json()["status"] == "completed", r.text
    detail = (await client.get(f"/api/v1/runs/{r.json()['id']}")).json()
    nodes = detail["nodes"]
    ids = set(nodes) if isinstance(nodes, dict) else {n["id"] for n in nodes}
    assert {"start", "m", "out"} <= ids and not any("@" in i for i in ids), ids
