"""The `llm` and `categorize` nodes in real runs, with the scripted provider (node scripts and a
run-level provider), usage summing, streaming events, JSON re-ask and clear errors."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait.llm import ScriptedProvider
from plait.spec.problems import FlowValidationError
from plait_testing import flow


def llm(id_: str = "ask", **config: Any) -> dict[str, Any]:
    return {"id": id_, "type": "llm", "config": {"provider": "scripted", **config}}


def chain(*nodes: dict[str, Any], inputs: dict | None = None, **extra: Any) -> dict[str, Any]:
    all_nodes = [
        {"id": "start", "type": "start"},
        *nodes,
        {"id": "out", "type": "output", "config": {"name": "answer"}},
    ]
    ids = [n["id"] for n in all_nodes]
    return flow(all_nodes, list(zip(ids, ids[1:], strict=False)), **extra)


async def test_text_reply_streams_tokens_before_the_node_finishes_and_records_usage() -> None:
    doc = chain(
        llm(prompt="Say hi to {{inputs.name}}", system="You are terse.", script=["Hello there, Ada!"]),
    )
    result = await plait.run(doc, {"name": "Ada"})
    assert result.status == "completed", result.error
    assert result.outputs == {"answer": "Hello there, Ada!"}
    kinds = [(e.type, e.node_id) for e in result.events if e.node_id == "ask"]
    tokens = [e.data["delta"] for e in result.events if e.type == "node_token"]
    assert tokens == ["Hello ", "there, ", "Ada!"]
    assert kinds.index(("node_token", "ask")) < kinds.index(("node_finished", "ask"))
    # 2 words of system + 4 of prompt in, 3 out
    usage = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    assert result.nodes["ask"].usage == usage
    assert result.usage == usage
    finished = next(e for e in result.events if e.type == "node_finished" and e.node_id == "ask")
    assert finished.data["usage"] == usage
    assert result.events[-1].data["usage"] == usage


async def test_runs_sum_usage_over_nodes() -> None:
    doc = chain(llm("a", prompt="one", script=["x y"]), llm("b", prompt="two {{a}}", script=["z"]))
    result = await plait.run(doc)
    assert result.nodes["a"].usage["total_tokens"] == 3
    assert result.nodes["b"].usage["total_tokens"] == 4
    assert result.usage == {"input_tokens": 4, "output_tokens": 3, "total_tokens": 7}


async def test_the_prompt_sent_includes_system_history_window_and_prompt() -> None:
    shared = ScriptedProvider(["ok"])
    history = [
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        "latest question",
    ]
    doc = chain(
        llm(prompt="now: {{inputs.q}}", system="sys {{inputs.q}}", history="{{vars.chat}}", history_window=2),
        variables={"chat": history},
    )
    result = await plait.run(doc, {"q": "why"}, providers={"scripted": shared})
    assert result.status == "completed", result.error
    sent = shared.requests[0]
    assert [(m.role, m.content) for m in sent.messages] == [
        ("system", "sys why"),
        ("assistant", "old answer"),
        ("user", "latest question"),
        ("user", "now: why"),
    ]
    assert sent.model == "scripted" and sent.response_format is None


async def test_empty_prompt_uses_the_input() -> None:
    shared = ScriptedProvider(["ok"])
    doc = flow(
        [
            {"id": "start", "type": "start"},
            {"id": "t", "type": "test_echo", "config": {"value": "from upstream"}},
            llm(),
        ],
        [("start", "t"), ("t", "ask")],
    )
    result = await plait.run(doc, providers={"scripted": shared})
    assert result.status == "completed", result.error
    assert shared.requests[0].messages[-1].content == "from upstream"


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
    "required": ["city", "temp"],
}


async def test_json_output_is_parsed_and_validated() -> None:
    shared = ScriptedProvider(['```json\n{"city": "Oslo", "temp": 3}\n```'])
    doc = chain(llm(prompt="weather?", output="json", output_schema=SCHEMA, model="m1"))
    result = await plait.run(doc, providers={"scripted": shared})
    assert result.status == "completed", result.error
    assert result.outputs["answer"] == {"city": "Oslo", "temp": 3}
    request = shared.requests[0]
    assert request.response_format == {"type": "json_schema", "schema": SCHEMA, "name": "output"}
    assert "JSON Schema" in request.messages[0].content


async def test_invalid_json_gets_one_corrective_re_ask() -> None:
    shared = ScriptedProvider([{"json": {"city": "Oslo"}}, {"json": {"city": "Oslo", "temp": 3}}])
    doc = chain(llm(prompt="weather?", output="json", output_schema=SCHEMA))
    result = await plait.run(doc, providers={"scripted": shared})
    assert result.status == "completed", result.error
    assert result.outputs["answer"] == {"city": "Oslo", "temp": 3}
    reask = shared.requests[1].messages
    assert reask[-2].role == "assistant" and reask[-2].content == '{"city": "Oslo"}'
    assert "'temp' is a required property" in reask[-1].content
    # usage of both calls
    assert result.nodes["ask"].usage["output_tokens"] == 2 + 4


async def test_still_invalid_json_after_the_re_ask_fails_clearly() -> None:
    doc = chain(llm(prompt="weather?", output="json", script=["not json", "still not json"]))
    result = await plait.run(doc)
    assert result.status == "failed"
    error = result.nodes["ask"].error
    assert "still invalid after one corrective re-ask" in error and "not valid JSON" in error
    assert "still not json" in error


async def test_model_fallback_and_exhausted_candidates() -> None:
    script = [
        {"model": "big", "error": "model_not_found", "repeat": True},
        {"model": "small", "content": "from small"},
    ]
    ok = await plait.run(chain(llm(prompt="q", model="big", fallback_models=["small"], script=script)))
    assert ok.outputs == {"answer": "from small"}
    missing = [{"error": "model_not_found", "repeat": True}]
    bad = await plait.run(chain(llm(prompt="q", model="big", fallback_models=["bigger"], script=missing)))
    assert bad.status == "failed"
    assert "tried big, bigger" in bad.nodes["ask"].error


async def test_missing_key_names_the_variable_and_stored_variables_are_used(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    doc = chain(
        {"id": "ask", "type": "llm", "config": {"provider": "openai", "model": "gpt-4o-mini", "prompt": "q"}}
    )
    result = await plait.run(doc)
    assert result.status == "failed"
    assert "OPENAI_API_KEY" in result.nodes["ask"].error
    assert result.nodes["ask"].attempts == 1
    # with a stored variable pointing at a closed port the key is found and the call is attempted
    result = await plait.run(doc, env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"})
    assert result.status == "failed"
    assert "OPENAI_API_KEY" not in result.nodes["ask"].error
    assert "onnect" in result.nodes["ask"].error  # the socket's own message, e.g. "Connection refused"


def test_bad_configs_are_rejected_at_load_time() -> None:
    with pytest.raises(FlowValidationError, match="output_schema needs output 'json'"):
        plait.load_flow(chain(llm(prompt="q", output_schema=SCHEMA)))
    with pytest.raises(FlowValidationError, match="script step 1"):
        plait.load_flow(chain(llm(prompt="q", script=[{"bogus": 1}])))
    with pytest.raises(FlowValidationError, match="provider 'openai' needs a model"):
        plait.load_flow(chain({"id": "ask", "type": "llm", "config": {"provider": "openai", "prompt": "q"}}))
    # Issue 14: a script next to a real provider is ignored, not an error (switching a node to a
    # real model must not dead-end); an unknown provider is refused with a did-you-mean.
    plait.load_flow(chain(llm(provider="anthropic", model="m", prompt="q", script=["x"])))
    plait.load_flow(chain(llm(provider="openai", model="m", prompt="q", script=[])))
    with pytest.raises(FlowValidationError, match="did you mean provider 'openai' with model 'gpt4'"):
        plait.load_flow(chain(llm(provider="gpt4", model="", prompt="q")))
    with pytest.raises(FlowValidationError, match="not a valid JSON Schema"):
        plait.load_flow(chain(llm(prompt="q", output="json", output_schema={"type": 5})))


def categorize(script: list[Any], **config: Any) -> dict[str, Any]:
    return flow(
        [
            {"id": "start", "type": "start"},
            {
                "id": "route",
                "type": "categorize",
                "config": {
                    "provider": "scripted",
                    "input": "{{inputs.text}}",
                    "categories": [
                        {
                            "name": "billing",
                            "description": "invoices and payments",
                            "examples": ["refund me"],
                        },
                        {"name": "tech", "description": "bugs and errors"},
                    ],
                    "script": script,
                    **config,
                },
            },
            {"id": "b", "type": "output", "config": {"name": "billing", "value": "{{route.category}}"}},
            {"id": "t", "type": "output", "config": {"name": "tech", "value": "{{route.category}}"}},
            {"id": "e", "type": "output", "config": {"name": "other", "value": "{{route.input}}"}},
        ],
        [
            {"source": "start", "target": "route"},
            {"source": "route", "source_port": "billing", "target": "b"},
            {"source": "route", "source_port": "tech", "target": "t"},
            {"source": "route", "source_port": "else", "target": "e"},
        ],
    )


@pytest.mark.parametrize(
    ("reply", "outputs"),
    [
        ("billing", {"billing": "billing"}),
        ("  'Tech'. ", {"tech": "tech"}),
        ("The category is tech.", {"tech": "tech"}),
        ("billing or tech?", {"other": "my printer"}),
        ("weather", {"other": "my printer"}),
        ("else", {"other": "my printer"}),
    ],
)
async def test_categorize_fires_one_port_and_unknown_answers_go_to_else(reply: str, outputs: dict) -> None:
    result = await plait.run(categorize([reply]), {"text": "my printer"})
    assert result.status == "completed", result.error
    assert result.outputs == outputs
    assert result.nodes["route"].output["reply"] == reply
    assert result.nodes["route"].usage["total_tokens"] > 0
    skipped = {e.node_id for e in result.events if e.type == "node_skipped"}
    assert len(skipped) == 2


async def test_categorize_prompt_lists_descriptions_and_examples() -> None:
    shared = ScriptedProvider(["billing"])
    doc = categorize([])
    doc["nodes"][1]["config"].pop("script")
    await plait.run(doc, {"text": "refund"}, providers={"scripted": shared})
    system = shared.requests[0].messages[0].content
    assert "- billing: invoices and payments" in system and "example: refund me" in system
    assert "- tech: bugs and errors" in system and "reply else" in system
    assert shared.requests[0].messages[1].content == "refund"


def test_categorize_rejects_else_and_duplicate_names() -> None:
    for cats, message in (
        ([{"name": "else"}], "reserved"),
        ([{"name": "a"}, {"name": "A"}], "unique"),
    ):
        doc = flow(
            [{"id": "c", "type": "categorize", "config": {"provider": "scripted", "categories": cats}}]
        )
        with pytest.raises(FlowValidationError, match=message):
            plait.load_flow(doc)


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Sure! Here it is: {"a": "x"} Hope that helps.', {"a": "x"}),
        ("[1, 2, 3]", [1, 2, 3]),
        ("42", 42),
    ],
)
def test_json_replies_are_extracted(reply: str, value: Any) -> None:
    from plait.nodes.builtin.llm import parse_json_reply

    assert parse_json_reply(reply) == value


def test_non_json_replies_say_where_parsing_failed() -> None:
    from plait.nodes.builtin.llm import parse_json_reply

    with pytest.raises(ValueError, match="not valid JSON .* at position 0"):
        parse_json_reply("no json here")
