"""The `tool` node through plait.run: built-in tools against local services, MCP tools, errors."""

from __future__ import annotations

import pytest
from _mcp import stdio_config

import plait
from plait.tools import Tool, ToolRegistry
from plait_testing import flow

pytestmark = pytest.mark.usefixtures("mcp_cleanup")


def _events():
    seen: list = []
    return seen, seen.append


async def test_upstream_value_goes_to_the_chosen_parameter(services):
    doc = flow(
        [
            {"id": "q", "type": "test_echo", "config": {"value": "{{inputs.topic}}"}},
            {"id": "search", "type": "tool",
             "config": {"tool": "web_search", "input_param": "query", "args": {"max_results": 1}}},
            {"id": "out", "type": "output", "config": {"value": "{{search.results.0.url}}"}},
        ],
        [("q", "search"), ("search", "out")],
    )  # fmt: skip
    events, sink = _events()
    result = await plait.run(
        doc,
        {"topic": "plait"},
        env={"PLAIT_SEARCH_BACKEND": "searxng", "SEARXNG_URL": services.url + "/searx"},
        on_event=sink,
    )
    assert result.status == "completed", result.error
    assert result.outputs["out"] == "https://example.org/plait"
    calls = [e for e in events if e.type == "node_tool_call"]
    assert [(c.node_id, c.data) for c in calls] == [
        ("search", {"name": "web_search", "args": {"max_results": 1, "query": "plait"}})
    ]
    assert services.requests[-1]["query"]["q"] == "plait"


async def test_templated_args_and_a_registry_passed_to_the_run():
    async def greet(args, ctx):
        return f"hello {args['name']} from {ctx.node_id}"

    tools = ToolRegistry([Tool("greet", "Greets.", {"type": "object", "required": ["name"]}, greet)])
    doc = flow(
        [
            {"id": "hi", "type": "tool", "config": {"tool": "greet", "args": {"name": "{{inputs.who}}"}}},
            {"id": "out", "type": "output", "config": {"value": "{{hi}}"}},
        ],
        [("hi", "out")],
    )
    result = await plait.run(doc, {"who": "Ada"}, tools=tools)
    assert result.outputs == {"out": "hello Ada from hi"}


async def test_mcp_tool_from_flow_settings(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    doc = flow(
        [
            {
                "id": "sum",
                "type": "tool",
                "config": {"tool": "mcp:calc/add", "args": {"a": "{{inputs.a}}", "b": 2}},
            },
            {"id": "out", "type": "output", "config": {"value": "{{sum}}"}},
        ],
        [("sum", "out")],
        settings={"mcp_servers": {"calc": stdio_config()}},
    )
    result = await plait.run(doc, {"a": 40})
    assert result.status == "completed", result.error
    assert result.outputs == {"out": 42}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"tool": "nope"}, "tool 'nope': unknown tool 'nope'"),
        ({"tool": "web_search"}, "tool 'web_search' needs the parameter(s) query"),
        ({"tool": "mcp:calc"}, "names a whole MCP server"),
        ({"tool": "mcp:missing/x"}, "unknown MCP server 'missing'"),
    ],
)
async def test_clear_errors(config, message):
    result = await plait.run(flow([{"id": "t", "type": "tool", "config": config}]))
    assert result.status == "failed"
    assert message in result.error
    assert "'t'" in result.error


async def test_mcp_tool_error_names_server_and_tool(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    doc = flow(
        [{"id": "t", "type": "tool", "config": {"tool": "mcp:calc/fail", "args": {"reason": "bad input"}}}],
        settings={"mcp_servers": {"calc": stdio_config()}},
    )
    result = await plait.run(doc)
    assert result.status == "failed"
    assert "MCP tool calc/fail failed" in result.error and "bad input" in result.error


async def test_the_flow_tool_runs_another_flow():
    child = {
        "schema": "plait/flow@1", "id": "greeter",
        "inputs": {"type": "object", "properties": {"name": {"type": "string"}}},
        "nodes": [{"id": "out", "type": "output", "config": {"name": "greeting", "value": "Hello {{inputs.name}}"}}],
        "edges": [],
    }  # fmt: skip
    doc = flow(
        [
            {"id": "call", "type": "tool", "config": {"tool": "flow", "args": {"flow": "greeter", "inputs": {"name": "Ada"}}}},
            {"id": "out", "type": "output", "config": {"value": "{{call.greeting}}"}},
        ],
        [("call", "out")],
    )  # fmt: skip
    result = await plait.run(doc, flows={"greeter": child})
    assert result.status == "completed", result.error
    assert result.outputs == {"out": "Hello Ada"}
    missing = await plait.run(
        flow([{"id": "call", "type": "tool", "config": {"tool": "flow", "args": {"flow": "nope"}}}])
    )
    assert missing.status == "failed" and "flow 'nope' failed" in missing.error
