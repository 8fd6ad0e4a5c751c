"""Turning markdown, HTML or text into md, html, txt, pdf and docx bytes (the `document` node).

One intermediate: everything becomes HTML first (markdown through markdown-it, CommonMark plus
tables; text escaped into paragraphs), then each writer walks that HTML with BeautifulSoup. The
PDF writer builds reportlab flowables (headings, paragraphs with bold/italic/code/links, lists,
code blocks, tables, quotes, rules), the DOCX writer python-docx paragraphs and tables. Both are
permissively licensed (BSD, MIT): no AGPL library is involved, as seed 003 requires.

PDF text uses DejaVu Sans when the system has it (most Linux images do; wide Unicode coverage),
else reportlab's bundled Vera.
"""

from __future__ import annotations

import html as html_lib
import io
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup
from bs4.element import NavigableString, PageElement, Tag
from docx import Document as DocxDocument
from docx.shared import Pt
from markdown_it import MarkdownIt
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.platypus import (
    HRFlowable,
    ListFlowable,
    ListItem,
    Paragraph,
    Preformatted,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)
from reportlab.platypus.flowables import Flowable

from plait.tools.crawler import extract

INPUT_FORMATS = ("markdown", "html", "text")
OUTPUT_FORMATS = ("md", "html", "txt", "pdf", "docx")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_FONT_DIRS = (Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/dejavu"))


def to_html_body(content: str, input_format: str) -> str:
    """The content as an HTML fragment."""
    if input_format == "html":
        return content
    if input_format == "text":
        paragraphs = [p for p in re.split(r"\n\s*\n", content) if p.strip()]
        return "".join(
            "<p>" + html_lib.escape(p.strip()).replace("\n", "<br>") + "</p>\n" for p in paragraphs
        )
    return str(MarkdownIt("commonmark", {"html": False}).enable("table").render(content))


def html_page(body: str, title: str) -> str:
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html_lib.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:48rem;margin:2rem auto;line-height:1.5}"
        "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.25rem .5rem}"
        "pre{background:#f4f4f4;padding:.5rem;overflow:auto}</style>"
        f"</head><body>\n{body}</body></html>\n"
    )


def render(content: str, input_format: str, output_format: str, title: str) -> bytes:
    """The file's bytes (see the module docstring)."""
    if output_format == "md":
        if input_format == "html":
            return extract(content, "markdown")[1].encode()
        return content.encode()
    if output_format == "txt":
        if input_format == "text":
            return content.encode()
        return extract(html_page(to_html_body(content, input_format), title), "text")[1].encode()
    body = to_html_body(content, input_format)
    if output_format == "html":
        return html_page(body, title).encode()
    if output_format == "pdf":
        return _pdf(body, title)
    return _docx(body, title)


# --------------------------------------------------------------------------- PDF


@lru_cache(maxsize=1)
def _fonts() -> tuple[str, str, str, str, str]:
    """(regular, bold, italic, bold italic, mono) font names, registered once per process."""
    for folder in _FONT_DIRS:
        files = {
            "PlaitSans": folder / "DejaVuSans.ttf",
            "PlaitSans-Bold": folder / "DejaVuSans-Bold.ttf",
            "PlaitSans-Oblique": folder / "DejaVuSans-Oblique.ttf",
            "PlaitSans-BoldOblique": folder / "DejaVuSans-BoldOblique.ttf",
            "PlaitMono": folder / "DejaVuSansMono.ttf",
        }
        if all(p.is_file() for p in files.values()):
            for name, path in files.items():
                pdfmetrics.registerFont(TTFont(name, str(path)))
            pdfmetrics.registerFontFamily(
                "PlaitSans", normal="PlaitSans", bold="PlaitSans-Bold",
                italic="PlaitSans-Oblique", boldItalic="PlaitSans-BoldOblique",
            )  # fmt: skip
            return ("PlaitSans", "PlaitSans-Bold", "PlaitSans-Oblique", "PlaitSans-BoldOblique", "PlaitMono")
    for name, file in (
        ("Vera", "Vera.ttf"),
        ("VeraBd", "VeraBd.ttf"),
        ("VeraIt", "VeraIt.ttf"),
        ("VeraBI", "VeraBI.ttf"),
    ):
        pdfmetrics.registerFont(TTFont(name, file))
    pdfmetrics.registerFontFamily("Vera", normal="Vera", bold="VeraBd", italic="VeraIt", boldItalic="VeraBI")
    return ("Vera", "VeraBd", "VeraIt", "VeraBI", "Courier")


def _tags(el: Tag, names: str | tuple[str, ...], *, recursive: bool = True) -> list[Tag]:
    return [t for t in el.find_all(names, recursive=recursive) if isinstance(t, Tag)]


def _inline(el: PageElement, mono: str) -> str:
    """reportlab's paragraph markup for an element's inline content (escaped)."""
    if isinstance(el, NavigableString):
        return html_lib.escape(str(el), quote=False) if type(el) is NavigableString else ""
    if not isinstance(el, Tag):
        return ""
    inner = "".join(_inline(c, mono) for c in el.children)
    name = el.name
    if name in ("strong", "b"):
        return f"<b>{inner}</b>"
    if name in ("em", "i"):
        return f"<i>{inner}</i>"
    if name in ("u", "ins"):
        return f"<u>{inner}</u>"
    if name in ("s", "del", "strike"):
        return f"<strike>{inner}</strike>"
    if name == "code":
        return f'<font face="{mono}">{inner}</font>'
    if name == "br":
        return "<br/>"
    if name == "a":
        href = str(el.get("href") or "")
        if href.startswith(("http://", "https://", "mailto:")):
            return f'<a href="{html_lib.escape(href)}" color="blue"><u>{inner}</u></a>'
        return inner
    if name == "img":
        return html_lib.escape(str(el.get("alt") or ""), quote=False)
    return inner


def _pdf(body: str, title: str) -> bytes:
    regular, bold, _italic, _bi, mono = _fonts()
    sheet = getSampleStyleSheet()
    base = ParagraphStyle("PlaitBody", parent=sheet["BodyText"], fontName=regular, fontSize=11, leading=15)
    heads = {
        f"h{i}": ParagraphStyle(
            f"PlaitH{i}",
            parent=base,
            fontName=bold,
            fontSize=size,
            leading=size * 1.25,
            spaceBefore=10,
            spaceAfter=6,
        )  # fmt: skip
        for i, size in enumerate((20, 16, 14, 12.5, 11.5, 11), start=1)
    }
    code = ParagraphStyle(
        "PlaitCode", parent=base, fontName=mono, fontSize=9, leading=12, backColor=colors.whitesmoke
    )
    quote = ParagraphStyle("PlaitQuote", parent=base, leftIndent=14, textColor=colors.dimgray)
    cell = ParagraphStyle("PlaitCell", parent=base, fontSize=9.5, leading=12)

    def blocks(el: Tag, style: ParagraphStyle = base) -> list[Flowable]:
        out: list[Flowable] = []
        loose: list[str] = []

        def flush() -> None:
            text = "".join(loose).strip()
            loose.clear()
            if text:
                out.append(Paragraph(text, style))

        for child in el.children:
            if not isinstance(child, Tag) or child.name not in _BLOCK_TAGS:
                loose.append(_inline(child, mono))
                continue
            flush()
            name = child.name
            if name in _HEADINGS:
                out.append(Paragraph(_inline(child, mono), heads[name]))
            elif name == "p":
                out.append(Paragraph(_inline(child, mono), style))
            elif name in ("ul", "ol"):
                items = [
                    ListItem(blocks(li, style) or [Paragraph("", style)], leftIndent=12)
                    for li in _tags(child, "li", recursive=False)
                ]
                if items:
                    out.append(
                        ListFlowable(
                            items,
                            bulletType="1" if name == "ol" else "bullet",
                            start=None if name == "ol" else "•",
                            leftIndent=14,
                            bulletFontName=regular,
                            bulletFontSize=9,
                        )  # fmt: skip
                    )
            elif name == "pre":
                out.append(Preformatted(child.get_text().rstrip("\n"), code))
            elif name == "blockquote":
                out.extend(blocks(child, quote))
            elif name == "hr":
                out.append(HRFlowable(width="100%", color=colors.lightgrey, spaceBefore=6, spaceAfter=6))
            elif name == "table":
                rows = [
                    [Paragraph(_inline(c, mono), cell) for c in _tags(tr, ("td", "th"))]
                    for tr in _tags(child, "tr")
                ]
                rows = [r for r in rows if r]
                if rows:
                    width = max(len(r) for r in rows)
                    rows = [r + [Paragraph("", cell)] * (width - len(r)) for r in rows]
                    table = Table(rows, repeatRows=1 if child.find("th") else 0)
                    table.setStyle(TableStyle([
                        ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                        ("VALIGN", (0, 0), (-1, -1), "TOP"),
                    ]))  # fmt: skip
                    out.append(table)
            else:  # div, section, article, li content...
                out.extend(blocks(child, style))
            out.append(Spacer(1, 2))
        flush()
        return out

    soup = BeautifulSoup(body, "html.parser")
    story = blocks(soup) or [Paragraph("", base)]
    buffer = io.BytesIO()
    doc = SimpleDocTemplate(
        buffer, pagesize=A4, title=title, author="plait", leftMargin=20 * mm, rightMargin=20 * mm,
        topMargin=18 * mm, bottomMargin=18 * mm,
    )  # fmt: skip

    def page_number(canvas: Any, document: Any) -> None:
        canvas.saveState()
        canvas.setFont(regular, 8)
        canvas.setFillColor(colors.grey)
        canvas.drawRightString(A4[0] - 20 * mm, 10 * mm, f"{document.page}")
        canvas.restoreState()

    doc.build(story, onFirstPage=page_number, onLaterPages=page_number)
    return buffer.getvalue()


_BLOCK_TAGS = frozenset(
    {*_HEADINGS, "p", "ul", "ol", "pre", "blockquote", "hr", "table", "div", "section", "article", "main",
     "header", "footer", "figure", "dl"}
)  # fmt: skip


# --------------------------------------------------------------------------- DOCX


def _docx(body: str, title: str) -> bytes:
    doc = DocxDocument()
    doc.core_properties.title = title
    doc.core_properties.author = "plait"

    def runs(
        paragraph: Any, el: PageElement, bold: bool = False, italic: bool = False, code: bool = False
    ) -> None:
        if isinstance(el, NavigableString):
            if type(el) is NavigableString and str(el):
                run = paragraph.add_run(str(el))
                run.bold, run.italic = bold or None, italic or None
                if code:
                    run.font.name = "Courier New"
            return
        if not isinstance(el, Tag):
            return
        name = el.name
        if name == "br":
            paragraph.add_run().add_break()
            return
        for child in el.children:
            runs(
                paragraph, child,
                bold=bold or name in ("strong", "b", "th"),
                italic=italic or name in ("em", "i"),
                code=code or name == "code",
            )  # fmt: skip

    def blocks(el: Tag, list_style: str | None = None, quote: bool = False) -> None:
        loose: list[PageElement] = []

        def flush() -> None:
            if any(str(x).strip() for x in loose):
                p = doc.add_paragraph(style=list_style or ("Quote" if quote else None))
                for x in loose:
                    runs(p, x)
            loose.clear()

        for child in el.children:
            if not isinstance(child, Tag) or child.name not in _BLOCK_TAGS:
                loose.append(child)
                continue
            flush()
            name = child.name
            if name in _HEADINGS:
                heading = doc.add_heading(level=int(name[1]))
                runs(heading, child)
            elif name == "p":
                p = doc.add_paragraph(style=list_style or ("Quote" if quote else None))
                runs(p, child)
                list_style = None if list_style else None
            elif name in ("ul", "ol"):
                style = "List Number" if name == "ol" else "List Bullet"
                for li in _tags(child, "li", recursive=False):
                    blocks(li, list_style=style, quote=quote)
            elif name == "pre":
                p = doc.add_paragraph()
                run = p.add_run(child.get_text().rstrip("\n"))
                run.font.name = "Courier New"
                run.font.size = Pt(9)
            elif name == "blockquote":
                blocks(child, quote=True)
            elif name == "hr":
                doc.add_paragraph("―" * 20)
            elif name == "table":
                rows = [_tags(tr, ("td", "th")) for tr in _tags(child, "tr")]
                rows = [r for r in rows if r]
                if rows:
                    width = max(len(r) for r in rows)
                    table = doc.add_table(rows=len(rows), cols=width)
                    table.style = "Table Grid"
                    for i, r in enumerate(rows):
                        for j, c in enumerate(r):
                            paragraph = table.cell(i, j).paragraphs[0]
                            runs(paragraph, c)
            else:
                blocks(child, list_style=list_style, quote=quote)
        flush()

    blocks(BeautifulSoup(body, "html.parser"))
    buffer = io.BytesIO()
    doc.save(buffer)
    return buffer.getvalue()
