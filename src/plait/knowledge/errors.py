"""The errors of knowledge bases: one base, and the refusal of a document plait cannot read."""

from __future__ import annotations

from plait.errors import PlaitError


class KnowledgeError(PlaitError):
    """A knowledge base operation failed in a way the caller should see (a bad file, an unknown
    base, an embeddings endpoint that answered with an error)."""

    code = "knowledge_error"


class UnsupportedDocument(KnowledgeError, ValueError):
    """The uploaded file is of a type plait does not read, too large, or unreadable."""

    code = "unsupported_document"
