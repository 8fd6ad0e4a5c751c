"""The text of an uploaded document: txt, md, html, pdf (pypdf) and docx (python-docx).

The type comes from the file name's extension (what the person chose to upload), checked against
the content where a format has a signature (PDF's `%PDF`, DOCX's zip header), so a renamed file
gets a clear refusal instead of garbage chunks. Size is bounded before any parsing.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

from bs4 import BeautifulSoup
from docx import Document as DocxDocument
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from plait.knowledge.errors import UnsupportedDocument

MAX_DOCUMENT_BYTES = 10 * 1024 * 1024
SUPPORTED_TYPES: dict[str, str] = {
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}


def document_type(filename: str) -> str:
    """`txt`, `md`, `html`, `pdf` or `docx` for a file name; UnsupportedDocument otherwise."""
    suffix = PurePath(filename).suffix.lower()
    kind = SUPPORTED_TYPES.get(suffix)
    if kind is None:
        raise UnsupportedDocument(
            f"{filename!r}: plait cannot read {suffix or 'files without an extension'} documents",
            hint="upload a .txt, .md, .html, .pdf or .docx file",
        )
    return kind


def _decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _pdf(data: bytes, filename: str) -> str:
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise UnsupportedDocument(f"{filename!r} is not a PDF file", hint="upload the PDF itself")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise UnsupportedDocument(
                f"{filename!r} is an encrypted PDF", hint="upload a copy without a password"
            )
        return "\n\n".join((page.extract_text() or "") for page in reader.pages)
    except PyPdfError as exc:
        raise UnsupportedDocument(f"{filename!r}: the PDF cannot be read ({exc})") from exc


def _docx(data: bytes, filename: str) -> str:
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise UnsupportedDocument(
            f"{filename!r} is not a DOCX file", hint="save it as .docx and upload again"
        )
    try:
        doc = DocxDocument(io.BytesIO(data))
    except (KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise UnsupportedDocument(f"{filename!r}: the DOCX file cannot be read ({exc})") from exc
    parts = [p.text for p in doc.paragraphs]
    for table in doc.tables:
        for row in table.rows:
            parts.append(" | ".join(cell.text for cell in row.cells))
    return "\n\n".join(p for p in parts if p.strip())


def _html(data: bytes) -> str:
    soup = BeautifulSoup(_decode(data), "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    return soup.get_text("\n")


def extract_text(filename: str, data: bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> tuple[str, str]:
    """(type, text) of an uploaded document; UnsupportedDocument for other types, files over
    `max_bytes`, unreadable files and files without any text."""
    kind = document_type(filename)
    if len(data) > max_bytes:
        raise UnsupportedDocument(
            f"{filename!r} is {len(data)} bytes, over the {max_bytes}-byte limit for a document",
            hint="split it into smaller files",
        )
    if kind == "pdf":
        text = _pdf(data, filename)
    elif kind == "docx":
        text = _docx(data, filename)
    elif kind == "html":
        text = _html(data)
    else:
        text = _decode(data)
    text = text.replace("\x00", "")  # no database stores NUL in text
    if not text.strip():
        raise UnsupportedDocument(
            f"{filename!r} has no text to index",
            hint="a scanned PDF needs OCR first; plait reads the text layer only",
        )
    return kind, text
