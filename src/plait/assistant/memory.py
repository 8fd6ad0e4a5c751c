"""The assistant's short-term memory: the last turns of each conversation, in process memory.

A follow-up such as "now make it use Claude instead" only makes sense next to what came before,
so every completed turn (the user's own words and the assistant's final answer) is kept here and
quoted back into the next prompt (`plait.assistant.prompts.with_history`). It is deliberately
small and volatile (spec B64, decision 8): at most `max_turns` turns per conversation and
`max_sessions` conversations, the least recently used one dropped first; a restart wipes it, and
each server process has its own. The visible chat lives in the browser; this is only the model's
context.

Conversations are keyed by (user, session), so two users who happen to send the same session id
never see each other's turns (decision 4). Without a session id nothing is read or written.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass

log = logging.getLogger("plait.assistant")

MAX_TURNS_PER_SESSION = 10
MAX_SESSIONS = 100
# Each stored text is capped, so a full buffer (100 x 10 turns) stays a few tens of MB at most.
MAX_STORED_CHARS = 8_000
TRUNCATION_MARKER = "\n... [truncated]"

SessionKey = tuple[str | None, str]


@dataclass(frozen=True, slots=True)
class Turn:
    """One exchange: what the user wrote and what the assistant finally answered."""

    user: str
    assistant: str


def _cap(text: str) -> str:
    if len(text) <= MAX_STORED_CHARS:
        return text
    return text[: MAX_STORED_CHARS - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER


class ConversationBuffer:
    """The recent turns of up to `max_sessions` conversations, `max_turns` each (oldest dropped)."""

    def __init__(self, max_turns: int = MAX_TURNS_PER_SESSION, max_sessions: int = MAX_SESSIONS) -> None:
        if max_turns < 1 or max_sessions < 1:
            raise ValueError("max_turns and max_sessions must be at least 1")
        self.max_turns = max_turns
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[SessionKey, deque[Turn]] = OrderedDict()
        self._lock = asyncio.Lock()

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    async def push(
        self, user_id: str | None, session_id: str | None, user_text: str, assistant_text: str
    ) -> bool:
        """Record a completed turn. False (nothing stored) without a session id or when the
        assistant's answer is empty (a cancelled or failed turn)."""
        if not session_id or not assistant_text or not assistant_text.strip():
            return False
        key: SessionKey = (user_id, session_id)
        turn = Turn(_cap(user_text or ""), _cap(assistant_text))
        async with self._lock:
            turns = self._sessions.get(key)
            if turns is None:
                turns = self._sessions[key] = deque(maxlen=self.max_turns)
            else:
                self._sessions.move_to_end(key)
            turns.append(turn)
            count = len(turns)
            while len(self._sessions) > self.max_sessions:
                (_, evicted), _ = self._sessions.popitem(last=False)
                log.info(
                    "assistant.conversation_buffer.session_evicted evicted_session_id=%s "
                    "current_session_count=%d",
                    evicted,
                    len(self._sessions),
                )
        log.info(
            "assistant.conversation_buffer.turn_recorded session_id=%s turn_index=%d user_length=%d "
            "assistant_length=%d",
            session_id,
            count - 1,
            len(turn.user),
            len(turn.assistant),
        )
        return True

    def recent(self, user_id: str | None, session_id: str | None, limit: int | None = None) -> list[Turn]:
        """The conversation's turns, oldest first; the last `limit` of them when given."""
        if not session_id:
            return []
        turns = self._sessions.get((user_id, session_id))
        if not turns:
            return []
        out = list(turns)
        if limit is not None:
            out = out[-limit:] if limit > 0 else []
        return out

    def clear(self, user_id: str | None, session_id: str | None) -> None:
        """Forget one conversation (New session). Unknown or missing sessions are fine."""
        if not session_id:
            return
        removed = self._sessions.pop((user_id, session_id), None)
        if removed is not None:
            log.info(
                "assistant.conversation_buffer.session_cleared session_id=%s turns_cleared=%d",
                session_id,
                len(removed),
            )
