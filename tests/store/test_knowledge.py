"""Knowledge bases in the store and the service, on SQLite and PostgreSQL: documents of each
type are read, chunked and indexed; full-text search (FTS5 / tsvector) finds the right chunk;
embeddings from a real local OpenAI-compatible server make search hybrid; owners are isolated;
deleting a document or a base removes its chunks from the index."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from embeddings_server import DIMS, EmbeddingsServer, embeddings_server
from knowledge_docs import QUESTION, REFUNDS, three_documents
from plait.knowledge import KnowledgeError, SearchRequest
from plait.service import Conflict, Invalid, NotFound
from plait.service.knowledge import KnowledgeService, NewBase
from plait.store import Store


@pytest.fixture
def embeddings() -> Iterator[EmbeddingsServer]:
    yield from embeddings_server()


async def _user(store: Store, email: str) -> str:
    user = await store.users.create(email=email, role="editor")
    return user.id


async def _base_with_documents(svc: KnowledgeService, owner: str | None, **fields: object) -> str:
    kb = await svc.create(NewBase(name="support", **fields), owner_id=owner)  # type: ignore[arg-type]
    for name, data in three_documents():
        doc = await svc.upload(kb.id, name, data, owner_id=owner)
        assert doc.chunk_count >= 1
    return kb.id


async def test_full_text_search_finds_the_chunk_of_each_type(store: Store) -> None:
    svc = KnowledgeService(store)
    owner = await _user(store, "kb@example.com")
    kb = await _base_with_documents(svc, owner)
    (stats,) = await svc.list_bases(owner_id=owner)
    assert (stats.documents, stats.chunks) == (3, 3)
    kinds = {d.name: d.kind for d in await svc.documents(kb, owner_id=owner)}
    assert kinds == {"shipping.txt": "txt", "refunds.pdf": "pdf", "warranty.docx": "docx"}

    hits = await svc.search(SearchRequest(QUESTION, [kb], top_n=3), owner_id=owner)
    assert hits[0].document_name == "refunds.pdf"
    assert "30 days" in hits[0].content
    assert hits[0].vector_similarity is None and 0 < hits[0].similarity <= 1
    # by name too; each document is found by its own words
    for query, name in (("express delivery price", "shipping.txt"), ("kettle thermostat", "warranty.docx")):
        (best, *_) = await svc.search(SearchRequest(query, ["support"], top_n=1), owner_id=owner)
        assert best.document_name == name
    # the threshold drops weak matches
    assert await svc.search(SearchRequest(QUESTION, [kb], similarity_threshold=0.99), owner_id=owner) == []


async def test_owners_are_isolated_and_unknown_bases_are_named(store: Store) -> None:
    svc = KnowledgeService(store)
    alice = await _user(store, "alice@example.com")
    bob = await _user(store, "bob@example.com")
    kb = await _base_with_documents(svc, alice)
    with pytest.raises(NotFound):
        await svc.get(kb, owner_id=bob)
    assert await svc.list_bases(owner_id=bob) == []
    with pytest.raises(KnowledgeError) as err:
        await svc.search(SearchRequest(QUESTION, [kb, "nope"]), owner_id=bob)
    assert repr(kb) in err.value.message and "'nope'" in err.value.message
    # bob may use the same name; alice may not twice
    await svc.create(NewBase(name="support"), owner_id=bob)
    with pytest.raises(Conflict):
        await svc.create(NewBase(name="support"), owner_id=alice)


async def test_bad_documents_are_refused_clearly(store: Store) -> None:
    svc = KnowledgeService(store)
    kb = await svc.create(NewBase(name="k"), owner_id=None)
    for name, data, words in (
        ("sheet.xlsx", b"PK..", "cannot read .xlsx"),
        ("fake.pdf", b"hello", "not a PDF"),
        ("fake.docx", b"hello", "not a DOCX"),
        ("empty.txt", b"   ", "no text"),
    ):
        with pytest.raises(Invalid) as err:
            await svc.upload(kb.id, name, data, owner_id=None)
        assert words in err.value.message, err.value.message


async def test_deleting_removes_chunks_from_the_index(store: Store) -> None:
    svc = KnowledgeService(store)
    kb = await _base_with_documents(svc, None)
    refunds = next(d for d in await svc.documents(kb, owner_id=None) if d.name == "refunds.pdf")
    await svc.delete_document(kb, refunds.id, owner_id=None)
    hits = await svc.search(SearchRequest("refund damaged goods", [kb]), owner_id=None)
    assert all(h.document_name != "refunds.pdf" for h in hits)
    await svc.delete(kb, owner_id=None)
    assert await svc.list_bases(owner_id=None) == []
    kb2 = await _base_with_documents(svc, None)
    assert len(await svc.search(SearchRequest(QUESTION, [kb2], top_n=1), owner_id=None)) == 1


async def test_embeddings_make_search_hybrid(store: Store, embeddings: EmbeddingsServer) -> None:
    svc = KnowledgeService(store)
    owner = await _user(store, "vec@example.com")
    await store.variables.set("EMBED_KEY", "sk-test", owner_id=owner, is_secret=True)
    kb = await _base_with_documents(
        svc,
        owner,
        embedding_url=embeddings.base_url,
        embedding_model="hash-256",
        embedding_key_variable="EMBED_KEY",
    )
    assert embeddings.authorization == "Bearer sk-test"
    chunks = await svc.chunks(kb, owner_id=owner)
    assert all(c.embedding and len(c.embedding) == DIMS for c in chunks)
    # No word of this query is in the refunds chunk; its meaning (a synonym) is.
    query = "reimbursement"
    only_words = await svc.search(
        SearchRequest(query, [kb], keywords_similarity_weight=1.0, similarity_threshold=0.1), owner_id=owner
    )
    assert only_words == []
    hits = await svc.search(
        SearchRequest(query, [kb], keywords_similarity_weight=0.3, similarity_threshold=0.05), owner_id=owner
    )
    assert hits and hits[0].document_name == "refunds.pdf"
    assert hits[0].vector_similarity is not None and hits[0].vector_similarity > 0
    assert " ".join(hits[0].content.split()) == REFUNDS  # the PDF's lines, joined


async def test_embedding_failures_are_clear(store: Store, embeddings: EmbeddingsServer) -> None:
    svc = KnowledgeService(store)
    with pytest.raises(Invalid):
        await svc.create(NewBase(name="half", embedding_url=embeddings.base_url), owner_id=None)
    kb = await svc.create(
        NewBase(
            name="v", embedding_url=embeddings.base_url, embedding_model="m", embedding_key_variable="NOPE"
        ),
        owner_id=None,
    )
    with pytest.raises(Invalid) as err:
        await svc.upload(kb.id, "a.txt", b"some text", owner_id=None)
    assert "'NOPE'" in err.value.message
    kb2 = await svc.create(
        NewBase(name="v2", embedding_url=embeddings.base_url, embedding_model="m"), owner_id=None
    )
    embeddings.fail = True
    with pytest.raises(Invalid) as err:
        await svc.upload(kb2.id, "a.txt", b"some text", owner_id=None)
    assert "answered 500" in err.value.message
