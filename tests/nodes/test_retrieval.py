"""The `retrieval` node and agent tool over a `KnowledgeSource` (the server gives the run
owner's knowledge bases; here a small in-memory one): RAGFlow's config names, the formatted
`content`, the chunks with document names and scores, `empty_response`, and clear errors."""

from __future__ import annotations

from typing import Any

import plait
from plait.engine.services import RunServices
from plait.knowledge import Hit, KnowledgeError, SearchRequest
from plait.nodes.builtin.retrieval import RetrievalConfig
from plait.tools import default_tools


class Shelf:
    """Two bases; a chunk matches when it contains the query's first word."""

    def __init__(self) -> None:
        self.requests: list[SearchRequest] = []
        self.chunks = {
            "faq": [("refunds.pdf", "Refunds within 30 days."), ("shipping.txt", "Ships in two days.")],
            "manuals": [("kettle.docx", "Descale the kettle monthly.")],
        }

    async def search(self, request: SearchRequest) -> list[Hit]:
        self.requests.append(request)
        unknown = [k for k in request.kb_ids if k not in self.chunks]
        if unknown:
            raise KnowledgeError(f"unknown knowledge base(s): {', '.join(map(repr, unknown))}")
        word = request.query.split()[0].lower()
        hits = [
            Hit(i, kb, kb, f"d-{name}", name, 0, text, 0.9, 0.9)
            for kb in request.kb_ids or list(self.chunks)
            for i, (name, text) in enumerate(self.chunks[kb])
            if word in text.lower()
        ]
        return hits[: request.top_n]


def flow(**config: Any) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "kb",
        "nodes": [{"id": "find", "type": "retrieval", "config": {"query": "{{inputs.q}}", **config}}],
        "edges": [],
    }


async def test_the_node_outputs_content_chunks_and_documents() -> None:
    shelf = Shelf()
    result = await plait.run(
        flow(kb_ids=["faq"], top_n=3, similarity_threshold=0.3, keywords_similarity_weight=0.6),
        {"q": "refunds please"},
        services=RunServices(knowledge=shelf),
    )
    assert result.status == "completed", result.error
    out = result.nodes["find"].output
    assert out["content"] == "ID: 0\n├── Title: refunds.pdf\n└── Content:\nRefunds within 30 days."
    assert out["documents"] == ["refunds.pdf"]
    (chunk,) = out["chunks"]
    assert chunk["docnm_kwd"] == "refunds.pdf" and chunk["similarity"] == 0.9
    (request,) = shelf.requests
    assert (request.query, request.kb_ids, request.top_n) == ("refunds please", ["faq"], 3)
    assert (request.similarity_threshold, request.keywords_similarity_weight) == (0.3, 0.6)


async def test_empty_response_and_the_input_as_query() -> None:
    doc = flow(kb_ids=["faq"], empty_response="nothing")
    doc["nodes"][0]["config"]["query"] = ""
    doc["nodes"].insert(
        0, {"id": "q", "type": "text", "config": {"operation": "template", "template": "zebras"}}
    )
    doc["edges"] = [{"source": "q", "target": "find"}]
    result = await plait.run(doc, {}, services=RunServices(knowledge=Shelf()))
    assert result.status == "completed", result.error
    assert result.nodes["find"].output == {"content": "nothing", "chunks": [], "documents": []}


async def test_unknown_bases_and_runs_without_knowledge_fail_clearly() -> None:
    result = await plait.run(
        flow(kb_ids=["faq", "gone"]), {"q": "x"}, services=RunServices(knowledge=Shelf())
    )
    assert result.status == "failed"
    assert "'gone'" in str(result.error) and "retrieval node 'find'" in str(result.error)
    result = await plait.run(flow(kb_ids=["faq"]), {"q": "x"})
    assert result.status == "failed" and "no knowledge bases" in str(result.error)
    # Naming no base outside the server finds nothing (an imported RAGFlow agent with kb_ids []).
    result = await plait.run(flow(empty_response="none"), {"q": "x"})
    assert result.status == "completed" and result.nodes["find"].output["content"] == "none"


def test_config_uses_ragflows_names() -> None:
    fields = set(RetrievalConfig.model_fields)
    assert {
        "kb_ids",
        "top_n",
        "similarity_threshold",
        "keywords_similarity_weight",
        "empty_response",
    } <= fields


async def test_the_agent_tool() -> None:
    tool = default_tools().get("retrieval")
    assert tool.parameters["required"] == ["query"]

    class Ctx:
        run_id = "r"
        node_id = "agent"
        services = RunServices(knowledge=Shelf())

        def secret(self, name: str) -> None:
            return None

    out = await tool.call({"query": "descale", "kb_ids": ["manuals"]}, Ctx())
    assert out["documents"] == ["kettle.docx"] and "Descale" in out["content"]
    empty = await tool.call({"query": "zebra"}, Ctx())
    assert empty["chunks"] == [] and empty["content"]


async def test_an_agent_calls_the_retrieval_tool() -> None:
    script = [
        {"tool_calls": [{"name": "retrieval", "arguments": {"query": "descale", "kb_ids": ["manuals"]}}]},
        {"content": "Descale it monthly."},
    ]
    doc = {
        "schema": "plait/flow@1",
        "id": "kb-agent",
        "nodes": [
            {
                "id": "agent",
                "type": "agent",
                "config": {
                    "provider": "scripted",
                    "prompt": "kettle care?",
                    "script": script,
                    "tools": ["retrieval"],
                },
            }
        ],
        "edges": [],
    }
    result = await plait.run(doc, {}, services=RunServices(knowledge=Shelf()))
    assert result.status == "completed", result.error
    (call,) = result.nodes["agent"].output["tool_calls"]
    assert call["status"] == "ok" and call["result"]["documents"] == ["kettle.docx"]
