"""The MCP server's tools in-process (the SDK's client connected to the server object): what
they do to stored flows, the access rules per caller, the names of published flows' tools, and the
tracking of every call (spec B89, M-T11)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_server_helpers import ECHO_SPEC, data, tool_names

from plait.mcp.published import MAX_NAME
from plait.mcp.published import tool_names as flow_tool_names
from plait.mcp.server import build_server
from plait.service import Services, Settings
from plait.service.access import Principal, principal
from plait.service.metrics import REGISTRY
from plait.tools.mcp import MCPServerConfig


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Services]:
    svc = await Services.open(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/plait.db"))
    try:
        yield svc
    finally:
        await svc.close()


async def _user(services: Services, name: str, scopes: list[str] | None = None) -> Principal:
    user = await services.users.create_user(email=f"{name}@example.com", role="editor")
    return principal(user["id"], "editor", scopes, via="key")


@asynccontextmanager
async def connect(services: Services, who: Principal) -> AsyncIterator[Any]:
    async def caller(ctx: Any) -> Principal:
        return who

    async with Client(build_server(services, caller)) as client:
        yield client


def _count(tool: str, success: str) -> float:
    return REGISTRY.get_sample_value("mcp_tool_invocations_total", {"tool": tool, "success": success}) or 0.0


def _timed(tool: str) -> float:
    return REGISTRY.get_sample_value("mcp_tool_duration_ms_count", {"tool": tool}) or 0.0


async def test_m_t11_every_tool_call_is_counted_and_timed(services: Services) -> None:
    ann = await _user(services, "ann")
    before = {
        "create": _count("create_flow", "true"),
        "build": _count("build_flow", "true"),
        "failed": _count("get_field_value", "false"),
        "flow": _count("flow", "true"),
        "timed": _timed("create_flow"),
    }
    async with connect(services, ann) as client:
        flow_id = data(await client.call_tool("create_flow", {"name": "Counted"}))["id"]
        await client.call_tool("build_flow", {"flow_id": flow_id, "spec": ECHO_SPEC})
        missing = await client.call_tool("get_field_value", {"flow_id": "no-such-flow", "component_id": "x"})
        assert missing.is_error
        await client.call_tool("publish_flow", {"flow_id": flow_id})
        ran = await client.call_tool(f"flow_{flow_id}", {"q": "?"})  # a published flow: tool="flow"
        assert not ran.is_error, data(ran)
    assert _count("create_flow", "true") == before["create"] + 1
    assert _count("build_flow", "true") == before["build"] + 1
    assert _count("get_field_value", "false") == before["failed"] + 1
    assert _count("flow", "true") == before["flow"] + 1
    assert _timed("create_flow") == before["timed"] + 1


async def test_edits_are_saved_to_the_stored_draft_and_refused_ones_change_nothing(
    services: Services,
) -> None:
    ann = await _user(services, "ann")
    async with connect(services, ann) as client:
        flow_id = data(await client.call_tool("create_flow", {"name": "Step by step"}))["id"]
        for call in (
            ("add_component", {"flow_id": flow_id, "component_type": "start"}),
            ("add_component", {"flow_id": flow_id, "component_type": "message", "config": {"text": "hi"}}),
            ("connect_components", {"flow_id": flow_id, "source_id": "start", "target_id": "message"}),
        ):
            result = await client.call_tool(*call)
            assert not result.is_error and data(result)["saved"] is True, data(result)
        draft = (await services.flows.get(flow_id))["draft"]
        assert [n["id"] for n in draft["nodes"]] == ["start", "message"]
        assert draft["edges"][0]["source"] == "start" and draft["edges"][0]["target"] == "message"

        refused = await client.call_tool(
            "connect_components",
            {"flow_id": flow_id, "source_id": "message", "target_id": "start"},
        )
        assert refused.is_error and data(refused)["saved"] is False
        again = await client.call_tool("build_flow", {"flow_id": flow_id, "spec": ECHO_SPEC})
        assert again.is_error and "empty" in data(again)["error"]  # build_flow: an empty flow only
        assert (await services.flows.get(flow_id))["draft"] == draft

        value = data(
            await client.call_tool("get_field_value", {"flow_id": flow_id, "component_id": "message"})
        )
        assert value["fields"]["text"] == "hi"
        bad = await client.call_tool("add_component", {"component_type": "start"})  # no flow_id
        assert bad.is_error and "flow_id" in data(bad)["error"]


async def test_a_viewer_share_reads_the_flow_an_editor_share_changes_and_runs_it(services: Services) -> None:
    ann, vic, eve = [await _user(services, n) for n in ("ann", "vic", "eve")]
    async with connect(services, ann) as client:
        flow_id = data(await client.call_tool("create_flow", {"name": "Shared"}))["id"]
        await client.call_tool("build_flow", {"flow_id": flow_id, "spec": ECHO_SPEC})
        await client.call_tool("publish_flow", {"flow_id": flow_id})
    row = await services.flows.get_row(flow_id)
    await services.flows.share(row, vic.user_id, "viewer")
    await services.flows.share(row, eve.user_id, "editor")

    async with connect(services, vic) as client:
        listed = data(await client.call_tool("list_flows", {}))
        assert [(f["id"], f["access"]) for f in listed["flows"]] == [(flow_id, "viewer")]
        assert not (await client.call_tool("describe_flow_io", {"flow_id": flow_id})).is_error
        for name, arguments in (
            ("configure_component", {"flow_id": flow_id, "component_id": "ask", "params": {"prompt": "x"}}),
            ("run_flow", {"flow_id": flow_id, "inputs": {"q": "x"}}),
            ("publish_flow", {"flow_id": flow_id}),
        ):
            result = await client.call_tool(name, arguments)
            assert result.is_error and data(result)["code"] == "forbidden", (name, data(result))
        assert f"flow_{flow_id}" not in await tool_names(client)  # not runnable for a viewer

    async with connect(services, eve) as client:
        changed = await client.call_tool(
            "configure_component",
            {"flow_id": flow_id, "component_id": "ask", "params": {"prompt": "Q: {{inputs.q}}"}},
        )
        assert not changed.is_error and data(changed)["saved"] is True
        assert f"flow_{flow_id}" in await tool_names(client)
        draft_run = data(
            await client.call_tool("run_flow", {"flow_id": flow_id, "version": "draft", "inputs": "?"})
        )
        assert draft_run["status"] == "completed" and draft_run["version"] == "draft"
    assert (await services.flows.get(flow_id))["draft"]["nodes"][1]["config"]["prompt"] == "Q: {{inputs.q}}"


async def test_run_flow_reports_what_is_wrong(services: Services) -> None:
    ann = await _user(services, "ann")
    async with connect(services, ann) as client:
        flow_id = data(await client.call_tool("create_flow", {"name": "Runs"}))["id"]
        empty = await client.call_tool("run_flow", {"flow_id": flow_id})
        assert empty.is_error and "no flow" in data(empty)["error"].lower()
        await client.call_tool("build_flow", {"flow_id": flow_id, "spec": ECHO_SPEC})
        latest = await client.call_tool("run_flow", {"flow_id": flow_id, "version": "latest"})
        assert latest.is_error and "no published version" in data(latest)["error"]
        await client.call_tool("publish_flow", {"flow_id": flow_id})
        missing_input = await client.call_tool("run_flow", {"flow_id": flow_id, "inputs": {}})
        assert missing_input.is_error and "q" in str(data(missing_input))
        ok = data(await client.call_tool("run_flow", {"flow_id": flow_id, "inputs": "one text"}))
        assert ok["status"] == "completed" and ok["version"] == 1  # the published version by default


def test_published_flow_tool_names_are_unique_stable_and_short() -> None:
    ids = ["a.b", "a_b", "triage", "x" * 128, "list_flows"]
    names = flow_tool_names(ids, frozenset({"flow_triage"}))
    assert len(set(names.values())) == len(ids)
    assert all(len(n) <= MAX_NAME and n.replace("_", "").replace("-", "").isalnum() for n in names.values())
    assert names["list_flows"] == "flow_list_flows"
    assert names["a.b"] != names["a_b"] and names["triage"].startswith("flow_triage_")  # reserved: hashed
    assert flow_tool_names(list(reversed(ids)), frozenset({"flow_triage"})) == names  # order-independent


def test_the_client_configurations_in_docs_assistant_md_are_valid_mcp_server_entries() -> None:
    page = (Path(__file__).parents[2] / "docs" / "assistant.md").read_text()
    section = page.split("## plait as an MCP server", 1)[1]
    blocks = [b.split("```", 1)[0] for b in section.split("```json\n")[1:]]
    assert len(blocks) == 2
    entries = [json.loads(b)["mcpServers"]["plait"] for b in blocks]
    stdio, http = (MCPServerConfig.model_validate(e) for e in entries)
    assert stdio.command == "plait" and stdio.args == ["mcp"]
    assert http.url is not None and http.url.endswith("/mcp") and "Authorization" in http.headers


async def test_tools_carry_hints_and_a_flow_without_an_inputs_schema_takes_what_it_references(
    services: Services,
) -> None:
    ann = await _user(services, "ann")
    doc = {
        "id": "greeter",
        "name": "Greeter",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "hello", "type": "message", "config": {"text": "Hello {{inputs.who}}"}},
        ],
        "edges": [{"source": "start", "target": "hello"}],
    }
    await services.flows.create(doc, owner_id=ann.user_id)
    await services.flows.publish("greeter")
    async with connect(services, ann) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["list_flows"].annotations.read_only_hint is True
        assert tools["remove_component"].annotations.destructive_hint is True
        greeter = tools["flow_greeter"]
        assert greeter.input_schema == {"type": "object", "properties": {"who": {}}}
        assert greeter.annotations.title == "Greeter"
        said = data(await client.call_tool("flow_greeter", {"who": "Ada"}))
        assert said["status"] == "completed" and said["result"] == {"hello": "Hello Ada"}, said
