"""Knowledge bases, their documents and chunks, scoped to an owner; and the database's full-text
search over chunks.

Full-text search is the database's own (migration 0009): FTS5 with porter stemming on SQLite, an
`english` tsvector with a GIN index on PostgreSQL. Either returns candidate chunks that share a
query term, best first; the service scores them (plait.knowledge.search) so a threshold means
the same on both. Vectors are stored per chunk as JSON and compared in Python: Debian's
PostgreSQL 15 has no pgvector package, and this Python's sqlite3 module cannot load extensions
(sqlite-vec), so neither database offers a vector index here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, func, select, text, update

from plait.store.models import JSONValue, KnowledgeBase, KnowledgeChunk, KnowledgeDocument
from plait.store.repos.base import Repo

FTS_NAME = "kb_chunks_fts"  # the FTS5 table (SQLite) / GIN index (PostgreSQL); not a model


@dataclass(slots=True)
class BaseStats:
    """A base with how many documents and chunks it holds."""

    base: KnowledgeBase
    documents: int
    chunks: int


@dataclass(slots=True)
class ChunkRow:
    """A chunk with its document's name (what a search hit shows)."""

    id: int
    kb_id: str
    document_id: str
    document_name: str
    position: int
    content: str
    embedding: list[float] | None


_SQLITE_SEARCH = f"""
SELECT c.id, c.kb_id, c.document_id, d.name, c.position, c.content, c.embedding
FROM {FTS_NAME} JOIN kb_chunks c ON c.id = {FTS_NAME}.rowid JOIN kb_documents d ON d.id = c.document_id
WHERE {FTS_NAME} MATCH :q AND c.kb_id IN :ids
ORDER BY bm25({FTS_NAME}), c.id
LIMIT :n
"""
_COLUMNS = (
    KnowledgeChunk.id,
    KnowledgeChunk.kb_id,
    KnowledgeChunk.document_id,
    KnowledgeDocument.name,
    KnowledgeChunk.position,
    KnowledgeChunk.content,
)


def _fts_sqlite(terms: Sequence[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _fts_pg(terms: Sequence[str]) -> str:
    # Terms are words (letters and digits only, plait.knowledge.search.query_terms).
    return " | ".join(terms)


class KnowledgeRepo(Repo):
    """Every method takes `owner_id` (a user id; None: the deployment-wide owner) and sees only
    that owner's bases; document and chunk methods take a base id the caller resolved first."""

    @staticmethod
    def _owned(owner_id: str | None) -> Any:
        return KnowledgeBase.owner_id.is_(None) if owner_id is None else KnowledgeBase.owner_id == owner_id

    # ------------------------------------------------------------------ bases
    async def create(self, name: str, *, owner_id: str | None, **fields: Any) -> KnowledgeBase:
        return await self._add(KnowledgeBase(name=name, owner_id=owner_id, **fields))

    async def get(self, kb_id: str, *, owner_id: str | None) -> KnowledgeBase | None:
        return await self._one(select(KnowledgeBase).where(self._owned(owner_id), KnowledgeBase.id == kb_id))

    async def by_name(self, name: str, *, owner_id: str | None) -> KnowledgeBase | None:
        return await self._one(select(KnowledgeBase).where(self._owned(owner_id), KnowledgeBase.name == name))

    async def find(self, refs: Sequence[str], *, owner_id: str | None) -> list[KnowledgeBase]:
        """The owner's bases whose id or name is one of `refs`."""
        if not refs:
            return []
        refs = list(refs)
        stmt = select(KnowledgeBase).where(
            self._owned(owner_id), KnowledgeBase.id.in_(refs) | KnowledgeBase.name.in_(refs)
        )
        return await self._all(stmt.order_by(KnowledgeBase.name))

    async def list_bases(self, *, owner_id: str | None) -> list[BaseStats]:
        docs = (
            select(
                KnowledgeDocument.kb_id,
                func.count().label("n"),
                func.sum(KnowledgeDocument.chunk_count).label("c"),
            )
            .group_by(KnowledgeDocument.kb_id)
            .subquery()
        )
        stmt = (
            select(KnowledgeBase, docs.c.n, docs.c.c)
            .outerjoin(docs, docs.c.kb_id == KnowledgeBase.id)
            .where(self._owned(owner_id))
            .order_by(KnowledgeBase.name)
        )
        async with self.sessionmaker() as session:
            rows = (await session.execute(stmt)).all()
        return [BaseStats(row[0], int(row[1] or 0), int(row[2] or 0)) for row in rows]

    async def update(self, kb_id: str, *, owner_id: str | None, **changes: Any) -> bool:
        stmt = (
            update(KnowledgeBase)
            .where(self._owned(owner_id), KnowledgeBase.id == kb_id)
            .values(**changes, updated_at=time.time())
        )
        return await self._write(stmt) > 0

    async def delete(self, kb_id: str, *, owner_id: str | None) -> bool:
        """Delete a base with its documents and chunks (foreign keys cascade)."""
        async with self.sessionmaker.begin() as session:
            owned = await session.scalar(
                select(KnowledgeBase.id).where(self._owned(owner_id), KnowledgeBase.id == kb_id)
            )
            if owned is None:
                return False
            # Explicit, child first: SQLite's FTS triggers fire per deleted chunk either way.
            await session.execute(delete(KnowledgeChunk).where(KnowledgeChunk.kb_id == kb_id))
            await session.execute(delete(KnowledgeDocument).where(KnowledgeDocument.kb_id == kb_id))
            await session.execute(delete(KnowledgeBase).where(KnowledgeBase.id == kb_id))
        return True

    # ------------------------------------------------------------------ documents
    async def add_document(
        self,
        kb_id: str,
        *,
        name: str,
        kind: str,
        size: int,
        chunks: Sequence[str],
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> KnowledgeDocument:
        """Store a document and its chunks (and their vectors) in one transaction."""
        doc = KnowledgeDocument(kb_id=kb_id, name=name, kind=kind, size=size, chunk_count=len(chunks))
        async with self.sessionmaker.begin() as session:
            session.add(doc)
            await session.flush()
            session.add_all(
                KnowledgeChunk(
                    kb_id=kb_id,
                    document_id=doc.id,
                    position=i,
                    content=chunk,
                    embedding=list(vectors[i]) if vectors is not None else None,
                )
                for i, chunk in enumerate(chunks)
            )
        return doc

    async def documents(self, kb_id: str) -> list[KnowledgeDocument]:
        return await self._all(
            select(KnowledgeDocument)
            .where(KnowledgeDocument.kb_id == kb_id)
            .order_by(KnowledgeDocument.created_at, KnowledgeDocument.name)
        )

    async def delete_document(self, kb_id: str, document_id: str) -> bool:
        async with self.sessionmaker.begin() as session:
            await session.execute(delete(KnowledgeChunk).where(KnowledgeChunk.document_id == document_id))
            result = await session.execute(
                delete(KnowledgeDocument).where(
                    KnowledgeDocument.kb_id == kb_id, KnowledgeDocument.id == document_id
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ chunks and search
    def _chunk_query(self) -> Any:
        return select(
            KnowledgeChunk.id,
            KnowledgeChunk.kb_id,
            KnowledgeChunk.document_id,
            KnowledgeDocument.name,
            KnowledgeChunk.position,
            KnowledgeChunk.content,
            KnowledgeChunk.embedding,
        ).join(KnowledgeDocument, KnowledgeDocument.id == KnowledgeChunk.document_id)

    async def _chunks(self, stmt: Any, params: dict[str, Any] | None = None) -> list[ChunkRow]:
        async with self.sessionmaker() as session:
            rows = (await session.execute(stmt, params or {})).all()
        return [ChunkRow(*row) for row in rows]

    async def chunks(self, kb_id: str, *, document_id: str | None = None, limit: int = 100) -> list[ChunkRow]:
        stmt = self._chunk_query().where(KnowledgeChunk.kb_id == kb_id)
        if document_id is not None:
            stmt = stmt.where(KnowledgeChunk.document_id == document_id)
        return await self._chunks(
            stmt.order_by(KnowledgeDocument.created_at, KnowledgeChunk.position).limit(limit)
        )

    async def full_text(self, kb_ids: Sequence[str], terms: Sequence[str], *, limit: int) -> list[ChunkRow]:
        """Chunks of `kb_ids` that contain any of `terms` (stemmed), best full-text rank first."""
        if not kb_ids or not terms:
            return []
        async with self.sessionmaker() as session:
            dialect = session.bind.dialect.name if session.bind is not None else ""
            if dialect == "sqlite":
                stmt: Any = (
                    text(_SQLITE_SEARCH)
                    .bindparams(bindparam("ids", expanding=True))
                    .columns(*_COLUMNS, embedding=JSONValue)
                )
                params = {"q": _fts_sqlite(terms), "ids": list(kb_ids), "n": limit}
            else:
                vector = func.to_tsvector(text("'english'"), KnowledgeChunk.content)
                query = func.to_tsquery(text("'english'"), bindparam("q"))
                stmt = (
                    self._chunk_query()
                    .where(KnowledgeChunk.kb_id.in_(list(kb_ids)), vector.op("@@")(query))
                    .order_by(func.ts_rank(vector, query).desc(), KnowledgeChunk.id)
                    .limit(limit)
                )
                params = {"q": _fts_pg(terms)}
            rows = (await session.execute(stmt, params)).all()
        return [ChunkRow(*row) for row in rows]

    async def with_vectors(self, kb_ids: Sequence[str]) -> list[ChunkRow]:
        """Every chunk of `kb_ids` that has a vector (for the similarity the service computes)."""
        if not kb_ids:
            return []
        return await self._chunks(
            self._chunk_query().where(
                KnowledgeChunk.kb_id.in_(list(kb_ids)), KnowledgeChunk.embedding.is_not(None)
            )
        )
