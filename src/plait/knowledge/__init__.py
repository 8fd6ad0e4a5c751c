"""Knowledge bases without SQL: reading uploaded documents into text (`plait.knowledge.extract`),
cutting text into chunks, asking an OpenAI-compatible endpoint for embeddings
(`plait.knowledge.embeddings`), scoring and formatting search hits, and the `KnowledgeSource`
contract the `retrieval` node and tool search through.

The service layer implements `KnowledgeSource` over the store (full-text index plus vectors); this
package stays free of SQL, FastAPI and the engine, so nodes and tools can import it. The package
itself imports only the light modules: the document readers (pypdf, python-docx) load with
`plait.knowledge.extract`, which only the service imports, not with every `import plait`.
"""

from plait.knowledge.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_OVERLAP_CHARS, split_text
from plait.knowledge.errors import KnowledgeError, UnsupportedDocument
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
    "Hit",
    "KnowledgeError",
    "KnowledgeSource",
    "SearchRequest",
    "UnsupportedDocument",
    "cosine",
    "formalize",
    "hybrid_score",
    "keyword_similarity",
    "query_terms",
    "split_text",
]
