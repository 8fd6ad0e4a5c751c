"""The `generate_component` tool's engine: part 1's pipeline inside an agent turn, registering
what validates before it answers."""

from __future__ import annotations

from typing import Any

from plait.assistant.events import AssistantEvent, Progress
from plait.assistant.generator import TurnComponentGenerator
from plait.llm import ChatRequest, ScriptedProvider
from plait.llm.base import ChatResponse, Message
from plait.sandbox.components import ComponentValidation

REVERSE = """\
from plait.sdk import Component, Input, Output


class ReverseText(Component):
    description = "Reverses a text."
    inputs = [Input("text", "string")]
    outputs = [Output("reversed", "string")]

    def run(self, text):
        return {"reversed": text[::-1]}
"""


class Call:
    def __init__(self, script: list[Any]) -> None:
        self.provider = ScriptedProvider(script)

    async def __call__(self, messages: list[Message], **kwargs: Any) -> ChatResponse:
        return await self.provider.chat(ChatRequest(model="scripted", messages=messages))


class Registry:
    def __init__(self) -> None:
        self.registered: list[tuple[str | None, str, str | None]] = []

    async def register(
        self, owner_id: str | None, session_id: str, validation: ComponentValidation, source: str
    ) -> bool:
        self.registered.append((owner_id, session_id, validation.class_name))
        return True

    async def clear(self, owner_id: str | None, session_id: str | None) -> int:
        return 0


async def test_a_valid_component_is_registered_before_the_tool_answers() -> None:
    events: list[AssistantEvent] = []

    async def emit(event: AssistantEvent) -> None:
        events.append(event)

    registry = Registry()
    generator = TurnComponentGenerator(
        Call([f"```python\n{REVERSE}```"]), emit, user_id="u", session_id="s", registry=registry
    )
    out = await generator.generate("a component that reverses a string")
    assert out["validated"] is True and out["class_name"] == "ReverseText" and out["registered"] is True
    assert out["source"] == REVERSE and [o["name"] for o in out["spec"]["outputs"]] == ["reversed"]
    assert registry.registered == [("u", "s", "ReverseText")]
    assert [e.step for e in events if isinstance(e, Progress)][-1] == "validated"


async def test_a_component_that_never_validates_is_an_answer_not_an_exception() -> None:
    async def emit(event: AssistantEvent) -> None:
        pass

    broken = "```python\nfrom plait.sdk import Component\n\nclass Nope(Component:\n    pass\n```"
    registry = Registry()
    generator = TurnComponentGenerator(
        Call([broken, broken]), emit, user_id="u", session_id="s", registry=registry, max_attempts=2
    )
    out = await generator.generate("whatever")
    assert out["validated"] is False and out["attempts"] == 2 and out["error"]
    assert registry.registered == []
