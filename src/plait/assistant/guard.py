"""The input guard: messages that try to take over the assistant are refused before any model
call (the "sanitization-blocked" turn of spec B30).

It looks only at the user's own words (spec decision 14), never at text the assistant or a tool
wrote. It catches the plain, common forms: "ignore the previous instructions", "reveal your
system prompt", and chat-template role markers pasted into a message. It is a tripwire for the
obvious, not a defence: everything the model reads is also framed as quoted context, and the
model cannot reach secrets or other users' data whatever it is told.

Patterns stay narrow on purpose. "Act as a proxy" or "you are now able to" are ordinary requests
about components, so only phrases aimed at the assistant's own instructions count.
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "override",
        re.compile(
            r"\b(ignore|disregard|forget|override)\b[^.\n]{0,30}\b(previous|prior|above|earlier|all|your|the)\b"
            r"[^.\n]{0,30}\b(instructions?|prompts?|rules|guidelines|directives)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "prompt_extraction",
        re.compile(
            r"\b(reveal|show|print|repeat|output|leak|display|tell me)\b[^.\n]{0,30}"
            r"\b(your|the)\s+(system\s+prompt|hidden\s+(prompt|instructions)|initial\s+instructions)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "role_markers",
        re.compile(
            r"\[/?INST\]|<</?SYS>>|<\|im_(start|end)\|>|<\|(system|assistant|user|endoftext)\|>",
            re.IGNORECASE,
        ),
    ),
    (
        "persona",
        re.compile(
            r"\byou are now (?:in )?(?:DAN|developer mode|jailbroken|unrestricted|an? unfiltered)\b",
            re.IGNORECASE,
        ),
    ),
)


def normalize(text: str) -> str:
    """The message as the assistant reads it: NUL characters removed, outer whitespace stripped."""
    return text.replace("\x00", "").strip()


def blocked(text: str) -> str | None:
    """Why the message is refused (`override`, `prompt_extraction`, `role_markers`, `persona`), or
    None."""
    for reason, pattern in _PATTERNS:
        if pattern.search(text):
            return reason
    return None
