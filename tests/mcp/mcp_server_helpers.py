"""What the MCP tests share: the 3-node flow an external client builds, and reading results."""

from __future__ import annotations

import json
from typing import Any

# start -> llm (the scripted provider, so no model is needed) -> output, in the compact spec.
ECHO_SPEC = """name: Echo
description: Answers a question (scripted)

inputs:
  q: string

nodes:
  start: start
  ask: llm
  done: output

edges:
  start -> ask
  ask -> done

config:
  ask.provider: scripted
  ask.prompt: '{{inputs.q}}'
  ask.script: [{"content": "forty two", "usage": {"input_tokens": 7, "output_tokens": 2}}]
  done.value: '{{ask}}'
"""


def data(result: Any) -> dict[str, Any]:
    """A tool result's JSON object (structured content, else the text)."""
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


async def tool_names(client: Any) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def build_run_publish(client: Any, name: str = "Echo bot") -> str:
    """The acceptance path of an external client: create an empty flow, build it from the compact
    spec, run the draft, publish it, call it as its own tool. Returns the flow id."""
    names = await tool_names(client)
    for tool in ("list_flows", "create_flow", "build_flow", "run_flow", "publish_flow", "search_components"):
        assert tool in names
    created = await client.call_tool("create_flow", {"name": name, "description": "built over MCP"})
    assert not created.is_error, data(created)
    flow_id = data(created)["id"]

    built = await client.call_tool("build_flow", {"flow_id": flow_id, "spec": ECHO_SPEC})
    assert not built.is_error, data(built)
    assert data(built)["saved"] is True and (data(built)["nodes"], data(built)["edges"]) == (3, 2)

    ran = await client.call_tool("run_flow", {"flow_id": flow_id, "inputs": {"q": "the answer?"}})
    out = data(ran)
    assert not ran.is_error, out
    assert out["status"] == "completed" and out["version"] == "draft"
    assert out["result"] == {"done": "forty two"}
    assert (out["input_tokens"], out["output_tokens"], out["total_tokens"]) == (7, 2, 9)

    published = await client.call_tool("publish_flow", {"flow_id": flow_id, "note": "first"})
    assert not published.is_error and data(published)["version"] == 1

    tools = {t.name: t for t in (await client.list_tools()).tools}
    own = tools[f"flow_{flow_id}"]
    assert own.input_schema["properties"] == {"q": {"type": "string"}}
    assert name in (own.description or "")
    called = await client.call_tool(f"flow_{flow_id}", {"q": "again?"})
    assert not called.is_error, data(called)
    assert data(called)["result"] == {"done": "forty two"} and data(called)["version"] == 1

    listed = data(await client.call_tool("list_flows", {"query": name.split()[0]}))
    (flow,) = [f for f in listed["flows"] if f["id"] == flow_id]
    assert flow["published_version"] == 1
    assert flow["graph"].splitlines() == [
        "[start (start)] --> [ask (llm)]",
        "[ask (llm)] --> [done (output)]",
    ]
    return flow_id


async def assert_invisible(client: Any, flow_id: str, *, can_write: bool = True) -> None:
    """Another user's client: the flow is in no listing, and every call naming it is not found.
    (A key without `write`/`run` is refused those calls for the scope first, whatever the flow:
    a 403 that says nothing about the flow, as over REST.)"""
    listed = data(await client.call_tool("list_flows", {}))
    assert flow_id not in [f["id"] for f in listed["flows"]]
    names = await tool_names(client)
    assert f"flow_{flow_id}" not in names
    calls = [
        ("get_field_value", {"flow_id": flow_id, "component_id": "ask"}),
        ("describe_flow_io", {"flow_id": flow_id}),
        ("configure_component", {"flow_id": flow_id, "component_id": "ask", "params": {"prompt": "x"}}),
        ("remove_component", {"flow_id": flow_id, "component_id": "ask"}),
        ("run_flow", {"flow_id": flow_id, "inputs": {"q": "x"}}),
        ("publish_flow", {"flow_id": flow_id}),
        (f"flow_{flow_id}", {"q": "x"}),
    ]
    for name, arguments in calls:
        result = await client.call_tool(name, arguments)
        assert result.is_error, (name, data(result))
        reading = name in ("get_field_value", "describe_flow_io") or name.startswith("flow_")
        expected = "not_found" if can_write or reading else "forbidden"
        assert data(result)["code"] == expected, (name, data(result))
