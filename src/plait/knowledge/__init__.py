"""Knowledge bases without SQL: reading uploaded documents into text, cutting text into chunks,
asking an OpenAI-compatible endpoint for embeddings, scoring and formatting search hits, and the
`KnowledgeSource` contract the `retrieval` node and tool search through.

The service layer implements `KnowledgeSource` over the store (full-text index plus vectors); this
package stays free of SQL, FastAPI and the engine, so nodes and tools can import it.
"""

from plait.knowledge.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_OVERLAP_CHARS, split_text
from plait.knowledge.embeddings import EmbeddingSettings, embed
from plait.knowledge.errors import KnowledgeError, UnsupportedDocument
from plait.knowledge.extract import MAX_DOCUMENT_BYTES, SUPPORTED_TYPES, document_type, extract_text
from plait.knowledge.search import (
    Hit,
    KnowledgeSource,
    SearchRequest,
    cosine,
    formalize,
    hybrid_score,
    keyword_similarity,
    query_terms,
)

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_OVERLAP_CHARS",
    "EmbeddingSettings",
    "MAX_DOCUMENT_BYTES",
    "SUPPORTED_TYPES",
    "Hit",
    "KnowledgeError",
    "KnowledgeSource",
    "SearchRequest",
    "UnsupportedDocument",
    "cosine",
    "document_type",
    "embed",
    "extract_text",
    "formalize",
    "hybrid_score",
    "keyword_similarity",
    "query_terms",
    "split_text",
]
