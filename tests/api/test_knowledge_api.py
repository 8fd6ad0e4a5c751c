"""Knowledge bases over HTTP, and issue 16's acceptance: a RAGFlow document whose Retrieval
searches a knowledge base of three uploaded documents (txt, pdf, docx) answers with the right
chunk, on SQLite and on PostgreSQL (PLAIT_TEST_POSTGRES_URL)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from knowledge_docs import QUESTION, three_documents
from plait.nodes import default_registry
from plait.spec.formats import import_ragflow
from plait.spec.formats.ragflow_export import export_ragflow
from plait.tools import default_tools


def rf(name: str, params: dict[str, Any], down: list[str]) -> dict[str, Any]:
    return {"obj": {"component_name": name, "params": params}, "downstream": down, "upstream": []}


def ragflow_retrieval_agent(kb_ids: list[str]) -> dict[str, Any]:
    """Begin -> Retrieval over `kb_ids` -> Message showing RAGFlow's formalized_content."""
    return {
        "components": {
            "begin": rf("Begin", {"prologue": "Ask about orders."}, ["Retrieval:FindPolicy"]),
            "Retrieval:FindPolicy": rf(
                "Retrieval",
                {
                    "query": "{sys.query}",
                    "kb_ids": kb_ids,
                    "top_n": 1,
                    "similarity_threshold": 0.2,
                    "keywords_similarity_weight": 0.7,
                    "empty_response": "nothing found",
                    "outputs": {"formalized_content": {"type": "string", "value": ""}},
                },
                ["Message:Answer"],
            ),
            "Message:Answer": rf("Message", {"content": ["{Retrieval:FindPolicy@formalized_content}"]}, []),
        },
        "globals": {"sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0, "sys.files": []},
    }


async def _base_with_three_documents(client: httpx.AsyncClient, name: str = "support") -> dict[str, Any]:
    r = await client.post("/api/v1/knowledge", json={"name": name, "description": "orders"})
    assert r.status_code == 201, r.text
    kb = r.json()
    assert kb["search"] == "full_text" and kb["documents"] == 0
    for filename, data in three_documents():
        r = await client.post(
            f"/api/v1/knowledge/{kb['id']}/documents", params={"filename": filename}, content=data
        )
        assert r.status_code == 201, r.text
        assert r.json()["chunk_count"] >= 1
    return kb


async def test_retrieval_in_a_ragflow_agent_answers_with_the_right_chunk(client: httpx.AsyncClient) -> None:
    kb = await _base_with_three_documents(client)
    r = await client.post(
        "/api/v1/flows/import",
        json={"document": ragflow_retrieval_agent([kb["id"]]), "id": "rf-kb", "publish": True},
    )
    assert r.status_code == 201, r.text
    assert r.json()["problems"] == []
    r = await client.post("/api/v1/flows/rf-kb/runs?wait=true", json={"inputs": {"query": QUESTION}})
    assert r.status_code in (200, 201), r.text
    run = r.json()
    assert run["status"] == "completed", run
    (answer,) = run["outputs"].values()
    assert "Title: refunds.pdf" in answer and "30 days" in answer
    assert "warranty" not in answer.lower() and "Lyon" not in answer
    # The node's output has the chunks with their document names and scores.
    events = (await client.get(f"/api/v1/runs/{run['id']}/events")).text
    assert "docnm_kwd" in events and "refunds.pdf" in events


async def test_unknown_kb_ids_fail_the_run_naming_them(client: httpx.AsyncClient) -> None:
    await _base_with_three_documents(client)
    doc = ragflow_retrieval_agent(["support", "kb-from-ragflow-123"])
    r = await client.post(
        "/api/v1/flows/import", json={"document": doc, "id": "rf-kb-missing", "publish": True}
    )
    assert r.status_code == 201, r.text
    r = await client.post("/api/v1/flows/rf-kb-missing/runs?wait=true", json={"inputs": {"query": QUESTION}})
    run = r.json()
    assert run["status"] == "failed", run
    assert "'kb-from-ragflow-123'" in str(run["error"]) and "'support'" not in str(run["error"])


async def test_manage_bases_documents_and_search(client: httpx.AsyncClient) -> None:
    kb = await _base_with_three_documents(client)
    (listed,) = (await client.get("/api/v1/knowledge")).json()
    assert (listed["documents"], listed["chunks"]) == (3, 3)
    again = await client.post("/api/v1/knowledge", json={"name": "support"})
    assert again.status_code == 409
    docs = (await client.get(f"/api/v1/knowledge/{kb['id']}/documents")).json()
    assert sorted(d["kind"] for d in docs) == ["docx", "pdf", "txt"]
    chunks = (await client.get(f"/api/v1/knowledge/{kb['id']}/chunks")).json()
    assert len(chunks) == 3 and not any(c["has_vector"] for c in chunks)

    r = await client.post(f"/api/v1/knowledge/{kb['id']}/search", json={"query": QUESTION, "top_n": 2})
    assert r.status_code == 200, r.text
    found = r.json()
    assert found["chunks"][0]["document_name"] == "refunds.pdf"
    assert found["content"].startswith("ID: 0\n├── Title: refunds.pdf")

    r = await client.post(
        f"/api/v1/knowledge/{kb['id']}/documents", params={"filename": "table.xlsx"}, content=b"PK\x03\x04"
    )
    assert r.status_code == 422 and "xlsx" in r.json()["error"]["message"], r.text

    # What no database stores in text is a 422, not a server error.
    assert (await client.post("/api/v1/knowledge", json={"name": "a\u0000b"})).status_code == 422
    r = await client.post(
        f"/api/v1/knowledge/{kb['id']}/documents", params={"filename": "a\x00.txt"}, content=b"x"
    )
    assert r.status_code == 422, r.text
    r = await client.post(
        f"/api/v1/knowledge/{kb['id']}/documents", params={"filename": "nul.txt"}, content=b"a\x00b"
    )
    assert r.status_code == 201, r.text
    assert (
        await client.get(f"/api/v1/knowledge/{kb['id']}/chunks", params={"document_id": "x\x00"})
    ).status_code == 404

    pdf = next(d for d in docs if d["kind"] == "pdf")
    assert (await client.delete(f"/api/v1/knowledge/{kb['id']}/documents/{pdf['id']}")).status_code == 204
    r = await client.post(f"/api/v1/knowledge/{kb['id']}/search", json={"query": QUESTION})
    assert all(c["document_name"] != "refunds.pdf" for c in r.json()["chunks"])
    assert (await client.delete(f"/api/v1/knowledge/{kb['id']}")).status_code == 204
    assert (await client.get(f"/api/v1/knowledge/{kb['id']}")).status_code == 404


def test_retrieval_round_trips_through_ragflow_export() -> None:
    catalog = default_registry()
    tools = default_tools().names()
    doc = import_ragflow(ragflow_retrieval_agent(["support"]), catalog=catalog, tools=tools).document
    exported = export_ragflow(doc, catalog=catalog)
    params = exported["components"]["Retrieval:FindPolicy"]["obj"]["params"]
    assert (
        params["kb_ids"] == ["support"]
        and params["top_n"] == 1
        and params["keywords_similarity_weight"] == 0.7
    )
    assert "{Retrieval:FindPolicy@formalized_content}" in json.dumps(exported)
    assert import_ragflow(exported, catalog=catalog, tools=tools).document["nodes"] == doc["nodes"]
