"""The Knowledge page in the browser: create a base, upload a txt, a pdf and a docx (their chunk
counts show), see a clear refusal for another type, try a search that finds the right chunk,
delete a document and the base."""

from __future__ import annotations

from typing import Any

from knowledge_docs import QUESTION, three_documents

from .conftest import LiveServer

MIME = {
    "txt": "text/plain",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


def test_create_upload_search_and_delete(page: Any, live_server: LiveServer) -> None:
    page.goto("/")
    page.get_by_test_id("nav-knowledge").click()
    page.get_by_test_id("knowledge-page").wait_for()
    page.get_by_test_id("kb-empty").wait_for()

    page.get_by_test_id("kb-name").fill("support")
    page.get_by_test_id("kb-description").fill("orders and returns")
    page.get_by_test_id("kb-create-submit").click()
    page.get_by_test_id("kb-support").wait_for()
    page.get_by_test_id("kb-docs-empty").wait_for()

    files = [
        {"name": name, "mimeType": MIME[name.rsplit(".", 1)[1]], "buffer": data}
        for name, data in three_documents()
    ]
    page.get_by_test_id("kb-upload").set_input_files(files)
    for name, _ in three_documents():
        page.get_by_test_id(f"kb-doc-{name}").wait_for()
    assert page.get_by_test_id("kb-doc-refunds.pdf").get_by_test_id("kb-doc-chunks").inner_text() == "1"
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"kb-support\"]').textContent.includes('3 docs · 3 chunks')"
    )

    page.get_by_test_id("kb-upload").set_input_files(
        [{"name": "sheet.xlsx", "mimeType": "application/octet-stream", "buffer": b"PK\x03\x04"}]
    )
    error = page.get_by_test_id("kb-detail-error")
    error.wait_for()
    assert "sheet.xlsx" in error.inner_text() and ".xlsx" in error.inner_text()

    page.get_by_test_id("kb-query").fill(QUESTION)
    page.get_by_test_id("kb-search-submit").click()
    first = page.get_by_test_id("kb-hit").first
    first.wait_for()
    assert "refunds.pdf" in first.inner_text() and "30 days" in first.inner_text()

    # The base is the signed-in user's (the local admin, whom the API key also acts as).
    (listed,) = live_server.api.get("/api/v1/knowledge").json()
    assert (listed["name"], listed["documents"]) == ("support", 3)

    page.get_by_role("button", name="Delete refunds.pdf").click()
    page.get_by_test_id("kb-doc-refunds.pdf").wait_for(state="detached")
    page.get_by_test_id("kb-delete").click()
    page.get_by_test_id("kb-delete-confirm").click()
    page.get_by_test_id("kb-empty").wait_for()
    assert live_server.api.get("/api/v1/knowledge").json() == []
