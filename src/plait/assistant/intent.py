"""What a message asks for: one of seven intents, decided before any real work starts.

The route of a turn (spec B17) depends on it: a refusal, a streamed answer, the component
pipeline or the flow-builder agent. Deciding costs one small model call (`classify`), which also
translates the message to English, so any language works. Small models answer untidily, so the
reply is read generously (`parse_intent_reply`: JSON, JSON in a markdown block, JSON inside
prose, a bare intent name) and anything unreadable falls back to `question`, the harmless route.

Two fixed inputs the web panel sends after the user approved something (texts.PLAN_APPROVAL_INPUT,
texts.EDIT_CONTINUATION_INPUT) skip the model entirely (`shortcut`); only an exact match counts,
so a user cannot trigger it by starting a message with the same words.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from plait.assistant import texts
from plait.assistant.ports import ModelCall
from plait.assistant.prompts import intent_messages
from plait.llm.base import Usage

log = logging.getLogger("plait.assistant")

INTENTS = (
    "question",
    "off_topic",
    "generate_component",
    "build_flow",
    "component_then_flow",
    "run_flow",
    "manage_files",
)
INTENT_MAX_TOKENS = 300
INTENT_TIMEOUT_S = 20.0
# Only this much of a reply is read: a rambling model cannot make parsing expensive.
MAX_REPLY_CHARS = 4_000
MAX_EMBEDDED_ATTEMPTS = 64

_MARKDOWN_JSON = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
# Longest first, so "component_then_flow" wins over the "build_flow"-like words it contains.
_KEYWORDS = re.compile(
    r"\b(" + "|".join(sorted(INTENTS, key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
# The post-classifier rescue (spec B18): an English imperative to run the current flow, such as
# "run it", "please execute the flow", "can you test this flow now?". Anchored at the start, so
# "how do I run a flow?" stays a question.
_RUN_FLOW = re.compile(
    r"^\s*(?:(?:please|ok|okay|now|so|and|then|go ahead and|(?:can|could|would|will) you(?: please)?)"
    r"[\s,]+)*"
    r"(?:run|execute|test|try)\s+"
    r"(?:(?:the|this|that|my|our|current)\s+)*"
    r"(?:flow|it|this|that)"
    r"(?:\s+(?:now|again|please|once more|for me))*"
    r"(?:\s+with\s+[^\n?]{1,80})?"
    r"\s*[.!?]*\s*$",
    re.IGNORECASE,
)


@dataclass(slots=True)
class IntentResult:
    """The classifier's answer. `source`: "model" (read from the reply), "shortcut" (a fixed
    continuation input, no model call), "fallback" (unreadable reply or unknown label: question)
    or "timeout" (the model did not answer in time: question)."""

    translation: str
    intent: str
    usage: Usage = field(default_factory=Usage)
    source: str = "model"


def shortcut(text: str) -> IntentResult | None:
    """The intent of a fixed continuation input the panel sends, without asking the model."""
    stripped = text.strip()
    if stripped == texts.PLAN_APPROVAL_INPUT:
        log.info("intent.build_flow.deterministic: plan-approval continuation signal")
        return IntentResult(stripped, "build_flow", Usage(), "shortcut")
    if stripped == texts.EDIT_CONTINUATION_INPUT:
        log.info("intent.build_flow.deterministic: edit continuation signal")
        return IntentResult(stripped, "build_flow", Usage(), "shortcut")
    return None


def _normal_label(label: Any) -> str | None:
    if not isinstance(label, str):
        return None
    return re.sub(r"[\s-]+", "_", label.strip().lower()) or None


def _from_object(obj: dict[str, Any], original: str) -> tuple[str, str, str]:
    translation = obj.get("translation")
    if not isinstance(translation, str) or not translation.strip():
        translation = original
    label = _normal_label(obj.get("intent"))
    if label in INTENTS:
        return translation.strip(), label, "model"
    raw = obj.get("intent")
    named = _KEYWORDS.findall(raw) if isinstance(raw, str) else []  # e.g. "intent: build_flow"
    if named:
        return translation.strip(), max((n.lower() for n in named), key=len), "model"
    return translation.strip(), "question", "fallback"


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "intent" in value else None


def _embedded_object(text: str) -> dict[str, Any] | None:
    """The first JSON object with an `intent` key found inside other text."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    attempts = 0
    while start != -1 and attempts < MAX_EMBEDDED_ATTEMPTS:
        attempts += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict) and "intent" in value:
            return value
        start = text.find("{", start + 1)
    return None


def parse_intent_reply(reply: str | None, original: str) -> tuple[str, str, str]:
    """(translation, intent, source) from the classifier's reply, read as generously as it can
    be: JSON, JSON in a markdown block, a JSON object inside prose, then an intent name in plain
    text. Anything else is ("original", "question", "fallback")."""
    text = (reply or "")[:MAX_REPLY_CHARS].strip()
    if not text:
        return original, "question", "fallback"
    obj = _loads_object(text)
    if obj is None:
        for block in _MARKDOWN_JSON.findall(text):
            obj = _loads_object(block.strip())
            if obj is not None:
                break
    if obj is None:
        obj = _embedded_object(text)
    if obj is not None:
        return _from_object(obj, original)
    found = _KEYWORDS.findall(text)
    if found:
        return original, max((f.lower() for f in found), key=len), "model"
    return original, "question", "fallback"


def asks_to_run(text: str) -> bool:
    """True when (English) `text` is plainly an order to run the current flow."""
    return len(text) <= 200 and _RUN_FLOW.match(text) is not None


async def classify(text: str, call: ModelCall, *, timeout_s: float = INTENT_TIMEOUT_S) -> IntentResult:
    """Translate and classify `text` with one model call. A timeout gives `question`; provider
    errors propagate. A `question` whose translation plainly orders a run becomes `run_flow`."""
    try:
        reply = await asyncio.wait_for(
            call(intent_messages(text), phase="intent", max_tokens=INTENT_MAX_TOKENS, temperature=0),
            timeout_s,
        )
    except TimeoutError:
        log.warning("assistant.intent.timeout timeout_s=%s: answering as a question", timeout_s)
        result = IntentResult(text, "question", Usage(), "timeout")
    else:
        translation, label, source = parse_intent_reply(reply.content, text)
        if source == "fallback":
            log.warning(
                "assistant.intent.unparsed reply_length=%d: answering as a question", len(reply.content or "")
            )
        result = IntentResult(translation, label, reply.usage, source)
    if result.intent == "question" and asks_to_run(result.translation):
        log.info("assistant.intent.run_flow_rescue: the message asks to run the flow")
        result.intent = "run_flow"
    return result


_STEPS: dict[str, tuple[str, str]] = {
    "component_then_flow": ("orchestrating", "Orchestrating..."),
    "run_flow": ("orchestrating", "Orchestrating..."),
    "build_flow": ("generating_flow", "Generating flow..."),
    "manage_files": ("generating_document", "Generating document..."),
    "generate_component": ("generating_component", "Generating component..."),
}


def decide_progress_step(intent: str, *, continuation: bool = False) -> tuple[str, str] | None:
    """The first progress step (name, label) shown for an intent (spec B21); None for the intents
    that answer in text (question, off_topic). A continuation (an approved plan or applied edits)
    goes on with the work in progress, so it orchestrates instead of generating a new flow."""
    if intent == "build_flow" and continuation:
        return _STEPS["run_flow"]
    return _STEPS.get(intent)
