"""Reading and cutting documents, and scoring: the parts of knowledge bases that need no database."""

from __future__ import annotations

import pytest

from plait.knowledge import (
    UnsupportedDocument,
    formalize,
    hybrid_score,
    keyword_similarity,
    query_terms,
    split_text,
)
from plait.knowledge.extract import extract_text
from plait.knowledge.search import Hit, cosine


def test_chunks_respect_size_and_overlap_on_sentence_boundaries() -> None:
    text = " ".join(f"Sentence number {i} says something about topic {i}." for i in range(60))
    chunks = split_text(text, chunk_chars=300, overlap_chars=60)
    assert len(chunks) > 5
    assert all(len(c) <= 300 for c in chunks)
    assert all(c.endswith(".") for c in chunks[:-1])  # cut after a sentence
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.split()[0] in a  # consecutive chunks share text
    assert split_text("   \n ") == []
    with pytest.raises(ValueError):
        split_text("x", chunk_chars=10)


def test_html_and_markdown_are_read_as_text() -> None:
    kind, text = extract_text(
        "page.HTML", b"<html><script>bad()</script><h1>Title</h1><p>Body &amp; more</p></html>"
    )
    assert kind == "html" and "Title" in text and "Body & more" in text and "bad()" not in text
    kind, text = extract_text("notes.md", "# Notes\n\nCafé au lait".encode())
    assert kind == "md" and "Café" in text
    with pytest.raises(UnsupportedDocument, match="over the 10-byte limit"):
        extract_text("big.txt", b"x" * 11, max_bytes=10)
    with pytest.raises(UnsupportedDocument, match="without an extension"):
        extract_text("README", b"text")


def test_scores() -> None:
    terms = query_terms("What is the refund policy for damaged goods?")
    assert terms == ["refund", "policy", "damaged", "goods"]
    assert keyword_similarity(terms, "Damaged goods are refunded under this policy.") == 1.0
    assert keyword_similarity(terms, "Our policy on kettles.") == 0.25
    assert cosine([1, 0], [1, 0]) == 1.0 and cosine([1, 0], [0, 1]) == 0.0 and cosine([1], [1, 2]) == 0.0
    assert hybrid_score(0.5, None, 0.3) == 0.5
    assert hybrid_score(1.0, 0.0, 0.3) == pytest.approx(0.3)
    hit = Hit(1, "kb", "kb", "d", "a.txt", 0, "text", 0.5, 0.5)
    assert formalize([hit, hit]).count("├── Title: a.txt") == 2
