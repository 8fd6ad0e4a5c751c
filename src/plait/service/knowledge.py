"""Knowledge bases (issue 16): create, list and delete a user's bases; upload documents (read,
cut into chunks, embedded when the base names an embeddings endpoint, indexed); search them.

Every operation names the owner (a user id, None: the deployment-wide owner) and sees only that
owner's bases, as variables and components are scoped: another user's base is a 404. A run
searches its owner's bases through `OwnerKnowledge`, the `KnowledgeSource` the launcher hands to
the engine (`RunServices.knowledge`), so the `retrieval` node and tool never see the store.

Search is hybrid as RAGFlow's Retrieval: the database's full-text index finds candidate chunks,
and when a base has embeddings every chunk's vector is compared with the query's; each chunk is
scored `keywords_similarity_weight * keyword + (1 - weight) * vector` (plait.knowledge.search).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError

from plait.knowledge import (
    Hit,
    KnowledgeError,
    SearchRequest,
    UnsupportedDocument,
    cosine,
    hybrid_score,
    keyword_similarity,
    query_terms,
    split_text,
)
from plait.knowledge.embeddings import EmbeddingSettings, embed
from plait.knowledge.extract import extract_text
from plait.service.errors import Conflict, Invalid, NotFound
from plait.store import Store
from plait.store.models import KnowledgeBase, KnowledgeDocument
from plait.store.repos.knowledge import BaseStats, ChunkRow

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # not tab or newlines
MAX_TOP_N = 100
CANDIDATES_PER_HIT = 5  # full-text candidates fetched per hit asked for (at least MIN_CANDIDATES)
MIN_CANDIDATES = 50


@dataclass(slots=True)
class NewBase:
    """What a new knowledge base is made with (the API's body)."""

    name: str
    description: str = ""
    embedding_url: str | None = None
    embedding_model: str | None = None
    embedding_key_variable: str | None = None
    chunk_chars: int = 800
    overlap_chars: int = 120


class KnowledgeService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.repo = store.knowledge

    # ------------------------------------------------------------------ bases
    async def create(self, new: NewBase, *, owner_id: str | None) -> KnowledgeBase:
        name = new.name.strip()
        if not name:
            raise Invalid("a knowledge base needs a name")
        texts = (name, new.description, new.embedding_url, new.embedding_model, new.embedding_key_variable)
        if any(t and _CONTROL.search(t) for t in texts):
            raise Invalid("names, descriptions and embedding settings cannot contain control characters")
        if bool(new.embedding_url) != bool(new.embedding_model):
            raise Invalid(
                "embeddings need both embedding_url and embedding_model",
                hint="set both (an OpenAI-compatible endpoint and its model), or neither for full-text search only",
            )
        if not 50 <= new.chunk_chars <= 20_000 or not 0 <= new.overlap_chars < new.chunk_chars:
            raise Invalid("chunk_chars must be 50..20000 and overlap_chars 0..chunk_chars-1")
        try:
            return await self.repo.create(
                name,
                owner_id=owner_id,
                description=new.description,
                embedding_url=new.embedding_url or None,
                embedding_model=new.embedding_model or None,
                embedding_key_variable=new.embedding_key_variable or None,
                chunk_chars=new.chunk_chars,
                overlap_chars=new.overlap_chars,
            )
        except IntegrityError as exc:
            raise Conflict(f"you already have a knowledge base named {name!r}") from exc

    async def list_bases(self, *, owner_id: str | None) -> list[BaseStats]:
        return await self.repo.list_bases(owner_id=owner_id)

    async def get(self, kb_id: str, *, owner_id: str | None) -> KnowledgeBase:
        row = await self.repo.get(kb_id, owner_id=owner_id)
        if row is None:
            raise NotFound(f"knowledge base {kb_id!r} not found")
        return row

    async def stats(self, kb_id: str, *, owner_id: str | None) -> BaseStats:
        for stats in await self.repo.list_bases(owner_id=owner_id):
            if stats.base.id == kb_id:
                return stats
        raise NotFound(f"knowledge base {kb_id!r} not found")

    async def delete(self, kb_id: str, *, owner_id: str | None) -> None:
        if not await self.repo.delete(kb_id, owner_id=owner_id):
            raise NotFound(f"knowledge base {kb_id!r} not found")

    async def resolve(self, refs: list[str], *, owner_id: str | None) -> list[KnowledgeBase]:
        """The owner's bases named by id or name; KnowledgeError naming every unknown one. No
        refs: every base the owner has."""
        if not refs:
            return [s.base for s in await self.repo.list_bases(owner_id=owner_id)]
        found = await self.repo.find(refs, owner_id=owner_id)
        known = {b.id for b in found} | {b.name for b in found}
        missing = [r for r in refs if r not in known]
        if missing:
            raise KnowledgeError(
                f"unknown knowledge base(s): {', '.join(repr(m) for m in missing)}",
                hint="create them on the Knowledge page (or with POST /api/v1/knowledge) and upload "
                "documents, or change kb_ids to ids or names of your knowledge bases",
            )
        return found

    # ------------------------------------------------------------------ documents
    async def _embedding(self, base: KnowledgeBase) -> EmbeddingSettings | None:
        if not base.embedding_url or not base.embedding_model:
            return None
        key = None
        if base.embedding_key_variable:
            key = await self.store.variables.get(base.embedding_key_variable, owner_id=base.owner_id)
            if key is None and base.owner_id is not None:
                key = await self.store.variables.get(base.embedding_key_variable, owner_id=None)
            if key is None:
                raise KnowledgeError(
                    f"the variable {base.embedding_key_variable!r} (the embeddings API key) is not set",
                    hint="set it on the Variables page, or clear embedding_key_variable",
                )
        return EmbeddingSettings(base.embedding_url, base.embedding_model, None if key is None else str(key))

    async def upload(
        self, kb_id: str, filename: str, data: bytes, *, owner_id: str | None
    ) -> KnowledgeDocument:
        """Read, chunk, embed (when the base has embeddings) and index one document."""
        base = await self.get(kb_id, owner_id=owner_id)
        filename = filename.strip().replace("\\", "/").rsplit("/", 1)[-1]
        if _CONTROL.search(filename):
            raise Invalid("a file name cannot contain control characters")
        if not filename:
            raise Invalid("a document needs a file name (its extension says its type)")
        try:
            # pypdf and python-docx parse in Python: off the event loop.
            kind, content = await asyncio.to_thread(extract_text, filename, data)
        except UnsupportedDocument as exc:
            raise Invalid(exc.message, hint=exc.hint, code=exc.code) from exc
        chunks = split_text(content, base.chunk_chars, base.overlap_chars)
        vectors = None
        try:
            settings = await self._embedding(base)
            if settings is not None:
                vectors = await embed(settings, chunks)
        except KnowledgeError as exc:
            raise Invalid(exc.message, hint=exc.hint, code="embeddings_failed") from exc
        return await self.repo.add_document(
            base.id, name=filename, kind=kind, size=len(data), chunks=chunks, vectors=vectors
        )

    async def documents(self, kb_id: str, *, owner_id: str | None) -> list[KnowledgeDocument]:
        base = await self.get(kb_id, owner_id=owner_id)
        return await self.repo.documents(base.id)

    async def delete_document(self, kb_id: str, document_id: str, *, owner_id: str | None) -> None:
        base = await self.get(kb_id, owner_id=owner_id)
        if not await self.repo.delete_document(base.id, document_id):
            raise NotFound(f"document {document_id!r} not found in knowledge base {kb_id!r}")

    async def chunks(
        self, kb_id: str, *, owner_id: str | None, document_id: str | None = None, limit: int = 100
    ) -> list[ChunkRow]:
        base = await self.get(kb_id, owner_id=owner_id)
        return await self.repo.chunks(base.id, document_id=document_id, limit=limit)

    # ------------------------------------------------------------------ search
    async def search(self, request: SearchRequest, *, owner_id: str | None) -> list[Hit]:
        """The best `top_n` chunks over the threshold, best first (KnowledgeError for unknown
        bases or a failing embeddings endpoint)."""
        bases = await self.resolve(list(request.kb_ids), owner_id=owner_id)
        if not bases or not request.query.strip():
            return []
        top_n = max(1, min(int(request.top_n), MAX_TOP_N))
        by_id = {b.id: b for b in bases}
        terms = query_terms(request.query)
        candidates: dict[int, ChunkRow] = {
            c.id: c
            for c in await self.repo.full_text(
                list(by_id), terms, limit=max(MIN_CANDIDATES, top_n * CANDIDATES_PER_HIT)
            )
        }
        query_vectors: dict[str, list[float]] = {}  # per base: bases may use different models
        for base in bases:
            settings = await self._embedding(base)
            if settings is None:
                continue
            key = f"{settings.base_url}\n{settings.model}"
            if key not in query_vectors:
                (query_vectors[key],) = await embed(settings, [request.query])
            for row in await self.repo.with_vectors([base.id]):
                candidates.setdefault(row.id, row)
        hits: list[Hit] = []
        for row in candidates.values():
            base = by_id[row.kb_id]
            keyword = keyword_similarity(terms, row.content)
            vector = None
            if row.embedding and base.embedding_url and base.embedding_model:
                qv = query_vectors.get(f"{base.embedding_url}\n{base.embedding_model}")
                vector = None if qv is None else max(0.0, cosine(qv, row.embedding))
            score = hybrid_score(keyword, vector, request.keywords_similarity_weight)
            if score < request.similarity_threshold:
                continue
            hits.append(
                Hit(
                    chunk_id=row.id,
                    kb_id=row.kb_id,
                    kb_name=base.name,
                    document_id=row.document_id,
                    document_name=row.document_name,
                    position=row.position,
                    content=row.content,
                    similarity=score,
                    keyword_similarity=keyword,
                    vector_similarity=vector,
                )
            )
        hits.sort(key=lambda h: (-h.similarity, h.document_name, h.position))
        return hits[:top_n]

    def for_owner(self, owner_id: str | None) -> OwnerKnowledge:
        """The `KnowledgeSource` of a run acting as `owner_id`."""
        return OwnerKnowledge(self, owner_id)


@dataclass(frozen=True, slots=True)
class OwnerKnowledge:
    """One owner's knowledge bases, as a run searches them (plait.knowledge.KnowledgeSource)."""

    service: KnowledgeService
    owner_id: str | None

    async def search(self, request: SearchRequest) -> list[Hit]:
        return await self.service.search(request, owner_id=self.owner_id)


def base_view(stats: BaseStats) -> dict[str, Any]:
    """A base as the API shows it (the key variable's name, never a key)."""
    b = stats.base
    return {
        "id": b.id,
        "name": b.name,
        "description": b.description,
        "embedding_url": b.embedding_url,
        "embedding_model": b.embedding_model,
        "embedding_key_variable": b.embedding_key_variable,
        "chunk_chars": b.chunk_chars,
        "overlap_chars": b.overlap_chars,
        "documents": stats.documents,
        "chunks": stats.chunks,
        "search": "hybrid" if b.embedding_url and b.embedding_model else "full_text",
        "created_at": b.created_at,
        "updated_at": b.updated_at,
    }
