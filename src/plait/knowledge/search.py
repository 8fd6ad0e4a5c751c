"""What a knowledge search asks and answers, how a hit is scored, and how hits read as text.

Scores follow RAGFlow's Retrieval: a chunk's similarity is
`keywords_similarity_weight * keyword similarity + (1 - keywords_similarity_weight) * vector
similarity` when the base has embeddings, the keyword similarity alone when it has none; hits under
`similarity_threshold` are dropped and the best `top_n` kept. The keyword similarity is the share of
the query's terms found in the chunk (each term by its crude English stem), a number in [0, 1] that
a threshold means the same for on SQLite and PostgreSQL (their full-text ranks do not).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_TOP_N = 8
DEFAULT_SIMILARITY_THRESHOLD = 0.2
DEFAULT_KEYWORDS_WEIGHT = 0.5

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
_SUFFIXES = ("ing", "edly", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A crude English stem (enough to match "refunds" with "refund", "damaged" with "damage")."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def query_terms(query: str) -> list[str]:
    """The distinct searchable terms of a query, in order: words of 2+ characters, not stop words."""
    seen: dict[str, None] = {}
    for w in words(query):
        if len(w) > 1 and w not in _STOP:
            seen.setdefault(w, None)
    return list(seen)


def keyword_similarity(terms: Sequence[str], text: str) -> float:
    """The share of `terms` found in `text` (by stem prefix), in [0, 1]."""
    if not terms:
        return 0.0
    stems = {stem(w) for w in words(text)}
    found = 0
    for term in terms:
        s = stem(term)
        if s in stems or any(t.startswith(s) or (s.startswith(t) and len(t) > 3) for t in stems):
            found += 1
    return found / len(terms)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity (0.0 when either vector is zero or their sizes differ)."""
    if len(a) != len(b) or not a:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


def hybrid_score(keyword: float, vector: float | None, keywords_weight: float) -> float:
    """RAGFlow's blend; the keyword similarity alone when there is no vector similarity."""
    if vector is None:
        return keyword
    w = min(max(keywords_weight, 0.0), 1.0)
    return w * keyword + (1 - w) * vector


@dataclass(slots=True)
class SearchRequest:
    """One search: the query and RAGFlow's Retrieval parameters. `kb_ids` are ids or names of the
    caller's knowledge bases; empty: every base the caller owns."""

    query: str
    kb_ids: list[str] = field(default_factory=list)
    top_n: int = DEFAULT_TOP_N
    similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    keywords_similarity_weight: float = DEFAULT_KEYWORDS_WEIGHT


@dataclass(slots=True)
class Hit:
    """A chunk a search found, with its scores (the vector score is None without embeddings)."""

    chunk_id: int
    kb_id: str
    kb_name: str
    document_id: str
    document_name: str
    position: int
    content: str
    similarity: float
    keyword_similarity: float
    vector_similarity: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """RAGFlow's chunk fields (`content`, `doc_id`, `docnm_kwd`, `kb_id`, `similarity`,
        `term_similarity`, `vector_similarity`) and plait's plainer names for the same."""
        return {
            "chunk_id": self.chunk_id,
            "content": self.content,
            "document_id": self.document_id,
            "document_name": self.document_name,
            "doc_id": self.document_id,
            "docnm_kwd": self.document_name,
            "kb_id": self.kb_id,
            "kb_name": self.kb_name,
            "position": self.position,
            "similarity": round(self.similarity, 6),
            "term_similarity": round(self.keyword_similarity, 6),
            "vector_similarity": None if self.vector_similarity is None else round(self.vector_similarity, 6),
        }


def formalize(hits: Sequence[Hit]) -> str:
    """The hits as one text for a prompt, as RAGFlow's `formalized_content`: an ID, the
    document's title and the chunk per hit."""
    blocks = []
    for i, hit in enumerate(hits):
        blocks.append(f"ID: {i}\n├── Title: {hit.document_name}\n└── Content:\n{hit.content}")
    return "\n\n".join(blocks)


class KnowledgeSource(Protocol):
    """Searches the knowledge bases of the run's owner (the service layer implements it)."""

    async def search(self, request: SearchRequest) -> list[Hit]: ...
