"""The OpenAI-compatible provider and the `llm` node against a real model server: llama.cpp's
server with SmolLM2-135M on 127.0.0.1 (the `llama_server` fixture, tests/llama_fixture.py)."""

from __future__ import annotations

import pytest
from jsonschema import validate

import plait
from plait.llm import ChatRequest, Message, ToolSpec
from plait.llm.openai_compat import OpenAICompatProvider
from plait_testing import flow

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def llm_flow(**config) -> dict:
    node = {"id": "ask", "type": "llm", "config": {"provider": "openai", "model": "smollm2", **config}}
    return flow(
        [
            {"id": "start", "type": "start"},
            node,
            {"id": "out", "type": "output", "config": {"name": "answer"}},
        ],
        [("start", "ask"), ("ask", "out")],
    )


async def test_llm_node_streams_tokens_before_it_finishes(llama_server: str) -> None:
    doc = llm_flow(
        prompt="Say hello to {{inputs.name}}.", system="You are friendly.", max_tokens=24, temperature=0
    )
    result = await plait.run(doc, {"name": "Ada"}, env={"OPENAI_BASE_URL": llama_server})
    assert result.status == "completed", result.error
    events = [e for e in result.events if e.node_id == "ask"]
    types = [e.type for e in events]
    tokens = [e.data["delta"] for e in events if e.type == "node_token"]
    assert len(tokens) >= 2
    assert types.index("node_token") < types.index("node_finished")
    assert max(i for i, t in enumerate(types) if t == "node_token") < types.index("node_finished")
    assert result.outputs["answer"] == "".join(tokens) != ""
    usage = result.nodes["ask"].usage
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert result.usage == usage


async def test_llm_node_json_output_matches_the_schema(llama_server: str) -> None:
    doc = llm_flow(
        prompt="Invent a person: a name and an age.",
        output="json",
        output_schema=PERSON,
        max_tokens=48,
        temperature=0,
    )
    result = await plait.run(doc, env={"OPENAI_BASE_URL": llama_server})
    assert result.status == "completed", result.error
    validate(result.outputs["answer"], PERSON)


@pytest.mark.parametrize("stream", [False, True])
async def test_forced_tool_call(llama_server: str, stream: bool) -> None:
    provider = OpenAICompatProvider(api_key="not-needed", base_url=llama_server, max_retries=0)
    deltas: list[str] = []
    response = await provider.chat(
        ChatRequest(
            "smollm2",
            [Message("user", "What is the weather in Paris?")],
            tools=[WEATHER],
            tool_choice={"name": "get_weather"},
            max_tokens=64,
            temperature=0,
        ),
        on_delta=deltas.append if stream else None,
    )
    assert [c.name for c in response.tool_calls] == ["get_weather"]
    call = response.tool_calls[0]
    assert call.id and isinstance(call.arguments.get("city"), str)
    assert response.usage.output_tokens > 0
