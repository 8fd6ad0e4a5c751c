"""The `agent` node with the scripted provider: the tool loop, permissions (allow/ask/deny),
approval pauses through plait.run + plait.resume, sub-agents, flows and MCP tools as tools."""

from __future__ import annotations

import pytest
from _mcp import stdio_config

import plait
from plait.tools import Tool, ToolRegistry, default_tools
from plait_testing import flow

pytestmark = pytest.mark.usefixtures("mcp_cleanup")

CALLS: list[dict] = []


async def _delete_file(args, ctx):
    CALLS.append(args)
    return {"deleted": args["path"]}


async def _lookup(args, ctx):
    CALLS.append(args)
    return {"city": args["city"], "temp_c": 21}


def registry() -> ToolRegistry:
    CALLS.clear()
    return ToolRegistry(
        [
            Tool("weather", "Current weather of a city.",
                 {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, _lookup),
            Tool("delete_file", "Deletes a file.",
                 {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}, _delete_file),
        ],
        parent=default_tools(),
    )  # fmt: skip


def agent_flow(script: list, **config) -> dict:
    return flow(
        [
            {"id": "agent", "type": "agent",
             "config": {"provider": "scripted", "prompt": "{{inputs.q}}", "script": script, **config}},
            {"id": "answer", "type": "output", "config": {"value": "{{agent.content}}"}},
        ],
        [("agent", "answer")],
        inputs={"type": "object", "properties": {"q": {"type": "string"}}},
    )  # fmt: skip


WEATHER_SCRIPT = [
    {"tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}]},
    {"content": "It is 21 degrees in Paris."},
]


async def test_tool_loop_events_usage_and_streaming():
    events: list = []
    result = await plait.run(
        agent_flow(WEATHER_SCRIPT, tools=["weather"]), {"q": "Weather in Paris?"},
        tools=registry(), on_event=events.append,
    )  # fmt: skip
    assert result.status == "completed", result.error
    assert result.outputs == {"answer": "It is 21 degrees in Paris."}
    assert CALLS == [{"city": "Paris"}]
    node = result.nodes["agent"]
    assert node.output["steps"] == 2
    assert node.output["tool_calls"] == [
        {"id": "call_1_1", "name": "weather", "args": {"city": "Paris"}, "status": "ok",
         "result": {"city": "Paris", "temp_c": 21}}
    ]  # fmt: skip
    assert [e.data for e in events if e.type == "node_tool_call"] == [
        {"name": "weather", "args": {"city": "Paris"}}
    ]
    tokens = "".join(e.data["delta"] for e in events if e.type == "node_token")
    assert tokens == "It is 21 degrees in Paris."
    finished = next(e for e in events if e.type == "node_finished" and e.node_id == "agent")
    tokens_before = [e for e in events if e.type == "node_token"]
    assert events.index(tokens_before[-1]) < events.index(finished)
    # usage of both model calls, summed
    assert node.usage["total_tokens"] == node.usage["input_tokens"] + node.usage["output_tokens"] > 0
    assert node.usage["output_tokens"] == (1 + 2) + 6  # call 1: name + JSON args words; call 2: the answer
    assert result.usage["total_tokens"] >= node.usage["total_tokens"]


async def test_deny_permission_never_calls_and_tells_the_model():
    script = [
        {"tool_calls": [{"name": "delete_file", "arguments": {"path": "/etc/passwd"}}]},
        {"content": "I am not allowed to delete files."},
    ]
    result = await plait.run(
        agent_flow(script, tools=["delete_file"], permissions={"delete_file": "deny"}), {"q": "delete it"},
        tools=registry(),
    )  # fmt: skip
    assert result.status == "completed", result.error
    assert CALLS == []
    assert result.outputs["answer"] == "I am not allowed to delete files."
    assert result.nodes["agent"].output["tool_calls"][0]["status"] == "denied"


def approval_flow() -> dict:
    script = [
        {"tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]},
        {"tool_calls": [{"name": "delete_file", "arguments": {"path": "/tmp/report.txt"}}]},
        {"content": "Done: the report is deleted."},
    ]
    return agent_flow(script, tools=["weather", "delete_file"], permissions={"delete_file": "ask"})


async def test_ask_pauses_then_approve_runs_the_tool():
    cp = plait.InMemoryCheckpointer()
    tools = registry()
    first = await plait.run(approval_flow(), {"q": "clean up"}, checkpointer=cp, run_id="ask1", tools=tools)
    assert first.status == "waiting"
    task = first.interrupt
    assert task["kind"] == "tool_approval"
    assert task["payload"]["tool"] == "delete_file"
    assert task["payload"]["args"] == {"path": "/tmp/report.txt"}
    assert task["payload"]["actions"] == ["approve", "deny"]
    assert CALLS == [{"city": "Oslo"}]  # the allowed tool ran, the asked one did not

    events: list = []
    done = await plait.resume(approval_flow(), "ask1", {"action": "approve"}, checkpointer=cp, tools=tools,
                              on_event=events.append)  # fmt: skip
    assert done.status == "completed", done.error
    assert done.outputs == {"answer": "Done: the report is deleted."}
    # nothing ran twice: weather once before the pause, delete once after approval
    assert CALLS == [{"city": "Oslo"}, {"path": "/tmp/report.txt"}]
    log = done.nodes["agent"].output["tool_calls"]
    assert [(c["name"], c["status"]) for c in log] == [("weather", "ok"), ("delete_file", "ok")]
    assert log[1]["approved"] is True
    assert done.nodes["agent"].output["steps"] == 3
    assert [e.data["name"] for e in events if e.type == "node_tool_call"] == ["delete_file"]
    assert done.nodes["agent"].usage["output_tokens"] > 0


async def test_ask_then_deny_sends_a_refusal_and_the_model_finishes():
    cp = plait.InMemoryCheckpointer()
    tools = registry()
    script = [
        {"tool_calls": [{"name": "delete_file", "arguments": {"path": "/tmp/a"}}]},
        {"content": "Understood, I left the file alone."},
    ]
    doc = agent_flow(script, tools=["delete_file"], permissions={"*": "ask"})
    first = await plait.run(doc, {"q": "delete /tmp/a"}, checkpointer=cp, run_id="ask2", tools=tools)
    assert first.status == "waiting"
    done = await plait.resume(
        doc, "ask2", {"action": "deny", "reason": "keep it"}, checkpointer=cp, tools=tools
    )
    assert done.status == "completed", done.error
    assert CALLS == []
    assert done.outputs == {"answer": "Understood, I left the file alone."}
    entry = done.nodes["agent"].output["tool_calls"][0]
    assert entry["status"] == "denied_by_user"


async def test_two_approvals_in_one_run():
    cp = plait.InMemoryCheckpointer()
    tools = registry()
    script = [
        {"tool_calls": [{"name": "delete_file", "arguments": {"path": "/a"}},
                        {"name": "delete_file", "arguments": {"path": "/b"}}]},
        {"content": "Deleted /a, kept /b."},
    ]  # fmt: skip
    doc = agent_flow(script, tools=["delete_file"], permissions={"delete_file": "ask"})
    first = await plait.run(doc, {"q": "delete"}, checkpointer=cp, run_id="ask3", tools=tools)
    assert first.interrupt["payload"]["args"] == {"path": "/a"}
    second = await plait.resume(doc, "ask3", "approve", checkpointer=cp, tools=tools)
    assert second.status == "waiting"
    assert second.interrupt["payload"]["args"] == {"path": "/b"}
    done = await plait.resume(doc, "ask3", {"approved": False}, checkpointer=cp, tools=tools)
    assert done.status == "completed", done.error
    assert CALLS == [{"path": "/a"}]
    assert [c["status"] for c in done.nodes["agent"].output["tool_calls"]] == ["ok", "denied_by_user"]


async def test_a_bad_approval_answer_is_refused():
    cp = plait.InMemoryCheckpointer()
    doc = approval_flow()
    await plait.run(doc, {"q": "x"}, checkpointer=cp, run_id="ask4", tools=registry())
    with pytest.raises(Exception, match="approve or deny"):
        await plait.resume(doc, "ask4", {"action": "maybe"}, checkpointer=cp, tools=registry())


async def test_tool_errors_go_back_to_the_model_and_bad_arguments_are_caught():
    async def broken(args, ctx):
        from plait.tools import ToolError

        raise ToolError("the service is down")

    tools = ToolRegistry([Tool("broken", "Fails.", {"type": "object"}, broken)], parent=registry())
    script = [
        {"tool_calls": [{"name": "weather", "arguments": {"town": "Paris"}}]},
        {"tool_calls": [{"name": "broken", "arguments": {}}, {"name": "invented", "arguments": {}}]},
        {"content": "Sorry, I could not find out."},
    ]
    result = await plait.run(agent_flow(script, tools=["weather", "broken"]), {"q": "?"}, tools=tools)
    assert result.status == "completed", result.error
    log = result.nodes["agent"].output["tool_calls"]
    assert [c["status"] for c in log] == ["invalid_arguments", "error", "unknown_tool"]
    assert CALLS == []
    fail = await plait.run(
        agent_flow(script[1:], tools=["broken"], on_tool_error="fail"), {"q": "?"}, tools=tools
    )
    assert fail.status == "failed"
    assert "tool 'broken' failed: the service is down" in fail.error


async def test_max_steps():
    script = [{"tool_calls": [{"name": "weather", "arguments": {"city": "X"}}], "repeat": True}]
    result = await plait.run(
        agent_flow(script, tools=["weather"], max_steps=3), {"q": "loop"}, tools=registry()
    )
    assert result.status == "failed"
    assert "did not finish within max_steps=3" in result.error
    assert len(CALLS) == 3


async def test_sub_agent_as_a_tool_sums_usage():
    sub = {
        "name": "researcher",
        "description": "Finds the weather of a city.",
        "agent": {"provider": "scripted", "tools": ["weather"], "script": [
            {"tool_calls": [{"name": "weather", "arguments": {"city": "Rome"}}]},
            {"content": "Rome: 21 C"},
        ]},
    }  # fmt: skip
    script = [
        {"tool_calls": [{"name": "researcher", "arguments": {"task": "weather in Rome"}}]},
        {"content": "The researcher says: Rome: 21 C"},
    ]
    result = await plait.run(agent_flow(script, sub_agents=[sub]), {"q": "Rome?"}, tools=registry())
    assert result.status == "completed", result.error
    assert result.outputs["answer"] == "The researcher says: Rome: 21 C"
    entry = result.nodes["agent"].output["tool_calls"][0]
    assert entry["result"]["answer"] == "Rome: 21 C"
    assert entry["result"]["tool_calls"][0]["name"] == "weather"
    assert CALLS == [{"city": "Rome"}]
    # the parent's usage includes the sub-agent's two model calls
    assert result.nodes["agent"].usage["output_tokens"] > 2 + 7


async def test_mcp_tools_in_an_agent(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    script = [
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"tool_calls": [{"name": "shout", "arguments": {"text": "five"}}]},
        {"content": "2 + 3 = 5, FIVE"},
    ]
    doc = agent_flow(script, tools=["mcp:calc/add", "mcp:calc/shout"])
    doc["settings"] = {"mcp_servers": {"calc": stdio_config()}}
    result = await plait.run(doc, {"q": "add"})
    assert result.status == "completed", result.error
    log = result.nodes["agent"].output["tool_calls"]
    assert [(c["name"], c["result"]) for c in log] == [("add", 5), ("shout", "FIVE")]


async def test_mcp_server_killed_mid_run_fails_the_node_naming_it(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    script = [{"tool_calls": [{"name": "crash", "arguments": {}}]}, {"content": "unreachable"}]
    doc = agent_flow(script, tools=["mcp:calc"])
    doc["settings"] = {"mcp_servers": {"calc": stdio_config()}}
    result = await plait.run(doc, {"q": "crash"})
    assert result.status == "failed"
    assert "MCP server 'calc'" in result.error and "went away while calling tool 'crash'" in result.error


async def test_flow_as_a_tool():
    child = {
        "schema": "plait/flow@1", "id": "greeter",
        "inputs": {"type": "object", "properties": {"name": {"type": "string"}}},
        "nodes": [{"id": "out", "type": "output", "config": {"name": "greeting", "value": "Hello {{inputs.name}}"}}],
        "edges": [],
    }  # fmt: skip
    script = [
        {"tool_calls": [{"name": "greet", "arguments": {"name": "Ada"}}]},
        {"content": "The flow said hello."},
    ]
    doc = agent_flow(script, flows=[{"flow": "greeter", "name": "greet", "description": "Greets someone.",
                                     "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}])  # fmt: skip
    result = await plait.run(doc, {"q": "greet Ada"}, flows={"greeter": child})
    assert result.status == "completed", result.error
    assert result.nodes["agent"].output["tool_calls"][0]["result"] == {"greeting": "Hello Ada"}


async def test_config_errors_are_clear():
    result = await plait.run(agent_flow(["hi"], tools=["nope"]), {"q": "x"})
    assert result.status == "failed" and "unknown tool 'nope'" in result.error
    empty = await plait.run(agent_flow(["hi"]), {"q": ""})
    assert empty.status == "failed" and "the agent has no task" in empty.error
    with pytest.raises(Exception, match="mcp:<server>"):
        plait.load_flow(agent_flow(["hi"], tools=["mcp:"]))


async def test_agent_with_a_streamable_http_mcp_server_and_its_death(monkeypatch, mcp_http):
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    script = [
        {"tool_calls": [{"name": "add", "arguments": {"a": 20, "b": 22}}]},
        {"tool_calls": [{"name": "crash", "arguments": {}}]},
        {"content": "unreachable"},
    ]
    doc = agent_flow(script, tools=["mcp:web"])
    doc["settings"] = {
        "mcp_servers": {"web": {"url": mcp_http.url, "headers": {"Authorization": "Bearer ${TOKEN}"}}}
    }
    result = await plait.run(doc, {"q": "add then crash"}, env={"TOKEN": "test-token"})
    assert result.status == "failed"
    assert "MCP server 'web'" in result.error and "went away while calling tool 'crash'" in result.error
    assert result.nodes["agent"].status == "error"


async def test_agent_calls_a_streamable_http_mcp_tool(monkeypatch, mcp_http):
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    script = [{"tool_calls": [{"name": "add", "arguments": {"a": 20, "b": 22}}]}, {"content": "42"}]
    doc = agent_flow(script, tools=["mcp:web/add"], permissions={"mcp:web": "allow", "*": "deny"})
    doc["settings"] = {
        "mcp_servers": {"web": {"url": mcp_http.url, "headers": {"Authorization": "Bearer ${TOKEN}"}}}
    }
    result = await plait.run(doc, {"q": "add"}, env={"TOKEN": "test-token"})
    assert result.status == "completed", result.error
    assert result.nodes["agent"].output["tool_calls"][0]["result"] == 42


async def test_sub_agents_cannot_ask():
    sub = {"name": "helper", "description": "Helps.",
           "agent": {"provider": "scripted", "script": ["x"], "permissions": {"*": "ask"}}}  # fmt: skip
    result = await plait.run(agent_flow(["hi"], sub_agents=[sub]), {"q": "x"})
    assert result.status == "failed" and "sub-agent 'helper' uses ask permissions" in result.error


def test_validation_checks_templates_not_scripts():
    doc = agent_flow([{"content": "literal {{braces}} in a scripted reply"}], tools=["weather"])
    plait.load_flow(doc)  # the script is data
    bad = agent_flow(["x"], system="Use {{missing.value}}")
    with pytest.raises(Exception, match="missing"):
        plait.load_flow(bad)


async def test_force_tool_first_and_no_tools_on_the_last_call():
    from plait.llm import ProviderRegistry, ScriptedProvider

    model = ScriptedProvider(
        [
            {"tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]},
            {"tool_calls": [{"name": "weather", "arguments": {"city": "Bergen"}}]},
            {"content": "Oslo and Bergen: 21 C."},
        ]
    )
    doc = agent_flow(None, tools=["weather", "delete_file"], force_tool="weather", max_steps=3)
    del doc["nodes"][0]["config"]["script"]
    result = await plait.run(
        doc, {"q": "weather"}, tools=registry(), providers=ProviderRegistry(providers={"scripted": model})
    )
    assert result.status == "completed", result.error
    assert [r.tool_choice for r in model.requests] == [{"name": "weather"}, None, "none"]
    bad = agent_flow(["x"], tools=["weather"], force_tool="nope")
    failed = await plait.run(bad, {"q": "x"}, tools=registry())
    assert failed.status == "failed" and "force_tool 'nope' is not one of the agent's tools" in failed.error
