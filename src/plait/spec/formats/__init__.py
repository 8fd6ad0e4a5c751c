"""Other flow formats plait reads and writes (ARCHITECTURE section 3, Import/export).

`ragflow`: RAGFlow agent documents (`import_ragflow`, `export_ragflow`, `is_ragflow`). Each format
maps a foreign document to a `plait/flow@1` document and back; nothing here runs flows.
"""

from plait.spec.formats.ragflow import ImportResult, RagflowImportError, import_ragflow, is_ragflow

__all__ = ["ImportResult", "RagflowImportError", "import_ragflow", "is_ragflow"]
