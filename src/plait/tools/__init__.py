"""Tools shared by agents, the `tool` node and the assistant: a registry of JSON-Schema-typed calls.

`default_tools()` (tools/builtin.py) holds the built-ins (http_request, web_search, wikipedia, arxiv,
flow); MCP servers add theirs at run time (`plait.tools.mcp`); see docs/tools.md.
"""

from __future__ import annotations

from plait.tools.base import Tool, ToolCallContext, ToolError, ToolFn, ToolRegistry
from plait.tools.builtin import builtin_tools, default_tools
from plait.tools.flow import flow_tool
from plait.tools.web import arxiv_tool, http_request_tool, web_search_tool, wikipedia_tool

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
