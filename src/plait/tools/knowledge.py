"""The `retrieval` agent tool, and the search both it and the `retrieval` node run.

RAGFlow agents list Retrieval (also spelled SearchMyDataset / search_my_dataset) among their tools;
the model then passes only a query, and the knowledge bases and thresholds are the tool's fixed
configuration. Here the tool's arguments may carry them too (`kb_ids`, `top_n`...), and the
run's owner's bases are searched through `ctx.services.knowledge` (plait.knowledge's
`KnowledgeSource`, given by the server): a run outside the server has no knowledge bases.
"""

from __future__ import annotations

from typing import Any

from plait.knowledge import (
    Hit,
    KnowledgeError,
    KnowledgeSource,
    SearchRequest,
    formalize,
)
from plait.knowledge.search import DEFAULT_KEYWORDS_WEIGHT, DEFAULT_SIMILARITY_THRESHOLD, DEFAULT_TOP_N
from plait.tools.base import Tool, ToolCallContext, ToolError

RETRIEVAL_TOOL = "retrieval"


def knowledge_source(ctx: Any) -> KnowledgeSource:
    """The run's knowledge bases; ToolError (fatal) when the run has none."""
    source = getattr(getattr(ctx, "services", None), "knowledge", None)
    if source is None:
        raise ToolError(
            "this run has no knowledge bases",
            hint="run the flow on the plait server (knowledge bases are kept in its database)",
            fatal=True,
        )
    return source  # type: ignore[no-any-return]


async def search(ctx: Any, request: SearchRequest) -> list[Hit]:
    """Search the run owner's bases; ToolError (fatal: configuration) for unknown bases. A run
    without knowledge bases (outside the server) finds nothing when it names none."""
    if not request.kb_ids and getattr(getattr(ctx, "services", None), "knowledge", None) is None:
        return []
    try:
        return await knowledge_source(ctx).search(request)
    except KnowledgeError as exc:
        raise ToolError(exc.message, hint=exc.hint, fatal=True) from exc


def result(hits: list[Hit], empty_response: str = "") -> dict[str, Any]:
    """What the node outputs and the tool returns: `content` (RAGFlow's `formalized_content`),
    `chunks` (RAGFlow's `json`) and the distinct document names."""
    names: dict[str, None] = {}
    for hit in hits:
        names.setdefault(hit.document_name, None)
    return {
        "content": formalize(hits) if hits else empty_response,
        "chunks": [h.as_dict() for h in hits],
        "documents": list(names),
    }


def _kb_ids(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [str(v) for v in value if str(v).strip()]
    raise ToolError("kb_ids must be a list of knowledge base ids or names")


async def _call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("retrieval needs a non-empty `query`")
    request = SearchRequest(
        query=query,
        kb_ids=_kb_ids(args.get("kb_ids")),
        top_n=int(args.get("top_n") or DEFAULT_TOP_N),
        similarity_threshold=float(args.get("similarity_threshold", DEFAULT_SIMILARITY_THRESHOLD)),
        keywords_similarity_weight=float(args.get("keywords_similarity_weight", DEFAULT_KEYWORDS_WEIGHT)),
    )
    hits = await search(ctx, request)
    return result(hits, str(args.get("empty_response") or "No relevant content found."))


def retrieval_tool() -> Tool:
    return Tool(
        name=RETRIEVAL_TOOL,
        description=(
            "Searches the user's knowledge bases (uploaded documents) and returns the most relevant "
            "passages with their document names."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "kb_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Knowledge base ids or names; empty: all of them.",
                },
                "top_n": {"type": "integer", "minimum": 1, "maximum": 100},
                "similarity_threshold": {"type": "number", "minimum": 0, "maximum": 1},
                "keywords_similarity_weight": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["query"],
        },
        call=_call,
    )
