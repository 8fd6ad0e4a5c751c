"""The edge-LLM policy (seed 002) with the scripted provider as decider.

Seed 002 section 15, criterion by criterion:
- flows with inline nodes and JSON Schemas can be created -> test_edge_flow_validates_and_*,
  tests/engine/test_edge_llm_api.py::test_edge_flow_over_the_api
- a run's context is observable via the API at any time -> test_edge_llm_api.py
- ready sets computed from `requires` -> test_ready_sets_follow_requires_and_joins
- the edge LLM chooses nodes and produces typed inputs -> test_decided_inputs_reach_the_nodes,
  test_invalid_typed_input_gets_one_corrective_reask
- nodes marked `skipped` when indicated -> test_skips_mark_nodes_skipped_and_dependants_go_on
- human nodes create tasks, wait, resume -> test_human_node_pauses_and_deciding_goes_on_after_resume
- happy path `completed`, fatal errors `failed` -> test_ready_sets_..., test_*_fails_the_run
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.engine.policy_edge import DecisionError, parse_decision
from plait.llm.registry import ProviderRegistry
from plait.llm.scripted import ScriptedProvider
from plait.spec.problems import FlowValidationError
from plait_testing import CALLS, flow

OBJ_N = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def echo(id_: str, *, requires: tuple[str, ...] = (), schema: dict | None = None, **config: Any) -> dict:
    node: dict[str, Any] = {"id": id_, "type": "test_echo", "config": config, "requires": list(requires)}
    if schema is not None:
        node["input_schema"] = schema
    return node


def edge_flow(nodes: list[dict], edges: list = (), **decider: Any) -> dict:
    return flow(
        nodes,
        edges,
        id="edge",
        name="Edge test",
        settings={"policy": "edge_llm", "decider": {"provider": "scripted", "model": "decider-1", **decider}},
    )


def decide(mode: str, nxt: list | None = None, skips: list | None = None, reason: str = "") -> dict:
    return {"json": {"mode": mode, "next": nxt or [], "skips": skips or [], "reason": reason}}


def with_decider(*steps: Any) -> tuple[ScriptedProvider, ProviderRegistry]:
    decider = ScriptedProvider(steps)
    return decider, ProviderRegistry(providers={"scripted": decider})


def seen(decider: ScriptedProvider, call: int) -> dict[str, Any]:
    """What the decider was shown in its `call`-th request (the user message of the first turn)."""
    return json.loads(decider.requests[call].messages[1].content)


def ready_keys(decider: ScriptedProvider, call: int) -> list[str]:
    return [n["key"] for n in seen(decider, call)["ready"]]


def types(result: plait.RunResult) -> list[tuple[str, str | None]]:
    return [(e.type, e.node_id) for e in result.events]


# ------------------------------------------------------------------ ready sets, happy path
async def test_ready_sets_follow_requires_and_joins() -> None:
    # A -> {B, C} -> D (the seed's join): B and C require A, D requires both.
    doc = edge_flow(
        [
            echo("a", value=1),
            echo("b", requires=("a",)),
            echo("c", requires=("a",)),
            echo("d", requires=("b", "c")),
        ]
    )
    decider, providers = with_decider(
        decide("next", [{"node": "a"}], reason="start"),
        decide("parallel", [{"node": "b", "input": "B"}, {"node": "c", "input": "C"}], reason="fan out"),
        decide("next", [{"node": "d", "input": {"joined": True}}], reason="join"),
    )
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    assert [ready_keys(decider, i) for i in range(3)] == [["a"], ["b", "c"], ["d"]]
    assert len(decider.requests) == 3  # nothing left ready after d: completed without asking again
    first, second = seen(decider, 0), seen(decider, 1)
    assert first["flow"] == {"id": "edge", "name": "Edge test", "description": ""}
    assert first["last"] is None and first["context"] == {"input": {}, "vars": {}, "completed": []}
    assert second["last"] == {"key": "a", "output": 1}
    assert second["ready"][0] == {
        "key": "b",
        "kind": "program",
        "type": "test_echo",
        "input_schema": None,
        "requires": ["a"],
    }
    assert seen(decider, 2)["context"]["completed"] == [
        {"key": "a", "output": 1},
        {"key": "b", "output": "B"},
        {"key": "c", "output": "C"},
    ]
    assert {k: n.status for k, n in result.nodes.items()} == {"a": "ok", "b": "ok", "c": "ok", "d": "ok"}
    assert [d["step"] for d in result.decisions] == [1, 2, 3]
    assert [d["mode"] for d in result.decisions] == ["next", "parallel", "next"]
    assert result.decisions[1]["at"] == "a" and result.decisions[1]["ready"] == ["b", "c"]
    decision_events = [e for e in result.events if e.type == "decision"]
    assert [e.data["reason"] for e in decision_events] == ["start", "fan out", "join"]
    assert result.to_dict()["decisions"] == result.decisions
    # the decider's tokens count in the run's usage
    assert result.usage["total_tokens"] == sum(d["usage"]["total_tokens"] for d in result.decisions) > 0


async def test_decided_inputs_reach_the_nodes() -> None:
    doc = edge_flow(
        [
            echo(
                "greet",
                schema={**OBJ_N, "properties": {"name": {"type": "string"}}, "required": ["name"]},
                value="hello {{input.name}}",
            ),
            echo("raw", requires=("greet",)),
        ]
    )
    decider, providers = with_decider(
        decide("next", [{"node": "greet", "input": {"name": "Ada"}}]),
        decide("next", [{"nodeKey": "raw", "input": [1, 2]}]),  # the seed's spelling `nodeKey` is accepted
    )
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    assert result.nodes["greet"].output == "hello Ada"
    assert result.nodes["raw"].output == [1, 2]  # ctx.input is the decided input
    ready = seen(decider, 0)["ready"][0]
    assert ready["input_schema"]["required"] == ["name"]
    fmt = decider.requests[0].response_format
    assert fmt["type"] == "json_schema" and fmt["schema"]["properties"]["skips"]["items"]["enum"] == ["greet"]
    assert decider.requests[0].model == "decider-1"


async def test_invalid_typed_input_gets_one_corrective_reask() -> None:
    doc = edge_flow([echo("a", schema=OBJ_N)])
    decider, providers = with_decider(
        decide("next", [{"node": "a", "input": {"n": "three"}}]),
        decide("next", [{"node": "a", "input": {"n": 3}}]),
    )
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    assert result.nodes["a"].output == {"n": 3}
    retry = decider.requests[1].messages
    assert [m.role for m in retry] == ["system", "user", "assistant", "user"]
    assert "input/n: 'three' is not of type 'integer'" in retry[3].content
    (record,) = result.decisions
    assert record["rejected"][0]["problems"] == [
        "next[0] (node 'a'): input/n: 'three' is not of type 'integer'"
    ]
    assert record["next"] == [{"node": "a", "input": {"n": 3}}]


async def test_invalid_typed_input_twice_fails_the_run() -> None:
    doc = edge_flow([echo("a", schema=OBJ_N)])
    _, providers = with_decider(
        decide("next", [{"node": "a", "input": {"n": "x"}}]), decide("next", [{"node": "a", "input": {}}])
    )
    result = await plait.run(doc, providers=providers)
    assert result.status == "failed"
    assert "invalid decision at step 1, also after one corrective re-ask" in result.error
    assert "input/(root): 'n' is a required property" in result.error
    assert "a" not in CALLS and result.decisions == []


# ------------------------------------------------------------------ malformed decisions
async def test_malformed_decision_gets_one_reask_then_fails_the_run() -> None:
    doc = edge_flow([echo("a")])
    decider, providers = with_decider("Sure! I would run a.", {"json": {"mode": "jump", "next": ["a"]}})
    result = await plait.run(doc, providers=providers)
    assert result.status == "failed"
    assert len(decider.requests) == 2
    assert "the reply is not JSON" in decider.requests[1].messages[3].content
    assert "mode: must be one of next, parallel, stop (got 'jump')" in result.error
    assert "a" not in CALLS
    assert types(result)[-3:] == [("decision_rejected", None), ("error", None), ("run_finished", None)]
    (rejected,) = [e for e in result.events if e.type == "decision_rejected"]
    assert rejected.data["step"] == 1
    assert [r["reply"] for r in rejected.data["rejected"]] == [
        "Sure! I would run a.",
        '{"mode": "jump", "next": ["a"]}',
    ]
    assert "the reply is not JSON" in rejected.data["rejected"][0]["problems"][0]


async def test_malformed_then_valid_decision_runs() -> None:
    doc = edge_flow([echo("a", value="A")])
    _, providers = with_decider(
        {"content": '```json\n{"mode": "next", "next": [{"node": "nope"}]}\n```'},
        {"content": '```json\n{"mode": "next", "next": [{"node": "a"}], "reason": "fixed"}\n```'},
    )
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    assert result.decisions[0]["rejected"][0]["problems"] == [
        "next[0]: node 'nope' is not a node of this flow (ready: a)"
    ]


PARSE_CASES = [
    ("[1]", "the reply must be a JSON object, not list"),
    ('{"mode": "next", "next": [{"node": "b"}]}', "next[0]: node 'b' is not ready now (ready: a, n)"),
    ('{"mode": "next", "next": "a"}', "next: must be a list of {node, input} objects"),
    ('{"mode": "next", "next": [{"node": "a"}, "a"]}', "next[1]: node 'a' is listed twice"),
    (
        '{"mode": "next", "next": [{"node": "a"}], "skips": ["a"]}',
        "skips[0]: node 'a' is both in next and in skips",
    ),
    ('{"mode": "stop", "next": [{"node": "a"}]}', "next: must be empty when mode is stop"),
    ('{"mode": "next", "next": [{"node": 3}]}', "next[0]: the node key must be a non-empty string"),
    ('{"mode": "next", "next": [{"node": "a", "human": "hi"}]}', "human must be an object"),
    ('{"mode": "next", "next": [{"node": "n"}]}', "next[0] (node 'n'): input is missing"),
]


@pytest.mark.parametrize(("reply", "problem"), PARSE_CASES)
def test_parse_decision_names_each_problem(reply: str, problem: str) -> None:
    doc = edge_flow([echo("a"), echo("b", requires=("a",)), echo("n", schema=OBJ_N)])
    plan = plait.load_flow(doc).plan
    ready = [plan.by_key["a"], plan.by_key["n"]]
    with pytest.raises(DecisionError) as info:
        parse_decision(reply, plan, ready)
    assert any(problem in p for p in info.value.problems), info.value.problems


def test_parse_decision_normalises() -> None:
    plan = plait.load_flow(edge_flow([echo("Alpha"), echo("b")])).plan
    ready = [0, 1]
    got = parse_decision(
        '{"mode": "Parallel", "next": ["alpha"], "skips": ["B"], "reason": null}', plan, ready
    )
    assert got == {"mode": "parallel", "next": [{"node": "Alpha"}], "skips": ["b"], "reason": ""}
    # an empty decision is the seed's "stop/empty"
    assert parse_decision('{"mode": "next"}', plan, ready)["mode"] == "stop"
    # a schema that accepts null does not need an input
    nullable = plait.load_flow(edge_flow([echo("a", schema={"type": ["object", "null"]})])).plan
    assert parse_decision('{"mode": "next", "next": ["a"]}', nullable, [0])["next"] == [{"node": "a"}]


# ------------------------------------------------------------------ skip, stop, parallel
async def test_skips_mark_nodes_skipped_and_dependants_go_on() -> None:
    doc = edge_flow([echo("a", value=1), echo("b", requires=("a",)), echo("c", requires=("b",), value="C")])
    decider, providers = with_decider(
        decide("next", [{"node": "a"}]),
        decide("next", [], skips=["b"], reason="not needed"),
        decide("next", [{"node": "c"}]),
    )
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    assert {k: n.status for k, n in result.nodes.items()} == {"a": "ok", "b": "skipped", "c": "ok"}
    assert "b" not in CALLS
    assert ("node_skipped", "b") in types(result)
    skipped = next(e for e in result.events if e.type == "node_skipped")
    assert skipped.data == {"reason": "decider"}
    # a skipped prerequisite counts as finished: c became ready, and the decider saw the skip
    assert ready_keys(decider, 2) == ["c"] and seen(decider, 2)["context"]["skipped"] == ["b"]
    assert result.decisions[1]["skips"] == ["b"] and result.decisions[1]["reason"] == "not needed"


async def test_stop_ends_the_run_and_skips_what_did_not_run() -> None:
    doc = edge_flow([echo("a", value=1), echo("b", requires=("a",)), echo("c")])
    decider, providers = with_decider(decide("next", [{"node": "a"}]), decide("stop", reason="enough"))
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    assert {k: n.status for k, n in result.nodes.items()} == {"a": "ok", "b": "skipped", "c": "skipped"}
    assert ready_keys(decider, 0) == ["a", "c"] and ready_keys(decider, 1) == ["b", "c"]
    assert result.decisions[-1]["mode"] == "stop"
    stops = [e.data for e in result.events if e.type == "node_skipped"]
    assert stops == [{"reason": "stop"}, {"reason": "stop"}]


async def test_empty_decision_completes_the_run() -> None:
    doc = edge_flow([echo("a")])
    _, providers = with_decider(decide("next", reason="nothing to do"))
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed" and result.decisions[0]["mode"] == "stop"
    assert result.nodes["a"].status == "skipped"


async def test_parallel_next_runs_nodes_concurrently() -> None:
    doc = edge_flow([echo("b", sleep_s=0.05, value="B"), echo("c", sleep_s=0.05, value="C")])
    _, providers = with_decider(decide("parallel", [{"node": "b"}, {"node": "c"}]))
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    order = [t for t in types(result) if t[0] in ("node_started", "node_finished")]
    # both started before either finished
    assert order[:2] == [("node_started", "b"), ("node_started", "c")]


async def test_next_with_several_nodes_runs_them_in_order() -> None:
    doc = edge_flow([echo("b", sleep_s=0.02, value="B"), echo("c", value="C")])
    _, providers = with_decider(decide("next", [{"node": "b"}, {"node": "c"}]))
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    order = [t for t in types(result) if t[0] in ("node_started", "node_finished")]
    assert order == [
        ("node_started", "b"),
        ("node_finished", "b"),
        ("node_started", "c"),
        ("node_finished", "c"),
    ]


# ------------------------------------------------------------------ human nodes, restore
HUMAN = {
    "id": "review",
    "type": "human",
    "requires": ["draft"],
    "input_schema": {"type": "object", "properties": {"comment": {"type": "string"}}},
    "config": {"message": "Review please", "fields": [{"name": "comment", "type": "text"}]},
}


async def test_human_node_pauses_and_deciding_goes_on_after_resume() -> None:
    doc = edge_flow([echo("draft", value="text v1"), HUMAN, echo("publish", requires=("review",))])
    decider, providers = with_decider(
        decide("next", [{"node": "draft"}]),
        decide(
            "next",
            [
                {
                    "node": "review",
                    "input": {"comment": "looks fine"},
                    "human": {"message": "Is 'text v1' OK?"},
                }
            ],
        ),
        decide("next", [{"node": "publish", "input": {"text": "text v1", "ok": True}}]),
    )
    cp = InMemoryCheckpointer()
    first = await plait.run(doc, checkpointer=cp, providers=providers)
    assert first.status == "waiting", first.error
    task = first.interrupt
    assert task is not None and task["node_id"] == "review"
    assert task["payload"]["message"] == "Is 'text v1' OK?"  # worded by the decider
    assert task["payload"]["prefill"] == {"comment": "looks fine"}  # prefilled from the decided input
    assert first.nodes["review"].status == "waiting" and "publish" not in first.nodes
    assert len(decider.requests) == 2 and len(cp.runs[first.run_id].decisions) == 2

    second = await plait.resume(
        doc,
        first.run_id,
        {"action": "submit", "values": {"comment": "ship it"}},
        checkpointer=cp,
        providers=providers,
    )
    assert second.status == "completed", second.error
    assert second.nodes["review"].output == {"comment": "ship it", "action": "submit"}
    assert second.nodes["publish"].output == {"text": "text v1", "ok": True}
    assert seen(decider, 2)["last"] == {"key": "review", "output": {"comment": "ship it", "action": "submit"}}
    assert ready_keys(decider, 2) == ["publish"]
    assert [d["step"] for d in second.decisions] == [1, 2, 3]  # restored ones, then the new one
    assert len(decider.requests) == 3 and decider.remaining == 0


async def test_the_decider_adds_form_fields_to_a_human_task() -> None:
    """Seed 002: `human: {message, fields}`; the form is checked as it was shown."""
    doc = edge_flow([echo("draft", value="text v1"), HUMAN, echo("publish", requires=("review",))])
    hints = {
        "message": "Refund 120 EUR?",
        "fields": [
            {"name": "comment", "type": "text", "label": "Why", "required": False},
            {"name": "amount", "type": "number", "default": 120},
        ],
    }
    _, providers = with_decider(
        decide("next", [{"node": "draft"}]),
        {
            "json": {
                "mode": "next",
                "next": [{"node": "review", "input": {}, "human": {"fields": [{"type": "x"}]}}],
            }
        },
        {"json": {"mode": "next", "next": [{"node": "review", "input": {}, "human": hints}]}},
        decide("stop"),
    )
    cp = InMemoryCheckpointer()
    first = await plait.run(doc, checkpointer=cp, providers=providers)
    assert first.status == "waiting", first.error
    (record,) = [d for d in first.decisions if d["step"] == 2]
    assert record["rejected"][0]["problems"] == [
        "next[0] (node 'review'): human.fields[0].name: Field required",
    ]
    payload = first.interrupt["payload"]
    assert payload["message"] == "Refund 120 EUR?"
    assert [(f["name"], f["type"], f["label"], f["required"]) for f in payload["fields"]] == [
        ("comment", "text", "Why", False),  # the configured field, as the decider worded it
        ("amount", "number", None, True),  # added by the decider
    ]
    assert payload["prefill"] == {"amount": 120}

    with pytest.raises(Exception, match="amount: required"):
        await plait.resume(doc, first.run_id, {"values": {}}, checkpointer=cp, providers=providers)
    done = await plait.resume(doc, first.run_id, {"amount": "95.5"}, checkpointer=cp, providers=providers)
    assert done.status == "completed", done.error
    assert done.nodes["review"].output == {"amount": 95.5, "action": "submit"}


def test_human_hints_are_checked_like_the_human_node_config() -> None:
    doc = edge_flow([echo("draft", value="text v1"), HUMAN])
    plan = plait.load_flow(doc).plan
    ready = [plan.by_key["review"]]
    bad = [
        ({"message": 3}, "human.message must be a string"),
        ({"fields": {"name": "x"}}, "human.fields must be a list of form fields"),
        ({"fields": [{"name": "bad name"}]}, "human.fields[0].name: String should match pattern"),
        ({"fields": [{"name": "a"}, {"name": "a"}]}, "human.fields: field names must be unique"),
        ("ok?", "human must be an object"),
    ]
    for hints, problem in bad:
        reply = json.dumps({"mode": "next", "next": [{"node": "review", "input": {}, "human": hints}]})
        with pytest.raises(DecisionError) as info:
            parse_decision(reply, plan, ready)
        assert any(problem in p for p in info.value.problems), (hints, info.value.problems)


async def test_non_blocking_human_lets_other_nodes_run() -> None:
    review = {**HUMAN, "requires": [], "config": {**HUMAN["config"], "blocking": False}}
    doc = edge_flow([echo("draft", value="D"), review, echo("other", value="O")])
    decider, providers = with_decider(
        decide("next", [{"node": "review", "input": {}}]),
        decide("next", [{"node": "other"}], skips=["draft"]),
    )
    cp = InMemoryCheckpointer()
    result = await plait.run(doc, checkpointer=cp, providers=providers)
    assert result.status == "waiting"
    assert result.nodes["other"].status == "ok" and result.nodes["review"].status == "waiting"
    assert seen(decider, 1)["context"]["waiting"] == ["review"]
    done = await plait.resume(doc, result.run_id, {"comment": "c"}, checkpointer=cp, providers=providers)
    assert done.status == "completed" and done.nodes["review"].status == "ok"
    assert len(decider.requests) == 2  # nothing was ready after the answer


async def test_crash_after_a_decision_reruns_the_chosen_node_with_its_input() -> None:
    doc = edge_flow([echo("a", value="A"), echo("b", requires=("a",), schema=OBJ_N)])
    decider, providers = with_decider(
        decide("next", [{"node": "a"}]), decide("next", [{"node": "b", "input": {"n": 7}}])
    )
    cp = InMemoryCheckpointer()
    done = await plait.run(doc, checkpointer=cp, providers=providers)
    assert done.status == "completed"
    # The process died after decision 2 was stored but before b finished: only a's delta survived.
    crashed = cp.truncated(done.run_id, 2)  # a's `running` and `ok` deltas
    assert [d["step"] for d in crashed.runs[done.run_id].decisions] == [1, 2]
    CALLS.clear()
    fresh, fresh_providers = with_decider()  # the decider must not be asked again
    again = await plait.resume(doc, done.run_id, checkpointer=crashed, providers=fresh_providers)
    assert again.status == "completed", again.error
    assert CALLS == {"b": 1} and again.nodes["b"].output == {"n": 7}
    assert fresh.requests == [] and [d["step"] for d in again.decisions] == [1, 2]


async def test_crash_before_a_decision_asks_again() -> None:
    doc = edge_flow([echo("a", value="A"), echo("b", requires=("a",))])
    _, providers = with_decider(decide("next", [{"node": "a"}]), decide("next", [{"node": "b", "input": 1}]))
    cp = InMemoryCheckpointer()
    done = await plait.run(doc, checkpointer=cp, providers=providers)
    crashed = cp.truncated(done.run_id, 0)  # decision 1 stored, a never finished
    assert [d["step"] for d in crashed.runs[done.run_id].decisions] == [1]
    fresh, fresh_providers = with_decider(decide("next", [{"node": "b", "input": 2}]))
    again = await plait.resume(doc, done.run_id, checkpointer=crashed, providers=fresh_providers)
    assert again.status == "completed", again.error
    assert ready_keys(fresh, 0) == ["b"] and again.nodes["b"].output == 2
    assert [d["step"] for d in again.decisions] == [1, 2]


# ------------------------------------------------------------------ failures
async def test_node_error_fails_the_run() -> None:
    doc = edge_flow([echo("a", fail_times=1), echo("b", requires=("a",))])
    _, providers = with_decider(decide("next", [{"node": "a"}]))
    result = await plait.run(doc, providers=providers)
    assert result.status == "failed" and "node 'a' failed: scripted failure 1" in result.error


async def test_provider_error_fails_the_run_with_its_message() -> None:
    doc = edge_flow([echo("a")])
    _, providers = with_decider({"error": "auth"})
    result = await plait.run(doc, providers=providers)
    assert result.status == "failed"
    assert (
        result.error == "edge-LLM decider (scripted/decider-1) failed at step 1: Incorrect API key provided"
    )


async def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    doc = edge_flow([echo("a")])
    doc["settings"]["decider"] = {"provider": "openai", "model": "gpt-4o-mini"}
    result = await plait.run(doc)
    assert result.status == "failed" and "OPENAI_API_KEY" in result.error


# ------------------------------------------------------------------ the flow document
async def test_decider_script_in_the_document() -> None:
    script = [decide("next", [{"node": "a", "input": {"n": 1}}])]
    doc = edge_flow([echo("a", schema=OBJ_N)], script=script)
    result = await plait.run(doc)  # no providers=: the document's script is the decider
    assert result.status == "completed", result.error
    assert result.nodes["a"].output == {"n": 1}


def test_edge_flow_validates_and_requires_a_decider() -> None:
    doc = edge_flow([echo("a", schema=OBJ_N, value="{{input.n}}")])
    assert plait.load_flow(doc).doc.settings.decider.model == "decider-1"
    del doc["settings"]["decider"]
    with pytest.raises(FlowValidationError) as info:
        plait.load_flow(doc)
    (problem,) = info.value.problems
    assert problem.field == "settings.decider" and "decider" in problem.message and problem.hint


@pytest.mark.parametrize(
    ("decider", "field", "text"),
    [
        ({"provider": "openai"}, "settings.decider", "provider 'openai' needs a model"),
        (
            {"provider": "scripted", "model": "m", "temperature": 5},
            "settings.decider.temperature",
            "less than",
        ),
        ({"provider": "scripted", "model": "m", "modle": "x"}, "settings.decider.modle", "Extra inputs"),
        # Issue 14: a script next to a real provider is ignored; an unknown provider is refused.
        ({"provider": "gpt4", "model": "m"}, "settings.decider.provider", "did you mean provider 'openai'"),
    ],
)
def test_bad_decider_settings_are_located(decider: dict, field: str, text: str) -> None:
    doc = edge_flow([echo("a")])
    doc["settings"]["decider"] = decider
    with pytest.raises(FlowValidationError) as info:
        plait.load_flow(doc)
    assert any(p.field == field and text in p.message for p in info.value.problems), info.value.problems


def test_input_reference_is_for_edge_flows_only() -> None:
    doc = flow([echo("a", value="{{input.n}}")])
    with pytest.raises(FlowValidationError) as info:
        plait.load_flow(doc)
    assert info.value.problems[0].code == "dangling_reference"


async def test_cancel_interrupts_a_thinking_decider() -> None:
    doc = edge_flow([echo("a")])
    decider = ScriptedProvider([decide("next", [{"node": "a"}])], delay_s=30)
    providers = ProviderRegistry(providers={"scripted": decider})
    task = asyncio.create_task(plait.run(doc, run_id="edge-cancel", providers=providers))
    while not decider.requests:
        await asyncio.sleep(0.01)
    assert plait.cancel("edge-cancel")
    result = await task
    assert result.status == "cancelled"
    # the reply never arrived: no decision was applied and nothing ran
    assert result.decisions == [] and "a" not in CALLS
    assert "decision" not in [e.type for e in result.events]


async def test_run_timeout_covers_the_decider() -> None:
    doc = edge_flow([echo("a")])
    doc["settings"]["timeout_s"] = 0.2
    decider = ScriptedProvider([decide("next", [{"node": "a"}])], delay_s=30)
    result = await plait.run(doc, providers=ProviderRegistry(providers={"scripted": decider}))
    assert result.status == "failed" and "exceeded its timeout of 0.2s" in result.error
    assert result.decisions == []


async def test_decider_falls_back_to_the_next_model() -> None:
    doc = edge_flow([echo("a", value="A")], model="gone", fallback_models=["decider-2"])
    decider, providers = with_decider(
        {"error": "model_not_found", "model": "gone"},
        {**decide("next", [{"node": "a"}]), "model": "decider-2"},
    )
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    assert [r.model for r in decider.requests] == ["gone", "decider-2"]


async def test_without_a_decided_input_a_node_gets_what_its_edges_delivered() -> None:
    doc = edge_flow(
        [echo("a", value="A"), echo("b", value="got {{input}}"), echo("c")], [("a", "b"), ("a", "c")]
    )
    _, providers = with_decider(
        decide("next", [{"node": "a"}]), decide("parallel", [{"node": "b"}, {"node": "c", "input": "mine"}])
    )
    result = await plait.run(doc, providers=providers)
    assert result.status == "completed", result.error
    assert result.nodes["b"].output == "got A" and result.nodes["c"].output == "mine"


async def test_shipped_example_runs_with_its_scripted_decider(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    flow = plait.load_flow(Path(__file__).resolve().parents[2] / "examples" / "edge_support.yaml")
    cp = InMemoryCheckpointer()
    first = await plait.run(flow, {"ticket": "I want my money back"}, checkpointer=cp)
    assert first.status == "waiting", first.error
    assert first.interrupt["payload"]["message"] == "A customer asks for a refund. Approve it?"
    assert first.nodes["auto_reply"].status == "skipped"
    done = await plait.resume(flow, first.run_id, {"approve": "yes", "note": "Sorry!"}, checkpointer=cp)
    assert done.status == "completed", done.error
    assert done.outputs == {
        "triage": {"priority": "high", "category": "refund"},
        "reply": "Your refund has been approved. Sorry!",
    }
    assert [d["reason"] for d in done.decisions] == [
        "every ticket is triaged first",
        "refunds need a person",
        "the reviewer decided",
    ]


class _OpenAIServer(ThreadingHTTPServer):
    """A local server speaking OpenAI's chat-completions wire format, replying with `replies`."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies
        self.bodies: list[dict[str, Any]] = []
        super().__init__(("127.0.0.1", 0), _OpenAIHandler)


class _OpenAIHandler(BaseHTTPRequestHandler):
    server: _OpenAIServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.bodies.append({"path": self.path, "auth": self.headers.get("authorization"), **body})
        reply = self.server.replies.pop(0)
        data = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(reply)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


async def test_decider_over_an_openai_compatible_server() -> None:
    server = _OpenAIServer(
        [
            {"mode": "next", "next": [{"node": "a", "input": {"n": 2}}], "skips": [], "reason": "go"},
            {"mode": "stop", "next": [], "skips": [], "reason": "done"},
        ]
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        doc = edge_flow([echo("a", schema=OBJ_N), echo("b", requires=("a",))])
        doc["settings"]["decider"] = {"provider": "openai", "model": "gpt-test"}
        env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1", "OPENAI_API_KEY": "sk-test"}
        result = await plait.run(doc, env=env)  # keys by name from the run's stored variables
    finally:
        server.shutdown()
        server.server_close()
    assert result.status == "completed", result.error
    assert result.nodes["a"].output == {"n": 2} and result.nodes["b"].status == "skipped"
    first = server.bodies[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    assert first["model"] == "gpt-test" and first["messages"][0]["role"] == "system"
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["name"] == "decision"
    assert json.loads(first["messages"][1]["content"])["ready"][0]["key"] == "a"
    assert result.decisions[0]["usage"] == {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}


def test_cli_prints_each_decision() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    example = Path(__file__).resolve().parents[2] / "examples" / "edge_support.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "plait.cli.main", "run", str(example), "-i", "ticket=refund [please]"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 3, proc.stderr  # waiting for the reviewer
    shown = proc.stdout + proc.stderr
    assert "◆ decision 1 next triage: every ticket is triaged first" in shown
    assert "◆ decision 2 next review, skip auto_reply: refunds need a person" in shown
    assert "▶ triage output running" in shown
