"""Embeddings from any OpenAI-compatible `/embeddings` endpoint (OpenAI, a local llama.cpp or
vLLM server, Ollama's OpenAI API...).

A knowledge base names the endpoint and the model (`EmbeddingSettings`); the key is read from one
of its owner's stored variables by the service layer, never stored with the base. Inputs go in
batches; the answer's vectors are put back in input order (the API numbers them by `index`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from plait.knowledge.errors import KnowledgeError

BATCH = 64
TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    """Where a base's embeddings come from. `api_key` is the resolved secret (None: no header)."""

    base_url: str
    model: str
    api_key: str | None = None


def _vectors(body: Any, expected: int, where: str) -> list[list[float]]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != expected:
        raise KnowledgeError(f"{where} answered without {expected} embeddings")
    ordered = sorted(data, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
    out: list[list[float]] = []
    for item in ordered:
        vec = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vec, list) or not vec:
            raise KnowledgeError(f"{where} answered an embedding that is not a list of numbers")
        out.append([float(x) for x in vec])
    return out


async def embed(
    settings: EmbeddingSettings, texts: Sequence[str], *, client: httpx.AsyncClient | None = None
) -> list[list[float]]:
    """One vector per text, in order; KnowledgeError when the endpoint fails or answers oddly."""
    if not texts:
        return []
    url = settings.base_url.rstrip("/") + "/embeddings"
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    own = client is None
    http = client or httpx.AsyncClient(timeout=TIMEOUT_S)
    try:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = list(texts[start : start + BATCH])
            try:
                resp = await http.post(url, json={"model": settings.model, "input": batch}, headers=headers)
            except httpx.HTTPError as exc:
                raise KnowledgeError(
                    f"the embeddings endpoint {url} cannot be reached: {exc}",
                    hint="check the knowledge base's embedding URL",
                ) from exc
            if resp.status_code >= 400:
                raise KnowledgeError(
                    f"the embeddings endpoint {url} answered {resp.status_code}: {resp.text[:200]}",
                    hint="check the embedding model name and the API key variable",
                )
            try:
                body = resp.json()
            except ValueError as exc:
                raise KnowledgeError(f"the embeddings endpoint {url} did not answer JSON") from exc
            vectors.extend(_vectors(body, len(batch), url))
        return vectors
    finally:
        if own:
            await http.aclose()
