"""The built-in tools, listed in one place, and the process-wide registry of them.

`default_tools()` is what a run uses when it is given no `tools=`; MCP servers add theirs at run
time (`plait.tools.mcp`).
"""

from __future__ import annotations

from functools import lru_cache

from plait.tools.base import Tool, ToolRegistry
from plait.tools.crawler import crawler_tool
from plait.tools.flow import flow_tool
from plait.tools.knowledge import retrieval_tool
from plait.tools.mail import email_tool
from plait.tools.research import github_tool, pubmed_tool, tavily_extract_tool
from plait.tools.sql import sql_tool
from plait.tools.web import arxiv_tool, http_request_tool, web_search_tool, wikipedia_tool


def builtin_tools() -> list[Tool]:
    return [
        http_request_tool(),
        web_search_tool(),
        wikipedia_tool(),
        arxiv_tool(),
        flow_tool(),
        sql_tool(),
        retrieval_tool(),
        email_tool(),
        crawler_tool(),
        tavily_extract_tool(),
        pubmed_tool(),
        github_tool(),
    ]


@lru_cache(maxsize=1)
def default_tools() -> ToolRegistry:
    """The process-wide registry of built-in tools (what a run uses when given no `tools=`)."""
    return ToolRegistry(builtin_tools())
