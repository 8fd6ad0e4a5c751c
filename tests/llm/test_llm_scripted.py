"""The scripted provider: step format, matching, streaming, usage and failures."""

from __future__ import annotations

import pytest

from plait.llm import (
    AuthenticationError,
    ChatRequest,
    Message,
    ModelNotFoundError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitError,
    ScriptedProvider,
    ScriptError,
)


def req(text: str = "hi", model: str = "m", **kw) -> ChatRequest:
    return ChatRequest(model, [Message("system", "be brief"), Message("user", text)], **kw)


async def test_replies_in_order_with_text_json_and_tool_calls() -> None:
    sp = ScriptedProvider(
        [
            "hello there",
            {"json": {"answer": 42}},
            {"tool_calls": [{"name": "search", "arguments": {"q": "plait"}}], "content": "let me look"},
        ]
    )
    r1 = await sp.chat(req())
    r2 = await sp.chat(req())
    r3 = await sp.chat(req())
    assert (r1.content, r1.finish_reason, r1.tool_calls) == ("hello there", "stop", [])
    assert r2.content == '{"answer": 42}'
    assert r3.content == "let me look"
    assert [(c.id, c.name, c.arguments) for c in r3.tool_calls] == [("call_3_1", "search", {"q": "plait"})]
    assert r3.finish_reason == "tool_calls"
    assert sp.remaining == 0 and len(sp.requests) == 3


async def test_streams_word_deltas_that_add_up_to_the_reply() -> None:
    deltas: list[str] = []
    r = await ScriptedProvider(["one two  three"]).chat(req(), on_delta=deltas.append)
    assert deltas == ["one ", "two  ", "three"]
    assert "".join(deltas) == r.content


async def test_explicit_chunks() -> None:
    deltas: list[str] = []
    r = await ScriptedProvider([{"chunks": ["he", "llo"]}]).chat(req(), on_delta=deltas.append)
    assert (deltas, r.content) == (["he", "llo"], "hello")


async def test_usage_is_counted_from_words_or_taken_from_the_step() -> None:
    sp = ScriptedProvider(["a b c", {"content": "x", "usage": {"input_tokens": 7, "output_tokens": 9}}])
    r = await sp.chat(req("three words here"))
    assert r.usage.as_dict() == {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}
    r = await sp.chat(req())
    assert (r.usage.input_tokens, r.usage.output_tokens) == (7, 9)


@pytest.mark.parametrize(
    ("kind", "exc"),
    [
        ("model_not_found", ModelNotFoundError),
        ("auth", AuthenticationError),
        ("rate_limit", RateLimitError),
        ("unavailable", ProviderUnavailableError),
        ("error", ProviderError),
    ],
)
async def test_error_steps_raise_the_provider_error(kind: str, exc: type[ProviderError]) -> None:
    sp = ScriptedProvider([{"error": kind, "message": "boom"}, "after"])
    with pytest.raises(exc) as info:
        await sp.chat(req())
    assert type(info.value) is exc
    assert (info.value.message, info.value.provider, info.value.model) == ("boom", "scripted", "m")
    assert (await sp.chat(req())).content == "after"


async def test_match_picks_the_step_for_the_last_user_message_and_repeat_keeps_it() -> None:
    sp = ScriptedProvider(
        [
            {"match": "weather", "content": "sunny", "repeat": True},
            {"match": "time", "content": "noon"},
            "fallback",
        ]
    )
    assert (await sp.chat(req("What TIME is it?"))).content == "noon"
    assert (await sp.chat(req("the weather?"))).content == "sunny"
    assert (await sp.chat(req("weather again"))).content == "sunny"
    assert (await sp.chat(req("something else"))).content == "fallback"
    with pytest.raises(ProviderError, match="no step left.*something else"):
        await sp.chat(req("something else"))


async def test_model_condition() -> None:
    sp = ScriptedProvider(
        [{"model": "big", "content": "from big"}, {"model": "small", "error": "model_not_found"}]
    )
    with pytest.raises(ModelNotFoundError, match="`small` does not exist"):
        await sp.chat(req(model="small"))
    assert (await sp.chat(req(model="big"))).content == "from big"


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (3, "expected a string or an object"),
        ({"contnt": "x"}, "unknown key"),
        ({"error": "nope"}, "error must be one of"),
        ({"content": "a", "json": 1}, "either content or json"),
        ({"chunks": ["a"], "content": "b"}, "add up"),
        ({"tool_calls": [{"arguments": {}}]}, "needs a name"),
        ({"match": "x"}, "needs content"),
    ],
)
def test_bad_steps_name_the_step(step: object, message: str) -> None:
    with pytest.raises(ScriptError, match=f"script step 2: .*{message}"):
        ScriptedProvider(["ok", step])
