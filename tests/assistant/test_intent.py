"""Intent classification (spec 1.3): shortcuts, the classifier call, reading untidy replies,
the run rescue and the first progress step."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from plait.assistant import texts
from plait.assistant.intent import (
    INTENT_MAX_TOKENS,
    INTENTS,
    IntentResult,
    asks_to_run,
    classify,
    decide_progress_step,
    parse_intent_reply,
    shortcut,
)
from plait.llm import ChatRequest, ChatResponse, Message, ProviderError, ScriptedProvider, Usage


class FakeCall:
    """A ModelCall over the scripted provider that records each call's messages and kwargs."""

    def __init__(self, script: list[Any], *, delay_s: float = 0.0) -> None:
        self.provider = ScriptedProvider(script)
        self.delay_s = delay_s
        self.calls: list[dict[str, Any]] = []

    async def __call__(
        self,
        messages: list[Message],
        *,
        phase: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_delta: Any = None,
    ) -> ChatResponse:
        self.calls.append(
            {"messages": messages, "phase": phase, "max_tokens": max_tokens, "temperature": temperature}
        )
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        request = ChatRequest(
            model="scripted", messages=messages, max_tokens=max_tokens, temperature=temperature
        )
        return await self.provider.chat(request, on_delta=on_delta)


# ------------------------------------------------------------------------------- shortcuts
def test_a_s42_plan_approval_skips_classifier(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        found = shortcut(texts.PLAN_APPROVAL_INPUT)
    assert found == IntentResult(texts.PLAN_APPROVAL_INPUT, "build_flow", Usage(), "shortcut")
    assert "intent.build_flow.deterministic: plan-approval continuation signal" in caplog.messages


def test_m_t65_plan_approval_with_surrounding_whitespace() -> None:
    found = shortcut(f"  \n{texts.PLAN_APPROVAL_INPUT}\n ")
    assert found is not None
    assert found.intent == "build_flow"
    assert found.translation == texts.PLAN_APPROVAL_INPUT
    assert found.usage.total_tokens == 0


def test_edit_continuation_shortcut(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        found = shortcut(texts.EDIT_CONTINUATION_INPUT + " ")
    assert found is not None
    assert (found.intent, found.source) == ("build_flow", "shortcut")
    assert "intent.build_flow.deterministic: edit continuation signal" in caplog.messages


def test_m_t66_prefix_does_not_shortcut() -> None:
    assert shortcut(texts.PLAN_APPROVAL_INPUT + " Also add a memory node.") is None
    assert shortcut(texts.EDIT_CONTINUATION_INPUT + " and run it") is None
    assert shortcut(texts.PLAN_APPROVAL_INPUT.lower()) is None
    assert shortcut("build me a chatbot") is None


async def test_a_s42_shortcut_makes_no_model_call() -> None:
    call = FakeCall([])
    found = shortcut(texts.PLAN_APPROVAL_INPUT) or await classify(texts.PLAN_APPROVAL_INPUT, call)
    assert found.source == "shortcut"
    assert call.calls == []


# ------------------------------------------------------------------------------- classify
async def test_a_s41_classifier_uses_300_max_tokens() -> None:
    call = FakeCall([{"json": {"translation": "hi", "intent": "question"}}])
    await classify("hi", call)
    assert INTENT_MAX_TOKENS == 300
    assert len(call.calls) == 1
    assert call.calls[0]["max_tokens"] == 300
    assert call.calls[0]["phase"] == "intent"
    assert call.calls[0]["temperature"] == 0
    messages = call.calls[0]["messages"]
    assert messages[0].role == "system"
    assert messages[-1] == Message("user", "hi")


async def test_a_s9_portuguese_component_request() -> None:
    reply = {"translation": "Create a component that adds two numbers", "intent": "generate_component"}
    call = FakeCall([{"json": reply, "usage": {"input_tokens": 120, "output_tokens": 18}}])
    found = await classify("Crie um componente que soma dois numeros", call)
    assert found == IntentResult(
        "Create a component that adds two numbers", "generate_component", Usage(120, 18), "model"
    )


async def test_a_s12_off_topic() -> None:
    call = FakeCall([{"json": {"translation": "how does n8n work?", "intent": "off_topic"}}])
    found = await classify("how does n8n work?", call)
    assert (found.intent, found.source) == ("off_topic", "model")


async def test_a_s7_follow_up_modification_is_a_component() -> None:
    call = FakeCall(['```json\n{"translation": "add error handling", "intent": "generate_component"}\n```'])
    found = await classify("add error handling", call)
    assert found.intent == "generate_component"


async def test_classify_reports_usage_of_the_call() -> None:
    call = FakeCall([{"json": {"translation": "hello", "intent": "question"}}])
    found = await classify("hello", call)
    assert found.usage.input_tokens > 0
    assert found.usage.output_tokens > 0


async def test_timeout_gives_question(caplog: pytest.LogCaptureFixture) -> None:
    call = FakeCall([{"json": {"translation": "x", "intent": "build_flow"}}], delay_s=5)
    with caplog.at_level(logging.WARNING, logger="plait.assistant"):
        found = await classify("build me a flow", call, timeout_s=0.05)
    assert found == IntentResult("build me a flow", "question", Usage(), "timeout")
    assert any("timeout" in m for m in caplog.messages)


async def test_provider_errors_propagate() -> None:
    call = FakeCall([{"error": "auth"}])
    with pytest.raises(ProviderError):
        await classify("hello", call)


async def test_unparseable_reply_gives_question() -> None:
    call = FakeCall(["I am not sure what you mean."])
    found = await classify("zzz", call)
    assert (found.translation, found.intent, found.source) == ("zzz", "question", "fallback")


# ------------------------------------------------------------------------------- the run rescue
async def test_b18_question_asking_to_run_becomes_run_flow() -> None:
    call = FakeCall([{"json": {"translation": "Run the flow", "intent": "question"}}])
    found = await classify("Rode o fluxo", call)
    assert (found.intent, found.translation) == ("run_flow", "Run the flow")


async def test_b18_rescue_only_overrides_question() -> None:
    call = FakeCall([{"json": {"translation": "run it", "intent": "build_flow"}}])
    found = await classify("run it", call)
    assert found.intent == "build_flow"


@pytest.mark.parametrize(
    "text",
    [
        "run it",
        "Run the flow",
        "please execute this flow.",
        "Can you run the current flow?",
        "now test it",
        "ok, run it again",
        "go ahead and run my flow",
        "run it with 'hello world'",
        "Execute it!",
    ],
)
def test_b18_run_orders_are_recognised(text: str) -> None:
    assert asks_to_run(text)


@pytest.mark.parametrize(
    "text",
    [
        "how do I run a flow?",
        "what happens when I run it?",
        "can flows run in parallel?",
        "I want to test my API",
        "run a marathon",
        "build a flow and run it",
        "Why did it fail when I ran the flow?",
        "",
    ],
)
def test_b18_rescue_is_conservative(text: str) -> None:
    assert not asks_to_run(text)


# ------------------------------------------------------------------------------- parsing
def test_parse_plain_json() -> None:
    assert parse_intent_reply('{"translation": "Build a chatbot", "intent": "build_flow"}', "x") == (
        "Build a chatbot",
        "build_flow",
        "model",
    )


def test_b15_parse_markdown_block() -> None:
    reply = 'Sure!\n```json\n{"translation": "Build it", "intent": "build_flow"}\n```\nDone.'
    assert parse_intent_reply(reply, "x") == ("Build it", "build_flow", "model")


def test_b15_parse_markdown_block_without_language() -> None:
    reply = '```\n{"translation": "Write a file", "intent": "manage_files"}\n```'
    assert parse_intent_reply(reply, "x") == ("Write a file", "manage_files", "model")


def test_b15_parse_embedded_object() -> None:
    reply = 'The answer is {"translation": "make a component", "intent": "generate_component"} ok?'
    assert parse_intent_reply(reply, "x") == ("make a component", "generate_component", "model")


def test_b15_parse_embedded_object_after_other_braces() -> None:
    reply = 'Here {not json} and {"a": 1} then {"translation": "t", "intent": "run_flow"}'
    assert parse_intent_reply(reply, "x") == ("t", "run_flow", "model")


def test_b15_parse_keyword_prefers_the_longest() -> None:
    reply = "I think this is component_then_flow (more than build_flow)."
    assert parse_intent_reply(reply, "orig") == ("orig", "component_then_flow", "model")


def test_b15_parse_keyword_in_plain_text() -> None:
    assert parse_intent_reply("intent: off_topic", "orig") == ("orig", "off_topic", "model")


def test_b15_garbage_gives_question() -> None:
    assert parse_intent_reply("no idea", "orig") == ("orig", "question", "fallback")
    assert parse_intent_reply("", "orig") == ("orig", "question", "fallback")
    assert parse_intent_reply(None, "orig") == ("orig", "question", "fallback")
    assert parse_intent_reply("{{{{[[[", "orig") == ("orig", "question", "fallback")


def test_unknown_label_gives_question() -> None:
    reply = '{"translation": "Book a flight", "intent": "travel"}'
    assert parse_intent_reply(reply, "orig") == ("Book a flight", "question", "fallback")


def test_label_is_normalised() -> None:
    assert parse_intent_reply('{"translation": "t", "intent": " Build-Flow "}', "o")[1:] == (
        "build_flow",
        "model",
    )
    assert parse_intent_reply('{"translation": "t", "intent": "intent: run_flow"}', "o")[1] == "run_flow"


def test_missing_or_empty_translation_uses_original() -> None:
    assert parse_intent_reply('{"intent": "build_flow"}', "orig")[0] == "orig"
    assert parse_intent_reply('{"translation": "  ", "intent": "build_flow"}', "orig")[0] == "orig"
    assert parse_intent_reply('{"translation": 42, "intent": "build_flow"}', "orig")[0] == "orig"


def test_non_dict_json_is_tolerated() -> None:
    assert parse_intent_reply('"build_flow"', "o") == ("o", "build_flow", "model")
    assert parse_intent_reply("[1, 2, 3]", "o") == ("o", "question", "fallback")
    assert parse_intent_reply("null", "o") == ("o", "question", "fallback")
    assert parse_intent_reply('[{"translation": "t", "intent": "run_flow"}]', "o") == (
        "t",
        "run_flow",
        "model",
    )


def test_only_the_first_4000_characters_are_read() -> None:
    late = "x" * 5000 + '{"translation": "t", "intent": "build_flow"}'
    assert parse_intent_reply(late, "o") == ("o", "question", "fallback")


def test_parsing_a_pathological_reply_is_fast() -> None:
    started = time.perf_counter()
    parse_intent_reply("{" * 100_000, "o")
    parse_intent_reply('{"a": ' * 2000, "o")
    assert time.perf_counter() - started < 0.5


# ------------------------------------------------------------------------------- progress steps
def test_a_s23_build_and_run_orchestrates() -> None:
    assert decide_progress_step("component_then_flow") == ("orchestrating", "Orchestrating...")
    assert decide_progress_step("run_flow") == ("orchestrating", "Orchestrating...")


def test_b21_progress_steps() -> None:
    assert decide_progress_step("build_flow") == ("generating_flow", "Generating flow...")
    assert decide_progress_step("build_flow", continuation=True) == ("orchestrating", "Orchestrating...")
    assert decide_progress_step("manage_files") == ("generating_document", "Generating document...")
    assert decide_progress_step("generate_component") == ("generating_component", "Generating component...")
    assert decide_progress_step("question") is None
    assert decide_progress_step("off_topic") is None
    assert decide_progress_step("nonsense") is None


def test_every_intent_has_a_decision() -> None:
    assert len(INTENTS) == 7
    for name in INTENTS:
        step = decide_progress_step(name)
        assert step is None or step[0] in {
            "orchestrating",
            "generating_flow",
            "generating_document",
            "generating_component",
        }
