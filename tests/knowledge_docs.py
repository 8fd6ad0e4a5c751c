"""Three small documents for the knowledge base tests, made in the test (txt, and PDF with
reportlab, DOCX with python-docx), each about one topic, so a question has one right chunk."""

from __future__ import annotations

import io

from docx import Document
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

SHIPPING = (
    "Shipping: orders leave our warehouse in Lyon within two business days. "
    "Express delivery costs 15 euros and arrives the next day."
)
REFUNDS = (
    "Refund policy: damaged goods are refunded in full within 30 days of delivery. "
    "Send a photo of the damage to support and keep the packaging."
)
WARRANTY = (
    "Warranty: every kettle has a three year warranty covering the heating element "
    "and the thermostat, but not limescale."
)
QUESTION = "How many days do I have to get a refund for damaged goods?"


def pdf_bytes(text: str) -> bytes:
    buf = io.BytesIO()
    page = canvas.Canvas(buf, pagesize=A4)
    y = 800
    line = ""
    for word in text.split():  # wrap by hand: reportlab's canvas draws one line per call
        if len(line) + len(word) > 80:
            page.drawString(50, y, line)
            y -= 16
            line = ""
        line = f"{line} {word}".strip()
    page.drawString(50, y, line)
    page.save()
    return buf.getvalue()


def docx_bytes(text: str) -> bytes:
    doc = Document()
    doc.add_heading("Kettles", level=1)
    doc.add_paragraph(text)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def three_documents() -> list[tuple[str, bytes]]:
    """(file name, bytes) of the txt, pdf and docx documents."""
    return [
        ("shipping.txt", SHIPPING.encode()),
        ("refunds.pdf", pdf_bytes(REFUNDS)),
        ("warranty.docx", docx_bytes(WARRANTY)),
    ]
