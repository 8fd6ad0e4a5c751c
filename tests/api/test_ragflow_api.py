"""RAGFlow documents over HTTP: `POST /api/v1/flows/import` (detected or `format: ragflow`) and
`GET /api/v1/flows/{id}/export?format=ragflow`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

FIXTURES = Path(__file__).parents[1] / "spec" / "ragflow_fixtures"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


async def test_import_detects_ragflow_and_runs_it(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/api/v1/flows/import", json={"document": fixture("switch"), "id": "rf-switch", "publish": True}
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["id"] == "rf-switch" and body["format"] == "ragflow" and body["problems"] == []
    assert isinstance(body["warnings"], list)
    r = await client.post("/api/v1/flows/rf-switch/runs?wait=true", json={"inputs": {"query": "北京"}})
    assert r.status_code in (200, 201), r.text
    assert r.json()["outputs"] == {"Message:RedHousesStart": "北京beijing"}


async def test_import_text_with_format_and_derived_id(client: httpx.AsyncClient) -> None:
    text = (FIXTURES / "questions_category.json").read_text(encoding="utf-8")
    r = await client.post("/api/v1/flows/import", json={"content": text, "format": "ragflow"})
    assert r.status_code == 201, r.text
    flow_id = r.json()["id"]
    assert flow_id.startswith("ragflow-")
    again = await client.post("/api/v1/flows/import", json={"content": text})
    assert again.status_code == 409  # the same document again: overwrite to replace it


async def test_refusals_are_422_naming_the_components(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/flows/import", json={"document": fixture("browser")})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "ragflow_unsupported"
    assert [c["id"] for c in err["details"]["components"]] == ["Browser:BusyHatsSink"]
    r = await client.post("/api/v1/flows/import", json={"document": fixture("resume")})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "ragflow_ingestion"
    assert "not an agent" in r.json()["error"]["message"]


async def test_bad_input_is_a_clear_422(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/flows/import", json={"content": "{oops", "format": "ragflow"})
    assert r.status_code == 422
    r = await client.post("/api/v1/flows/import", json={"document": {"foo": 1}})
    assert r.status_code == 422
    assert "neither a plait flow" in r.json()["error"]["message"]
    r = await client.post("/api/v1/flows/import", json={"document": {"foo": 1}, "format": "ragflow"})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "ragflow_format"


async def test_export_as_ragflow_and_back(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/flows/import", json={"document": fixture("agent_msg"), "id": "rf-agent"})
    assert r.status_code == 201, r.text
    draft = r.json()["draft"]
    r = await client.get("/api/v1/flows/rf-agent/export?format=ragflow")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    exported = r.json()
    assert exported["components"]["begin"]["obj"]["component_name"] == "Begin"
    r = await client.post(
        "/api/v1/flows/import", json={"document": exported, "id": "rf-agent-2", "format": "ragflow"}
    )
    assert r.status_code == 201, r.text
    assert r.json()["draft"]["nodes"] == draft["nodes"]


async def test_export_refusal_names_the_nodes(client: httpx.AsyncClient) -> None:
    flow = {
        "schema": "plait/flow@1",
        "id": "waits",
        "nodes": [{"id": "start", "type": "start"}, {"id": "nap", "type": "delay", "config": {"seconds": 0}}],
        "edges": [{"source": "start", "target": "nap"}],
    }
    assert (await client.post("/api/v1/flows/import", json={"document": flow})).status_code == 201
    r = await client.get("/api/v1/flows/waits/export?format=ragflow")
    assert r.status_code == 422
    assert [n["id"] for n in r.json()["error"]["details"]["nodes"]] == ["nap"]


async def test_export_of_a_draft_with_problems_is_a_422(client: httpx.AsyncClient) -> None:
    flow = {
        "schema": "plait/flow@1",
        "id": "broken",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "route", "type": "switch", "config": {"cases": 3}},
        ],
        "edges": [{"source": "start", "target": "route"}],
    }
    assert (await client.post("/api/v1/flows/import", json={"document": flow})).status_code == 201
    r = await client.get("/api/v1/flows/broken/export?format=ragflow")
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid_flow"
