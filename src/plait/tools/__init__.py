"""Tools shared by agents, the `tool` node and the assistant: a registry of JSON-Schema-typed calls.

`default_tools()` holds the built-ins (http_request, web_search, wikipedia, arxiv, flow); MCP
servers add theirs at run time (`plait.tools.mcp`); see docs/tools.md.
"""

from __future__ import annotations

from functools import lru_cache

from plait.tools.base import Tool, ToolCallContext, ToolError, ToolFn, ToolRegistry
from plait.tools.flow import flow_tool
from plait.tools.web import arxiv_tool, http_request_tool, web_search_tool, wikipedia_tool


def builtin_tools() -> list[Tool]:
    return [http_request_tool(), web_search_tool(), wikipedia_tool(), arxiv_tool(), flow_tool()]


@lru_cache(maxsize=1)
def default_tools() -> ToolRegistry:
    """The process-wide registry of built-in tools (what a run uses when given no `tools=`)."""
    return ToolRegistry(builtin_tools())


__all__ = [
    "Tool",
    "ToolCallContext",
    "ToolError",
    "ToolFn",
    "ToolRegistry",
    "arxiv_tool",
    "builtin_tools",
    "default_tools",
    "flow_tool",
    "http_request_tool",
    "web_search_tool",
    "wikipedia_tool",
]
