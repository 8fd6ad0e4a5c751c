"""The `retrieval` node: search the run owner's knowledge bases (RAGFlow's Retrieval component).

Config uses RAGFlow's names, so an imported Retrieval keeps its values: `kb_ids` (ids or names of
knowledge bases), `top_n`, `similarity_threshold`, `keywords_similarity_weight`, `empty_response`,
and `query` (a template; empty: the node's input). Output: `content`, the hits as one text for a
prompt (RAGFlow's `formalized_content`), `chunks` (RAGFlow's `json`: each chunk's text, document
name and scores) and `documents` (their names). The search itself is `plait.tools.knowledge`'s,
shared with the `retrieval` agent tool.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from plait.knowledge import SearchRequest
from plait.knowledge.search import DEFAULT_KEYWORDS_WEIGHT, DEFAULT_SIMILARITY_THRESHOLD, DEFAULT_TOP_N
from plait.nodes.base import Node, NodeContext, NodeError
from plait.tools.base import ToolError
from plait.tools.knowledge import result, search


class RetrievalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        "",
        title="Query",
        description="What to search for (template, e.g. {{inputs.query}}). Empty: the node's input.",
    )
    kb_ids: list[str] = Field(
        default_factory=list,
        title="Knowledge bases",
        description="Ids or names of your knowledge bases; empty: all of them.",
    )
    top_n: int = Field(DEFAULT_TOP_N, ge=1, le=100, title="Top N", description="Chunks returned at most.")
    similarity_threshold: float = Field(
        DEFAULT_SIMILARITY_THRESHOLD,
        ge=0,
        le=1,
        title="Similarity threshold",
        description="Chunks scoring below this are left out.",
    )
    keywords_similarity_weight: float = Field(
        DEFAULT_KEYWORDS_WEIGHT,
        ge=0,
        le=1,
        title="Keyword weight",
        description="The keyword score's share of the similarity when a base has embeddings (the rest is the vector score).",
    )
    empty_response: str = Field(
        "", title="Empty response", description="The `content` when nothing is found."
    )


class RetrievalNode(Node[RetrievalConfig]):
    type_name = "retrieval"
    title = "Retrieval"
    description = "Searches your knowledge bases; outputs the best chunks and a text for a prompt."
    category = "tools"
    Config = RetrievalConfig
    default_timeout_s = 60.0  # embeddings of the query may take a while on a local model

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        query = await ctx.arender(cfg.query) if cfg.query.strip() else ctx.input
        if not isinstance(query, str):
            query = "" if query is None else str(query)
        request = SearchRequest(
            query=query,
            kb_ids=list(cfg.kb_ids),
            top_n=cfg.top_n,
            similarity_threshold=cfg.similarity_threshold,
            keywords_similarity_weight=cfg.keywords_similarity_weight,
        )
        try:
            hits = await search(ctx, request)
        except ToolError as exc:
            raise NodeError(
                f"retrieval node {self.id!r}: {exc.message}", hint=exc.hint, retryable=not exc.fatal
            ) from exc
        return result(hits, cfg.empty_response)
