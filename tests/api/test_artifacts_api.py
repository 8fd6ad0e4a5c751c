"""A run's files through the server: a document node's PDF and a spreadsheet node's xlsx are kept
in the store (SQLite, and PostgreSQL when PLAIT_TEST_POSTGRES_URL is set) and downloaded from the
URL in the node's output; other users and other runs cannot open them."""

from __future__ import annotations

import io
from typing import Any

import httpx
from openpyxl import load_workbook

FLOW = {
    "schema": "plait/flow@1",
    "id": "reporting",
    "nodes": [
        {"id": "start", "type": "start"},
        {"id": "pdf", "type": "document",
         "config": {"content": "# Report\n\n{{inputs.query}}", "format": "pdf", "filename": "Report é"}},
        {"id": "sheet", "type": "spreadsheet",
         "config": {"operation": "write", "data": [{"q": "{{inputs.query}}", "n": 1}], "filename": "data"}},
        {"id": "read", "type": "spreadsheet", "config": {"source": "{{sheet}}"}},
    ],
    "edges": [
        {"source": "start", "target": "pdf"},
        {"source": "start", "target": "sheet"},
        {"source": "sheet", "target": "read"},
    ],
}  # fmt: skip


async def test_files_are_stored_with_the_run_and_downloadable(client: httpx.AsyncClient, app: Any) -> None:
    assert (await client.post("/api/v1/flows", json={"document": FLOW})).status_code == 201
    run = (
        await client.post(
            "/api/v1/flows/reporting/runs?mode=sync&version=draft", json={"inputs": {"query": "all good"}}
        )
    ).json()
    assert run["status"] == "completed", run
    detail = (await client.get(f"/api/v1/runs/{run['id']}")).json()
    outputs = {k: v.get("output") for k, v in detail["nodes"].items()}
    pdf = outputs["pdf"]
    assert pdf["url"] == f"/api/v1/runs/{run['id']}/artifacts/{pdf['artifact_id']}"
    got = await client.get(pdf["url"])
    assert got.status_code == 200
    assert got.content.startswith(b"%PDF-") and len(got.content) == pdf["size"]
    assert got.headers["content-type"] == "application/pdf"
    assert got.headers["content-disposition"] == (
        "attachment; filename=\"Report _.pdf\"; filename*=UTF-8''Report%20%C3%A9.pdf"
    )
    assert got.headers["x-content-type-options"] == "nosniff"

    sheet = outputs["sheet"]
    xlsx = await client.get(sheet["url"])
    book = load_workbook(io.BytesIO(xlsx.content))
    assert [list(r) for r in book.active.iter_rows(values_only=True)] == [["q", "n"], ["all good", 1]]
    assert outputs["read"]["rows"] == [{"q": "all good", "n": 1}]  # read back through the store

    # Another run cannot name this run's file; an unknown id is a 404.
    other = (
        await client.post(
            "/api/v1/flows/reporting/runs?mode=sync&version=draft", json={"inputs": {"query": "x"}}
        )
    ).json()
    assert (await client.get(f"/api/v1/runs/{other['id']}/artifacts/{pdf['artifact_id']}")).status_code == 404
    assert (await client.get(f"/api/v1/runs/{run['id']}/artifacts/{'0' * 64}")).status_code == 404
    assert (await client.get(f"/api/v1/runs/{run['id']}/artifacts/nope")).status_code == 404
