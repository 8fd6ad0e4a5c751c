"""Component generation (plait.assistant.codegen): a scripted model, the real sandbox validation."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from plait.assistant import codegen
from plait.assistant.codegen import (
    COMPONENT_SYSTEM_PROMPT,
    ComponentOutcome,
    component_messages,
    extract_code,
    generate_component,
    retry_message,
)
from plait.assistant.events import AssistantEvent, Progress
from plait.assistant.memory import Turn
from plait.llm import ChatRequest, ChatResponse, Message, ProviderError, ScriptedProvider
from plait.sandbox import SandboxPool
from plait.sandbox.components import validate_component

GOOD = """\
from plait.sdk import Component, Input, Output


class ReverseText(Component):
    display_name = "Reverse text"
    description = "reverse_text: reverses a text."
    inputs = [Input("text", "string", "The text to reverse")]
    outputs = [Output("reversed_text", "string", "The text, last character first")]

    def run(self, text):
        return {"reversed_text": text[::-1]}
"""
SYNTAX_ERROR = GOOD.replace("def run(self, text):", "def run(self, text)")
RESERVED = GOOD.replace('Output("reversed_text"', 'Output("component_as_tool"')
BAD_IMPORT = "import nonexistent_module_xyz\n" + GOOD


def fenced(code: str, before: str = "Here is the component:", after: str = "It reverses text.") -> str:
    return f"{before}\n\n```python\n{code}```\n\n{after}"


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    p = SandboxPool(size=1).start()
    yield p
    p.close()


@pytest.fixture
def validate(pool: SandboxPool) -> Any:
    return functools.partial(validate_component, pool=pool)


class Model:
    """A ModelCall over the scripted provider, recording the messages of each call."""

    def __init__(self, script: list[Any]) -> None:
        self.provider = ScriptedProvider(script)
        self.calls: list[list[Message]] = []
        self.phases: list[str] = []

    async def __call__(
        self,
        messages: list[Message],
        *,
        phase: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_delta: Any = None,
    ) -> ChatResponse:
        self.calls.append(list(messages))
        self.phases.append(phase)
        return await self.provider.chat(ChatRequest(model="scripted", messages=messages))


class Events:
    def __init__(self) -> None:
        self.items: list[AssistantEvent] = []

    async def __call__(self, event: AssistantEvent) -> None:
        self.items.append(event)

    @property
    def progress(self) -> list[Progress]:
        return [e for e in self.items if isinstance(e, Progress)]

    def steps(self) -> list[tuple[str, int, int]]:
        return [(p.step, p.attempt, p.max_attempts) for p in self.progress]


# ---------------------------------------------------------------------------- extract_code
def test_extract_code_takes_the_largest_python_block_that_defines_a_class() -> None:
    text = (
        "Use it like this:\n```python\nresult = ReverseText().run(text='ab')\n```\n"
        f"The component:\n```py\n{GOOD}```\nand a shell line:\n```bash\nls\n```\n"
    )
    assert extract_code(text) == GOOD
    small = "```python\nclass A(Component):\n    pass\n```"
    assert extract_code(small + "\n\n" + fenced(GOOD)) == GOOD


def test_extract_code_bare_fence_unclosed_fence_and_raw_code() -> None:
    assert extract_code(f"```\n{GOOD}```") == GOOD
    assert extract_code(f"```python\n{GOOD}") == GOOD  # the reply was cut off before the closing fence
    assert extract_code(GOOD) == GOOD  # no fence, but the whole reply is a component
    assert extract_code("\n\n" + GOOD + "\n\n") == GOOD


def test_extract_code_finds_nothing_in_words_or_other_languages() -> None:
    assert extract_code(None) is None
    assert extract_code("") is None
    assert extract_code("A component is a Python class that plait runs in a sandbox.") is None
    assert extract_code('```json\n{"class": 1}\n```') is None
    assert extract_code("```python\nprint('no class here')\n```") is None
    assert extract_code("class Foo:\n    pass\n") is None  # parses, but nothing inherits Component
    assert extract_code("class is a keyword; this is prose (not code") is None


# ------------------------------------------------------------------------ prompt and messages
def test_the_system_prompt_teaches_plaits_sdk() -> None:
    prompt = COMPONENT_SYSTEM_PROMPT
    assert "from plait.sdk import Component, Input, Output" in prompt
    for word in ("display_name", "description", "inputs", "outputs", "def run(self", "```python"):
        assert word in prompt
    for type_name in ("string", "number", "integer", "boolean", "object", "array", "any"):
        assert type_name in prompt
    assert "component_as_tool" in prompt and "to_toolkit" in prompt
    assert "os.environ" in prompt and "open()" in prompt
    assert "verb_noun" in prompt
    assert "langflow" not in prompt.lower() and "lfx" not in prompt.lower()


def test_component_messages_replay_the_history_before_the_request() -> None:
    history = [Turn("make a reverser", fenced(GOOD)), Turn("thanks", "You're welcome.")]
    messages = component_messages("add error handling", history=history)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[0].content == COMPONENT_SYSTEM_PROMPT
    assert messages[1].content == "make a reverser" and GOOD in (messages[2].content or "")
    assert messages[-1].content == "add error handling"
    assert [m.role for m in component_messages("x")] == ["system", "user"]


def test_retry_message_carries_the_error_and_the_code() -> None:
    text = retry_message("line 3: SyntaxError: expected ':'", SYNTAX_ERROR)
    assert "line 3: SyntaxError: expected ':'" in text
    assert SYNTAX_ERROR.rstrip() in text
    assert "```python" in text
    several = retry_message("first (and 1 more problem)", GOOD, ["line 1: first", "line 2: second"])
    assert "line 1: first" in several and "line 2: second" in several


def test_the_default_validation_is_the_sandboxs() -> None:
    default = inspect.signature(generate_component).parameters["validate"].default
    assert default is validate_component
    assert inspect.signature(generate_component).parameters["max_attempts"].default == 3


# --------------------------------------------------------------------------------- pipeline
async def test_valid_on_the_first_attempt(validate: Any, caplog: pytest.LogCaptureFixture) -> None:
    model, events = Model([fenced(GOOD)]), Events()
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        outcome = await generate_component("a component that reverses text", model, events, validate=validate)
    assert isinstance(outcome, ComponentOutcome)
    assert outcome.validated and outcome.class_name == "ReverseText" and outcome.code == GOOD
    assert outcome.attempts == 1 and outcome.error is None
    assert outcome.text == fenced(GOOD)
    assert outcome.validation is not None and outcome.validation.valid
    assert [o["name"] for o in outcome.validation.outputs] == ["reversed_text"]
    assert events.steps() == [
        ("generating", 1, 3),
        ("extracting_code", 1, 3),
        ("validating", 1, 3),
        ("validated", 1, 3),
    ]
    assert events.progress[0].message == "Generating component..."
    done = events.progress[-1]
    assert done.class_name == "ReverseText" and done.component_code == GOOD
    assert model.phases == ["main"]
    assert [m.role for m in model.calls[0]] == ["system", "user"]
    assert model.calls[0][-1].content == "a component that reverses text"
    logs = [r.getMessage() for r in caplog.records if r.name == "plait.assistant"]
    assert "assistant.generation.attempt attempt=1 max_retries=3" in logs
    assert "assistant.validation.success class_name=ReverseText attempts=1" in logs


async def test_broken_then_valid_retries_with_the_error_and_the_code(
    validate: Any, caplog: pytest.LogCaptureFixture
) -> None:
    model, events = Model([fenced(SYNTAX_ERROR), fenced(GOOD)]), Events()
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        outcome = await generate_component("reverse text", model, events, validate=validate)
    assert outcome.validated and outcome.attempts == 2 and outcome.class_name == "ReverseText"
    assert events.steps() == [
        ("generating", 1, 3),
        ("extracting_code", 1, 3),
        ("validating", 1, 3),
        ("validation_failed", 1, 3),
        ("retrying", 2, 3),
        ("generating", 2, 3),
        ("extracting_code", 2, 3),
        ("validating", 2, 3),
        ("validated", 2, 3),
    ]
    failed = events.progress[3]
    assert failed.error is not None and "SyntaxError" in failed.error and "\n" not in failed.error
    assert failed.class_name == "ReverseText" and failed.component_code == SYNTAX_ERROR
    # The second call holds the first conversation, the broken reply, then the retry prompt.
    second = model.calls[1]
    assert [m.role for m in second] == ["system", "user", "assistant", "user"]
    assert second[2].content == fenced(SYNTAX_ERROR)
    assert failed.error in (second[3].content or "")
    assert SYNTAX_ERROR.rstrip() in (second[3].content or "")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "plait.assistant"]
    assert len(warnings) == 1
    assert warnings[0].getMessage().startswith("assistant.validation.failed error=")
    assert "attempt=1 class_name=ReverseText" in warnings[0].getMessage()


async def test_three_broken_replies_exhaust_the_attempts(
    validate: Any, caplog: pytest.LogCaptureFixture
) -> None:
    model, events = Model([fenced(SYNTAX_ERROR)] * 3), Events()
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        outcome = await generate_component("reverse text", model, events, validate=validate)
    assert not outcome.validated and outcome.attempts == 3
    assert outcome.code == SYNTAX_ERROR and outcome.class_name == "ReverseText"
    assert outcome.error is not None and "SyntaxError" in outcome.error
    assert outcome.validation is not None and not outcome.validation.valid
    steps = [s for s, _, _ in events.steps()]
    assert steps.count("validation_failed") == 3 and steps.count("retrying") == 2
    assert steps[-1] == "validation_failed"  # no retry announced after the last attempt
    assert max(p.attempt for p in events.progress) == 3
    assert all(p.max_attempts == 3 for p in events.progress)
    assert len(model.calls) == 3
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("assistant.validation.exhausted error=")
    assert "attempts=3 code_snippet=" in errors[0]


async def test_a_reply_without_code_is_a_plain_answer(validate: Any) -> None:
    reply = "Components are Python classes; ask me to write one and I will."
    model, events = Model([reply]), Events()
    outcome = await generate_component("what is a component?", model, events, validate=validate)
    assert outcome == ComponentOutcome(False, None, None, 1, None, reply, None)
    assert events.steps() == [("generating", 1, 3), ("extracting_code", 1, 3)]
    assert len(model.calls) == 1


async def test_a_retry_answered_in_words_counts_as_a_failed_attempt(validate: Any) -> None:
    model, events = Model([fenced(SYNTAX_ERROR), "Sorry, I cannot fix it.", fenced(GOOD)]), Events()
    outcome = await generate_component("reverse text", model, events, validate=validate)
    assert outcome.validated and outcome.attempts == 3
    failed = [p for p in events.progress if p.step == "validation_failed"]
    assert len(failed) == 2 and failed[1].error == codegen.NO_CODE_ERROR
    # The third call still asks to fix the last code there was.
    assert SYNTAX_ERROR.rstrip() in (model.calls[2][-1].content or "")


async def test_a_reserved_output_name_is_refused_and_the_retry_fixes_it(validate: Any) -> None:
    model, events = Model([fenced(RESERVED), fenced(GOOD)]), Events()
    outcome = await generate_component("reverse text as a tool", model, events, validate=validate)
    assert outcome.validated and outcome.attempts == 2
    failed = next(p for p in events.progress if p.step == "validation_failed")
    assert failed.error is not None and "component_as_tool" in failed.error and "reserved" in failed.error
    retry = model.calls[1][-1].content or ""
    assert "component_as_tool" in retry and "name the output after the value it holds" in retry


async def test_a_bad_import_is_caught_when_the_code_is_loaded(validate: Any) -> None:
    model, events = Model([fenced(BAD_IMPORT), fenced(GOOD)]), Events()
    outcome = await generate_component("reverse text", model, events, validate=validate)
    assert outcome.validated and outcome.attempts == 2
    failed = next(p for p in events.progress if p.step == "validation_failed")
    assert failed.error == "line 1: ModuleNotFoundError: No module named 'nonexistent_module_xyz'"
    assert failed.class_name == "ReverseText"


async def test_a_component_without_inputs_or_outputs_is_refused(validate: Any) -> None:
    empty = GOOD.replace('    inputs = [Input("text", "string", "The text to reverse")]\n', "").replace(
        '    outputs = [Output("reversed_text", "string", "The text, last character first")]\n', ""
    )
    model, events = Model([fenced(empty)]), Events()
    outcome = await generate_component("x", model, events, max_attempts=1, validate=validate)
    assert not outcome.validated and outcome.error is not None
    assert "must declare inputs or outputs" in outcome.error


async def test_max_attempts_one_never_retries(validate: Any) -> None:
    model, events = Model([fenced(SYNTAX_ERROR), fenced(GOOD)]), Events()
    outcome = await generate_component("reverse text", model, events, max_attempts=1, validate=validate)
    assert not outcome.validated and outcome.attempts == 1
    assert events.steps() == [
        ("generating", 1, 1),
        ("extracting_code", 1, 1),
        ("validating", 1, 1),
        ("validation_failed", 1, 1),
    ]
    assert len(model.calls) == 1


async def test_a_follow_up_sees_the_previous_component(validate: Any) -> None:
    history = [Turn("make a reverser", fenced(GOOD))]
    model, events = Model([fenced(GOOD)]), Events()
    await generate_component("use a list output instead", model, events, history=history, validate=validate)
    roles = [m.role for m in model.calls[0]]
    assert roles == ["system", "user", "assistant", "user"]
    assert GOOD in (model.calls[0][2].content or "")


async def test_provider_errors_propagate(validate: Any) -> None:
    model, events = Model([{"error": "rate_limit", "message": "slow down"}]), Events()
    with pytest.raises(ProviderError, match="slow down"):
        await generate_component("reverse text", model, events, validate=validate)
    assert events.steps() == [("generating", 1, 3)]


def test_a_block_whose_class_line_does_not_parse_is_still_extracted() -> None:
    """A syntax error in the class statement itself is the model's code to fix (SyntaxError ->
    retry), not a reply without code."""
    broken = "from plait.sdk import Component\n\nclass SumNumbers(Component:\n    pass\n"
    assert extract_code(f"```python\n{broken}```") == broken
