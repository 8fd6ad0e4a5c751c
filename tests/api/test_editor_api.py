"""The canvas' routes: node types and ports, validation, duplication, variables, run history."""

from __future__ import annotations

import json
from typing import Any

import httpx

from .conftest import linear_flow

SWITCH_CONFIG = {
    "cases": [
        {"name": "big", "when": [{"ref": "inputs.n", "op": ">", "value": 10}]},
        {"when": [{"ref": "inputs.n", "op": "<", "value": 0}]},
    ]
}


async def test_node_types_list_every_registered_type(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/node-types")
    assert r.status_code == 200
    types = {t["name"]: t for t in r.json()}
    for name in ("start", "output", "if", "switch", "human", "delay", "http", "merge"):
        assert name in types, name
    switch = types["switch"]
    assert switch["category"] == "logic" and switch["title"] == "Switch"
    assert switch["config_schema"]["type"] == "object" and "cases" in switch["config_schema"]["properties"]
    assert switch["input_ports"] == ["in"]
    assert switch["ports_from_config"] is True
    assert types["start"]["input_ports"] == [] and types["start"]["output_ports"] == ["out"]
    assert types["delay"]["ports_from_config"] is False
    assert types["human"]["ports_from_config"] is True


async def test_node_types_need_a_key(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/node-types", headers={"x-api-key": "wrong"})
    assert r.status_code == 401


async def test_ports_follow_the_config(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/node-types/switch/ports", json={"config": SWITCH_CONFIG})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "type": "switch",
        "input_ports": ["in"],
        "output_ports": ["big", "case_2", "else"],
        "valid": True,
        "problems": [],
    }
    r = await client.post(
        "/api/v1/node-types/human/ports", json={"config": {"message": "ok?", "actions": ["yes", "no"]}}
    )
    assert r.json()["output_ports"] == ["yes", "no"]


async def test_ports_of_an_invalid_config_name_the_field(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/node-types/switch/ports", json={"config": {"cases": [{"when": "x"}]}})
    assert r.status_code == 200
    body = r.json()
    assert body["valid"] is False
    assert body["problems"] and body["problems"][0]["field"].startswith("config.cases[0].when")


async def test_ports_of_an_unknown_type_is_404(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/node-types/nope/ports", json={"config": {}})
    assert r.status_code == 404
    assert "no node type 'nope'" in r.json()["error"]["message"]


async def test_validate_reports_every_problem_with_node_and_field(client: httpx.AsyncClient) -> None:
    doc = linear_flow("v", 1)
    r = await client.post("/api/v1/flows/validate", json={"document": doc})
    assert r.status_code == 200
    assert r.json() == {"valid": True, "problems": []}

    bad = linear_flow("v", 1)
    bad["nodes"][1]["config"] = {"seconds": "soon"}
    bad["nodes"].append({"id": "lost", "type": "no_such_type"})
    r = await client.post("/api/v1/flows/validate", json={"document": bad})
    body = r.json()
    assert r.status_code == 200 and body["valid"] is False
    by_node = {p.get("node_id"): p for p in body["problems"]}
    assert "d0" in by_node and by_node["d0"]["field"].startswith("config.seconds")
    assert "lost" in by_node and by_node["lost"]["hint"]
    for p in body["problems"]:
        assert p["message"] and p["code"]


async def test_validate_accepts_yaml_text_and_reports_syntax(client: httpx.AsyncClient) -> None:
    text = "schema: plait/flow@1\nid: y\nnodes:\n  - {id: start, type: start}\nedges: []\n"
    r = await client.post("/api/v1/flows/validate", json={"content": text})
    assert r.json()["valid"] is True
    r = await client.post("/api/v1/flows/validate", json={"content": "nodes: [\n"})
    assert r.json()["valid"] is False and r.json()["problems"][0]["code"] == "syntax"
    r = await client.post("/api/v1/flows/validate", json={})
    assert r.status_code == 422


async def test_validate_matches_the_publish_check(client: httpx.AsyncClient) -> None:
    bad = linear_flow("pub", 1)
    bad["edges"].append({"source": "out", "target": "ghost"})
    created = (await client.post("/api/v1/flows", json={"document": bad})).json()
    checked = (await client.post("/api/v1/flows/validate", json={"document": bad})).json()
    assert checked["problems"] == created["problems"] and checked["problems"]
    r = await client.post("/api/v1/flows/pub/versions", json={})
    assert r.json()["error"]["details"]["problems"] == checked["problems"]


async def test_duplicate_flow(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": linear_flow("orig", 1), "name": "Original"})
    r = await client.post("/api/v1/flows/orig/duplicate")
    assert r.status_code == 201, r.text
    copy = r.json()
    assert copy["id"] == "orig-copy" and copy["name"] == "Original (copy)"
    assert copy["draft"]["nodes"] == linear_flow("orig", 1)["nodes"] and copy["draft"]["id"] == "orig-copy"
    assert copy["latest_version"] == 0
    second = (await client.post("/api/v1/flows/orig/duplicate", json={})).json()
    assert second["id"] == "orig-copy-2"
    named = await client.post("/api/v1/flows/orig/duplicate", json={"id": "mine", "name": "Mine"})
    assert named.json()["id"] == "mine" and named.json()["name"] == "Mine"
    clash = await client.post("/api/v1/flows/orig/duplicate", json={"id": "mine"})
    assert clash.status_code == 409
    assert (await client.post("/api/v1/flows/ghost/duplicate")).status_code == 404


async def test_variables_crud_masks_secrets(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/v1/variables")).json() == []
    r = await client.put("/api/v1/variables/REGION", json={"value": "eu", "description": "where"})
    assert r.status_code == 200 and r.json()["value"] == "eu"
    r = await client.put("/api/v1/variables/OPENAI_KEY", json={"value": "sk-secret", "is_secret": True})
    assert r.json()["value"] == "********"
    listed = {v["name"]: v for v in (await client.get("/api/v1/variables")).json()}
    assert listed["REGION"]["value"] == "eu" and listed["REGION"]["description"] == "where"
    assert listed["OPENAI_KEY"]["value"] == "********" and listed["OPENAI_KEY"]["is_secret"] is True
    assert "sk-secret" not in (await client.get("/api/v1/variables")).text

    bad = await client.put("/api/v1/variables/1bad name", json={"value": "x"})
    assert bad.status_code == 422 and "invalid variable name" in bad.json()["error"]["message"]
    assert (await client.delete("/api/v1/variables/REGION")).status_code == 204
    assert (await client.delete("/api/v1/variables/REGION")).status_code == 404


async def test_variables_reach_runs(client: httpx.AsyncClient) -> None:
    await client.put("/api/v1/variables/GREETING", json={"value": "hej"})
    doc: dict[str, Any] = {
        "id": "env",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "out", "type": "output", "config": {"name": "g", "value": "{{env.GREETING}}"}},
        ],
        "edges": [{"source": "start", "target": "out"}],
    }
    await client.post("/api/v1/flows", json={"document": doc})
    r = await client.post("/api/v1/flows/env/runs", json={"inputs": {}})
    assert r.json()["outputs"] == {"g": "hej"}


def branching_flow(flow_id: str = "br") -> dict[str, Any]:
    return {
        "id": flow_id,
        "inputs": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "check", "type": "if", "config": {"when": [{"ref": "inputs.n", "op": ">", "value": 10}]}},
            {"id": "big", "type": "output", "config": {"name": "size", "value": "big {{inputs.n}}"}},
            {"id": "small", "type": "output", "config": {"name": "size", "value": "small {{inputs.n}}"}},
        ],
        "edges": [
            {"source": "start", "target": "check"},
            {"source": "check", "source_port": "true", "target": "big"},
            {"source": "check", "source_port": "false", "target": "small"},
        ],
    }


async def test_run_history_and_node_inputs(client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": branching_flow()})
    done = (await client.post("/api/v1/flows/br/runs", json={"inputs": {"n": 42}})).json()
    assert done["outputs"] == {"size": "big 42"}
    await client.post("/api/v1/flows/br/runs", json={"inputs": {"n": 1}})

    history = (await client.get("/api/v1/runs", params={"flow_id": "br"})).json()
    assert len(history) == 2
    for run in history:
        assert run["status"] == "completed"
        assert run["duration_ms"] is not None and run["duration_ms"] >= 0
        assert "tokens" in run

    detail = (await client.get(f"/api/v1/runs/{done['id']}")).json()
    nodes = detail["nodes"]
    assert nodes["check"]["input"] == {"n": 42}  # the start node's output: the run inputs
    assert nodes["check"]["input_sources"] == [{"node": "start", "port": "out", "target_port": "in"}]
    assert nodes["big"]["input"] == nodes["check"]["output"]
    assert nodes["big"]["input_sources"][0]["port"] == "true"
    assert nodes["small"]["status"] == "skipped" and "input" not in nodes["small"]
    assert "input" not in nodes["start"]
    for node in ("check", "big"):
        assert nodes[node]["attempts"] == 1 and nodes[node]["duration_ms"] is not None
        assert nodes[node]["started_at"]


async def test_registered_components_are_in_the_palette(client: httpx.AsyncClient) -> None:
    from .test_components_api import SHOUT

    assert (await client.post("/api/v1/components", json={"source": SHOUT})).status_code == 201
    types = {t["name"]: t for t in (await client.get("/api/v1/node-types")).json()}
    shout = types["component:Shout"]
    assert shout["title"] == "Shout" and shout["category"] == "components"
    assert shout["node_type"] == "component" and shout["config_defaults"] == {"component": "Shout"}
    assert shout["config_schema"]["properties"]["inputs"]["required"] == ["text"]
    assert [o["name"] for o in shout["outputs"]] == ["text"]
    r = await client.post("/api/v1/node-types/component:Shout/ports", json={"config": {"component": "Shout"}})
    assert r.status_code == 200 and r.json()["output_ports"] == ["out"]
    await client.delete("/api/v1/components/Shout")
    types = {t["name"] for t in (await client.get("/api/v1/node-types")).json()}
    assert "component:Shout" not in types


async def test_tools_list_builtins_and_the_server_side_mcp_servers(
    app: Any, client: httpx.AsyncClient, monkeypatch: Any, tmp_path: Any
) -> None:
    from tools._mcp import stdio_config

    servers = {
        "calc": stdio_config(env={"MCP_TEST_USER": "${WHO}"}),
        "gone": {"url": "http://127.0.0.1:9/mcp", "connect_timeout_s": 5},
        "needs": stdio_config(env={"MCP_TEST_USER": "${NOT_SET_ANYWHERE}"}),
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    monkeypatch.setenv("PLAIT_MCP_CONFIG", str(path))
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    assert (
        await client.put("/api/v1/variables/WHO", json={"value": "ada", "is_secret": True})
    ).status_code == 200
    try:
        r = await client.get("/api/v1/tools")
        assert r.status_code == 200, r.text
        body = r.json()
        builtin = {t["name"]: t for t in body["tools"]}
        assert {"http_request", "web_search", "wikipedia", "arxiv", "flow"} <= set(builtin)
        assert builtin["wikipedia"]["ref"] == "wikipedia" and builtin["wikipedia"]["source"] == "builtin"
        assert builtin["http_request"]["parameters"]["type"] == "object"
        calc, gone, needs = body["mcp_servers"]
        assert (calc["name"], calc["ref"], calc["transport"], calc["error"]) == (
            "calc",
            "mcp:calc",
            "stdio",
            None,
        )
        add = next(t for t in calc["tools"] if t["name"] == "add")
        assert add["ref"] == "mcp:calc/add" and add["source"] == "mcp:calc"
        assert add["parameters"]["required"] == ["a", "b"]
        assert gone["transport"] == "http" and gone["tools"] == [] and "cannot connect" in gone["error"]
        assert "needs the variable NOT_SET_ANYWHERE" in needs["error"]

        r = await client.get("/api/v1/tools", params={"mcp": "false"})
        assert r.status_code == 200 and r.json()["mcp_servers"] == []

        path.write_text("{not json")
        r = await client.get("/api/v1/tools")
        assert r.status_code == 200 and "cannot read PLAIT_MCP_CONFIG" in r.json()["mcp_config_error"]
    finally:
        await app.state.services.mcp.aclose()
