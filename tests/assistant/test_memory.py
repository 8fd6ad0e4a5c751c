"""The conversation buffer (spec 1.10): bounded, LRU across sessions, keyed by (user, session)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from plait.assistant.memory import MAX_STORED_CHARS, ConversationBuffer, Turn


async def test_push_and_recent_oldest_first() -> None:
    buffer = ConversationBuffer()
    assert await buffer.push("alice", "s1", "u1", "a1")
    assert await buffer.push("alice", "s1", "u2", "a2")
    assert buffer.recent("alice", "s1") == [Turn("u1", "a1"), Turn("u2", "a2")]
    assert buffer.recent("alice", "s1", limit=1) == [Turn("u2", "a2")]
    assert buffer.recent("alice", "s1", limit=0) == []


async def test_m_s44_thirteen_pushes_keep_ten() -> None:
    buffer = ConversationBuffer()
    for i in range(13):
        await buffer.push("alice", "s1", f"u{i}", f"a{i}")
    turns = buffer.recent("alice", "s1")
    assert len(turns) == 10
    assert [t.user for t in turns] == [f"u{i}" for i in range(3, 13)]


async def test_m_s45_lru_eviction(caplog: pytest.LogCaptureFixture) -> None:
    buffer = ConversationBuffer()
    for i in range(100):
        await buffer.push("alice", f"s{i}", "u", "a")
    assert buffer.session_count == 100
    await buffer.push("alice", "s0", "u again", "a again")  # refreshes s0: s1 is now the oldest
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        await buffer.push("alice", "s100", "u", "a")
    assert buffer.session_count == 100
    assert buffer.recent("alice", "s1") == []
    assert len(buffer.recent("alice", "s0")) == 2
    assert buffer.recent("alice", "s100") == [Turn("u", "a")]
    assert any(
        "assistant.conversation_buffer.session_evicted evicted_session_id=s1 current_session_count=100" in m
        for m in caplog.messages
    )


async def test_m_s46_concurrent_pushes() -> None:
    buffer = ConversationBuffer()
    results = await asyncio.gather(*(buffer.push("alice", "s1", f"u{i}", f"a{i}") for i in range(8)))
    assert all(results)
    assert sorted(t.user for t in buffer.recent("alice", "s1")) == [f"u{i}" for i in range(8)]


async def test_m_s47_clear_unknown_session() -> None:
    buffer = ConversationBuffer()
    buffer.clear("alice", "never-seen")
    buffer.clear("alice", None)
    await buffer.push("alice", "s1", "u1", "a1")
    await buffer.push("alice", "s2", "u2", "a2")
    buffer.clear("alice", "s1")
    buffer.clear("alice", "s1")  # idempotent
    assert buffer.recent("alice", "s1") == []
    assert buffer.recent("alice", "s2") == [Turn("u2", "a2")]
    assert buffer.session_count == 1


async def test_m_s43_empty_answers_and_anonymous_sessions_record_nothing() -> None:
    buffer = ConversationBuffer()
    assert not await buffer.push("alice", "s1", "u", "")
    assert not await buffer.push("alice", "s1", "u", "  \n ")
    assert not await buffer.push("alice", None, "u", "a")
    assert not await buffer.push("alice", "", "u", "a")
    assert buffer.session_count == 0
    assert buffer.recent("alice", None) == []


async def test_users_never_see_each_others_turns() -> None:
    buffer = ConversationBuffer()
    await buffer.push("alice", "s1", "alice asks", "alice answer")
    await buffer.push("bob", "s1", "bob asks", "bob answer")
    assert buffer.recent("alice", "s1") == [Turn("alice asks", "alice answer")]
    assert buffer.recent("bob", "s1") == [Turn("bob asks", "bob answer")]
    assert buffer.recent(None, "s1") == []
    buffer.clear("bob", "s1")
    assert buffer.recent("alice", "s1") == [Turn("alice asks", "alice answer")]


async def test_m_t30_new_session_starts_empty() -> None:
    buffer = ConversationBuffer()
    await buffer.push("alice", "agentic_old", "build a flow", "done")
    assert buffer.recent("alice", "agentic_new") == []


async def test_stored_texts_are_capped() -> None:
    buffer = ConversationBuffer()
    await buffer.push("alice", "s1", "u" * 50_000, "a" * 50_000)
    (turn,) = buffer.recent("alice", "s1")
    assert len(turn.user) == MAX_STORED_CHARS
    assert len(turn.assistant) == MAX_STORED_CHARS
    assert turn.assistant.endswith("[truncated]")


async def test_turn_recorded_log(caplog: pytest.LogCaptureFixture) -> None:
    buffer = ConversationBuffer()
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        await buffer.push("alice", "s1", "hello", "hi there")
    assert (
        "assistant.conversation_buffer.turn_recorded session_id=s1 turn_index=0 user_length=5 "
        "assistant_length=8"
    ) in caplog.messages


async def test_custom_limits() -> None:
    buffer = ConversationBuffer(max_turns=2, max_sessions=1)
    for i in range(3):
        await buffer.push("alice", "s1", f"u{i}", f"a{i}")
    assert [t.user for t in buffer.recent("alice", "s1")] == ["u1", "u2"]
    await buffer.push("alice", "s2", "u", "a")
    assert buffer.session_count == 1
    assert buffer.recent("alice", "s1") == []
    with pytest.raises(ValueError):
        ConversationBuffer(max_turns=0)


def test_turn_is_frozen() -> None:
    turn = Turn("u", "a")
    with pytest.raises(AttributeError):
        turn.user = "x"  # type: ignore[misc]
