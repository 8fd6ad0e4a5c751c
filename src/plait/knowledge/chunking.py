"""Cut a document's text into overlapping chunks of about `chunk_chars` characters.

Cuts fall on paragraph breaks, then sentence ends, then spaces, so a chunk rarely splits a
sentence; consecutive chunks share about `overlap_chars` characters so an answer that straddles a
cut is still found whole in one of them. Characters, not model tokens: plait does not know which
model (if any) will read the chunks; 800 characters is about 200 English tokens.
"""

from __future__ import annotations

import re

DEFAULT_CHUNK_CHARS = 800
DEFAULT_OVERLAP_CHARS = 120
_BREAKS = ("\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " ")


def _normalise(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"[ \t\f\v]+", " ", text)
    text = re.sub(r"\n\s*\n+", "\n\n", text)
    return text.strip()


def _cut(text: str, start: int, limit: int) -> int:
    """The end of the chunk that starts at `start`: the last good break before `start + limit`."""
    end = start + limit
    if end >= len(text):
        return len(text)
    window = text[start:end]
    for mark in _BREAKS:
        at = window.rfind(mark)
        if at > limit // 3:  # not a tiny chunk for a break near its start
            return start + at + len(mark)
    return end


def split_text(
    text: str, chunk_chars: int = DEFAULT_CHUNK_CHARS, overlap_chars: int = DEFAULT_OVERLAP_CHARS
) -> list[str]:
    """The chunks of `text` (none for blank text)."""
    if chunk_chars < 50:
        raise ValueError("chunk_chars must be at least 50")
    overlap_chars = max(0, min(overlap_chars, chunk_chars // 2))
    text = _normalise(text)
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, chunk_chars)
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= len(text):
            break
        nxt = max(end - overlap_chars, start + 1)
        # Start the overlap on a word boundary.
        space = text.find(" ", nxt, end)
        start = space + 1 if overlap_chars and space != -1 else nxt
    return chunks
