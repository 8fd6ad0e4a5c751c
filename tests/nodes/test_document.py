"""The `document` node: markdown / HTML / text into md, html, txt, pdf and docx run artifacts,
read back with the real libraries (python-docx; the PDF's text with reportlab's own parser-free
check: the fonts and page structure are in the bytes)."""

from __future__ import annotations

import io
import re
import zlib

import pytest
from docx import Document as DocxDocument

import plait
from plait.engine.services import RunServices
from plait.nodes.artifacts import MemoryArtifacts

REPORT = """# Quarterly report

Sales went **up** by *12%* — see [details](https://example.org/q3).

- North: 40
- South: 60

| region | sales |
|---|---|
| North | 40 |
| South | 60 |

```
total = 100
```
"""


def doc_flow(fmt: str, content: str = "{{inputs.text}}", **config) -> dict:
    return {
        "schema": "plait/flow@1",
        "id": "docs",
        "nodes": [{"id": "doc", "type": "document", "config": {"content": content, "format": fmt, **config}}],
        "edges": [],
    }


async def _run(fmt: str, text: str = REPORT, **config):
    store = MemoryArtifacts()
    result = await plait.run(doc_flow(fmt, **config), {"text": text}, services=RunServices(artifacts=store))
    assert result.status == "completed", result.error
    out = result.nodes["doc"].output
    found = await store.get(result.run_id, out["artifact_id"])
    assert found is not None
    artifact, data = found
    assert out["size"] == len(data) == artifact.size
    assert out["url"] == f"/api/v1/runs/{result.run_id}/artifacts/{out['artifact_id']}"
    return out, data


def _pdf_text(data: bytes) -> str:
    """The text drawn in a reportlab PDF (its content streams are Flate-compressed; TrueType text
    is hex glyph ids, so check structure plus the literal strings of standard fonts)."""
    streams = re.findall(rb"stream\r?\n(.*?)endstream", data, re.S)
    out = []
    for s in streams:
        try:
            out.append(zlib.decompress(s).decode("latin-1"))
        except zlib.error:
            continue
    return "\n".join(out)


async def test_docx_has_headings_lists_tables_and_runs():
    out, data = await _run("docx", filename="Q3 report")
    assert out["filename"] == "Q3 report.docx" and out["format"] == "docx"
    assert out["mime_type"].endswith("wordprocessingml.document")
    doc = DocxDocument(io.BytesIO(data))
    paragraphs = [(p.style.name, p.text) for p in doc.paragraphs if p.text.strip()]
    assert ("Heading 1", "Quarterly report") in paragraphs
    assert ("List Bullet", "North: 40") in paragraphs and ("List Bullet", "South: 60") in paragraphs
    body = next(p for p in doc.paragraphs if p.text.startswith("Sales went"))
    assert [r.text for r in body.runs if r.bold] == ["up"]
    assert [r.text for r in body.runs if r.italic] == ["12%"]
    table = doc.tables[0]
    assert [[c.text for c in row.cells] for row in table.rows] == [
        ["region", "sales"],
        ["North", "40"],
        ["South", "60"],
    ]
    assert any("total = 100" in p.text for p in doc.paragraphs)


async def test_pdf_is_a_real_pdf_with_pages():
    out, data = await _run("pdf", title="Q3")
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert out["mime_type"] == "application/pdf" and out["filename"] == "document.pdf"
    assert b"/Type /Page" in data and b"/Title" in data
    assert _pdf_text(data)  # content streams decode: text was drawn


async def test_html_md_and_txt():
    out, data = await _run("html")
    page = data.decode()
    assert page.startswith("<!DOCTYPE html>") and "<h1>Quarterly report</h1>" in page and "<table>" in page
    assert out["mime_type"].startswith("text/html")
    _, md = await _run("markdown")  # RAGFlow's name for md
    assert md.decode() == REPORT
    _, txt = await _run("txt")
    text = txt.decode()
    assert "Quarterly report" in text and "**" not in text and "<" not in text


async def test_html_and_text_inputs():
    _, data = await _run("docx", text="<h2>Hi</h2><p>A <b>bold</b> move</p>", input_format="html")
    doc = DocxDocument(io.BytesIO(data))
    assert [(p.style.name, p.text) for p in doc.paragraphs] == [
        ("Heading 2", "Hi"),
        ("Normal", "A bold move"),
    ]
    _, data = await _run("html", text="a < b\n\nsecond", input_format="text")
    assert "<p>a &lt; b</p>" in data.decode() and "<p>second</p>" in data.decode()


async def test_size_limit_and_empty_content_are_clear(monkeypatch):
    monkeypatch.setenv("PLAIT_MAX_ARTIFACT_BYTES", "1000")
    result = await plait.run(doc_flow("html"), {"text": "word " * 2000})
    assert result.status == "failed"
    error = result.nodes["doc"].error
    assert "document node 'doc'" in error and "over the limit of 1,000 bytes" in error
    assert "PLAIT_MAX_ARTIFACT_BYTES" in error
    monkeypatch.delenv("PLAIT_MAX_ARTIFACT_BYTES")
    result = await plait.run(doc_flow("pdf"), {"text": ""})
    assert "nothing to write" in result.nodes["doc"].error


def test_unknown_format_is_a_validation_error():
    with pytest.raises(plait.FlowValidationError) as exc:
        plait.load_flow(doc_flow("pptx"))
    assert "format" in str(exc.value)
