"""The `document` node: markdown, HTML or text rendered into an md, html, txt, pdf or docx file.

The file is a run artifact (`plait.nodes.artifacts`): stored with the run, downloadable from the
URL in the node's output, bounded by PLAIT_MAX_ARTIFACT_BYTES. Output: `{artifact_id, filename,
mime_type, size, url, format}`. RAGFlow's DocsGenerator imports to this node.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from plait.nodes.artifacts import ArtifactStore, ArtifactTooLarge, MemoryArtifacts, check_size, safe_filename
from plait.nodes.base import Node, NodeContext, NodeError

MAX_CONTENT_CHARS = 2_000_000
MIME_TYPES = {
    "md": "text/markdown; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "txt": "text/plain; charset=utf-8",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
# RAGFlow's names for the formats, and a few obvious spellings.
FORMAT_ALIASES = {"markdown": "md", "text": "txt", "htm": "html", "word": "docx"}


def artifact_store(ctx: NodeContext) -> ArtifactStore:
    """The run's artifact store (`RunServices.artifacts`); a context without services gets a
    throwaway one, so a node can still be unit-tested."""
    store = getattr(getattr(ctx, "services", None), "artifacts", None)
    return store if store is not None else MemoryArtifacts()


class DocumentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        "",
        title="Content",
        description="What to write (template). Empty: the node's input.",
    )
    input_format: Literal["markdown", "html", "text"] = Field(
        "markdown", title="Content format", description="How to read the content."
    )
    format: Literal["pdf", "docx", "html", "md", "txt"] = Field(
        "pdf", title="File format", description="The file to produce."
    )
    filename: str = Field(
        "document",
        title="File name",
        description="Download name (template); the extension is added.",
    )
    title: str = Field(
        "", title="Title", description="Document title (PDF/DOCX/HTML metadata); default: the file name."
    )

    @field_validator("format", mode="before")
    @classmethod
    def _alias(cls, value: Any) -> Any:
        return FORMAT_ALIASES.get(value.lower(), value.lower()) if isinstance(value, str) else value


class DocumentNode(Node[DocumentConfig]):
    type_name = "document"
    title = "Document"
    description = "Renders markdown, HTML or text into a downloadable md, html, txt, pdf or docx file."
    category = "data"
    Config = DocumentConfig

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        content = await ctx.arender(cfg.content) if cfg.content else ctx.input
        if content is None or content == "":
            raise NodeError(
                f"document node {self.id!r}: nothing to write",
                hint="set `content`, or connect a node whose output is the text",
                retryable=False,
            )
        if not isinstance(content, str):
            content = str(content)
        if len(content) > MAX_CONTENT_CHARS:
            raise NodeError(
                f"document node {self.id!r}: the content is {len(content):,} characters, over the "
                f"limit of {MAX_CONTENT_CHARS:,}",
                hint="shorten it (summarise, or split it over several documents)",
                retryable=False,
            )
        name = await ctx.arender(cfg.filename) if cfg.filename else "document"
        filename = safe_filename(str(name), cfg.format)
        title = (await ctx.arender(cfg.title) if cfg.title else "") or filename.rsplit(".", 1)[0]
        # Loaded on first use, not with the node registry: reportlab, python-docx and markdown-it
        # cost about half a second at import, which every `import plait` would pay.
        from plait.nodes.builtin.document_render import render  # noqa: PLC0415

        try:
            data = await asyncio.to_thread(render, content, cfg.input_format, cfg.format, str(title))
        except Exception as exc:  # noqa: BLE001 - a renderer's failure on odd input is the node's error
            raise NodeError(
                f"document node {self.id!r}: rendering the {cfg.format} file failed: {type(exc).__name__}: {exc}",
                hint="check the content (or try another input_format)",
                retryable=False,
            ) from exc
        try:
            check_size(filename, data)
            artifact = await artifact_store(ctx).put(
                ctx.run_id, ctx.node_id, filename, MIME_TYPES[cfg.format], data
            )
        except ArtifactTooLarge as exc:
            raise NodeError(
                f"document node {self.id!r}: {exc.message}", hint=exc.hint, retryable=False
            ) from exc
        return {**artifact.ref(), "format": cfg.format}
