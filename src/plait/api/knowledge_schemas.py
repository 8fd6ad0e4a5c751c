"""Request and response bodies of `/api/v1/knowledge` (knowledge bases, documents, chunks, search)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from plait.knowledge.search import DEFAULT_KEYWORDS_WEIGHT, DEFAULT_SIMILARITY_THRESHOLD, DEFAULT_TOP_N


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KnowledgeBaseBody(_Body):
    name: str = Field(..., min_length=1, max_length=255)
    description: str = Field("", max_length=10_000)
    embedding_url: str | None = Field(
        None,
        max_length=2048,
        description="An OpenAI-compatible API base (e.g. http://127.0.0.1:8080/v1); with "
        "embedding_model, chunks get vectors and search is hybrid. Empty: full-text search only.",
    )
    embedding_model: str | None = Field(None, max_length=255)
    embedding_key_variable: str | None = Field(
        None, max_length=255, description="The NAME of your variable that holds the API key (never the key)."
    )
    chunk_chars: int = Field(800, ge=50, le=20_000, description="About how many characters a chunk has.")
    overlap_chars: int = Field(120, ge=0, le=10_000, description="Characters shared by consecutive chunks.")


class KnowledgeBaseOut(BaseModel):
    id: str
    name: str
    description: str
    embedding_url: str | None
    embedding_model: str | None
    embedding_key_variable: str | None
    chunk_chars: int
    overlap_chars: int
    documents: int
    chunks: int
    search: str = Field(..., description="'full_text', or 'hybrid' when the base has embeddings.")
    created_at: float
    updated_at: float


class KnowledgeDocumentOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    kb_id: str
    name: str
    kind: str = Field(..., description="txt, md, html, pdf or docx.")
    size: int
    chunk_count: int
    created_at: float


class KnowledgeChunkOut(BaseModel):
    id: int
    document_id: str
    document_name: str
    position: int
    content: str
    has_vector: bool


class KnowledgeSearchBody(_Body):
    query: str = Field(..., min_length=1, max_length=10_000)
    top_n: int = Field(DEFAULT_TOP_N, ge=1, le=100)
    similarity_threshold: float = Field(DEFAULT_SIMILARITY_THRESHOLD, ge=0, le=1)
    keywords_similarity_weight: float = Field(DEFAULT_KEYWORDS_WEIGHT, ge=0, le=1)


class KnowledgeHitOut(BaseModel):
    chunk_id: int
    content: str
    document_id: str
    document_name: str
    kb_id: str
    kb_name: str
    position: int
    similarity: float
    term_similarity: float
    vector_similarity: float | None


class KnowledgeSearchOut(BaseModel):
    content: str = Field(..., description="The hits as one text for a prompt (RAGFlow's formalized_content).")
    chunks: list[KnowledgeHitOut]
