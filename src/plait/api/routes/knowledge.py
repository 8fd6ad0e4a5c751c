"""`/api/v1/knowledge`: the caller's knowledge bases, their documents and chunks, and a search
to try them (what the `retrieval` node runs). Each user has their own bases, as components: a
base of another user is a 404. A document is uploaded as the request body itself
(`POST .../documents?filename=notes.pdf`, any content type); its extension says how it is read.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

import plait.api.knowledge_schemas as ks
from plait.api.deps import ERRORS, READ, WRITE, Caller, Svc, caller, path_id
from plait.knowledge import KnowledgeError, SearchRequest, formalize
from plait.service import Invalid
from plait.service.knowledge import NewBase, base_view
from plait.store.models import KnowledgeBase

router = APIRouter(
    prefix="/api/v1/knowledge", tags=["knowledge"], dependencies=[Depends(caller)], responses=ERRORS
)


async def _own_base(svc: Svc, who: Caller, kb_id: str) -> KnowledgeBase:
    """The caller's base named by the path (404 for another user's)."""
    return await svc.knowledge.get(path_id(kb_id, "knowledge base"), owner_id=who.user_id)


OwnBase = Annotated[KnowledgeBase, Depends(_own_base)]


@router.get("", response_model=list[ks.KnowledgeBaseOut], dependencies=[READ])
async def list_bases(svc: Svc, who: Caller) -> Any:
    """The caller's knowledge bases with their document and chunk counts."""
    return [base_view(s) for s in await svc.knowledge.list_bases(owner_id=who.user_id)]


@router.post("", status_code=201, response_model=ks.KnowledgeBaseOut, dependencies=[WRITE])
async def create_base(svc: Svc, who: Caller, body: ks.KnowledgeBaseBody) -> Any:
    """A new, empty knowledge base (409 when the caller has one of that name)."""
    kb = await svc.knowledge.create(NewBase(**body.model_dump()), owner_id=who.user_id)
    return base_view(await svc.knowledge.stats(kb.id, owner_id=who.user_id))


@router.get("/{kb_id}", response_model=ks.KnowledgeBaseOut, dependencies=[READ])
async def get_base(svc: Svc, who: Caller, kb: OwnBase) -> Any:
    return base_view(await svc.knowledge.stats(kb.id, owner_id=who.user_id))


@router.delete("/{kb_id}", status_code=204, dependencies=[WRITE])
async def delete_base(svc: Svc, who: Caller, kb: OwnBase) -> Response:
    """Delete the base, its documents and chunks."""
    await svc.knowledge.delete(kb.id, owner_id=who.user_id)
    return Response(status_code=204)


@router.get("/{kb_id}/documents", response_model=list[ks.KnowledgeDocumentOut], dependencies=[READ])
async def list_documents(svc: Svc, who: Caller, kb: OwnBase) -> Any:
    return await svc.knowledge.documents(kb.id, owner_id=who.user_id)


@router.post(
    "/{kb_id}/documents",
    status_code=201,
    response_model=ks.KnowledgeDocumentOut,
    dependencies=[WRITE],
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def upload_document(
    svc: Svc,
    who: Caller,
    kb: OwnBase,
    request: Request,
    filename: Annotated[str, Query(min_length=1, max_length=255, description="e.g. notes.pdf")],
) -> Any:
    """Upload one document as the request body (.txt, .md, .html, .pdf or .docx, up to 10 MiB):
    it is read, cut into chunks, embedded when the base has embeddings, and indexed. 422 for
    other types, unreadable files or a failing embeddings endpoint."""
    data = await request.body()
    return await svc.knowledge.upload(kb.id, filename, data, owner_id=who.user_id)


@router.delete("/{kb_id}/documents/{document_id}", status_code=204, dependencies=[WRITE])
async def delete_document(svc: Svc, who: Caller, kb: OwnBase, document_id: str) -> Response:
    await svc.knowledge.delete_document(kb.id, path_id(document_id, "document"), owner_id=who.user_id)
    return Response(status_code=204)


@router.get("/{kb_id}/chunks", response_model=list[ks.KnowledgeChunkOut], dependencies=[READ])
async def list_chunks(
    svc: Svc,
    who: Caller,
    kb: OwnBase,
    document_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Any:
    """The base's chunks in document order (of one document with `document_id`)."""
    doc = None if document_id is None else path_id(document_id, "document")
    rows = await svc.knowledge.chunks(kb.id, owner_id=who.user_id, document_id=doc, limit=limit)
    return [
        {
            "id": r.id,
            "document_id": r.document_id,
            "document_name": r.document_name,
            "position": r.position,
            "content": r.content,
            "has_vector": r.embedding is not None,
        }
        for r in rows
    ]


@router.post("/{kb_id}/search", response_model=ks.KnowledgeSearchOut, dependencies=[READ])
async def search_base(svc: Svc, who: Caller, kb: OwnBase, body: ks.KnowledgeSearchBody) -> Any:
    """Search the base as a `retrieval` node would: the best `top_n` chunks over
    `similarity_threshold`, and the text a prompt gets (`content`)."""
    request = SearchRequest(
        query=body.query,
        kb_ids=[kb.id],
        top_n=body.top_n,
        similarity_threshold=body.similarity_threshold,
        keywords_similarity_weight=body.keywords_similarity_weight,
    )
    try:
        hits = await svc.knowledge.search(request, owner_id=who.user_id)
    except KnowledgeError as exc:
        raise Invalid(exc.message, hint=exc.hint, code="search_failed") from exc
    return {"content": formalize(hits), "chunks": [h.as_dict() for h in hits]}
