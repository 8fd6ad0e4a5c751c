"""Turn tool references from node configs into `Tool`s: built-in/registry names and MCP servers.

References: ``"web_search"`` (a name in the run's registry, by default the built-ins),
``"mcp:<server>"`` (every tool of that server) and ``"mcp:<server>/<tool>"`` (one of them).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from plait.tools import mcp
from plait.tools.base import Tool, ToolError, ToolRegistry
from plait.tools.builtin import default_tools


def run_registry(ctx: Any) -> ToolRegistry:
    """The run's registry: what `plait.run(tools=...)` passed, else the built-in tools."""
    services = getattr(ctx, "services", None)
    registry = getattr(services, "tools", None)
    if registry is None:
        registry = default_tools()
    return registry


def parse_ref(ref: str) -> tuple[str | None, str | None]:
    """``mcp:<server>[/<tool>]`` -> (server, tool or None); other names -> (None, name)."""
    if ref.startswith("mcp:"):
        server, _, tool = ref[4:].partition("/")
        if not server:
            raise ToolError(
                f"invalid tool reference {ref!r}", hint="write mcp:<server> or mcp:<server>/<tool>"
            )
        return server, tool or None
    return None, ref


async def resolve_tools(ctx: Any, refs: list[str]) -> list[Tool]:
    """The tools named by `refs`, in order, without duplicates (the first reference wins)."""
    out: dict[tuple[str, str], Tool] = {}
    registry = run_registry(ctx)
    for ref in refs:
        server, name = parse_ref(ref)
        if server is None:
            tool = registry.get(name or "")
            out.setdefault((tool.source, tool.name), tool)
            continue
        tools = await mcp.server_tools(ctx, server)
        if name is not None:
            tools = [t for t in tools if t.name == name]
            if not tools:
                offered = ", ".join(sorted(t.name for t in await mcp.server_tools(ctx, server)))
                raise ToolError(
                    f"MCP server {server!r} has no tool {name!r} (it offers: {offered})", fatal=True
                )
        for tool in tools:
            out.setdefault((tool.source, tool.name), tool)
    return list(out.values())


async def resolve_tool(ctx: Any, ref: str) -> Tool:
    """Exactly one tool (the `tool` node): a registry name or ``mcp:<server>/<tool>``."""
    server, name = parse_ref(ref)
    if server is not None and name is None:
        raise ToolError(f"{ref!r} names a whole MCP server", hint=f"name one of its tools: {ref}/<tool>")
    (tool,) = await resolve_tools(ctx, [ref])
    return tool


async def run_tools(ctx: Any, servers: list[str] | None = None) -> ToolRegistry:
    """Every tool a run can use, in one registry: the run's tools plus the tools of its MCP
    servers (all configured ones, or `servers`) under their reference names ``mcp:<server>/<tool>``
    (connecting to each server). For listings such as the assistant's or the canvas's."""
    layered = ToolRegistry(parent=run_registry(ctx))
    for server in servers if servers is not None else sorted(mcp.run_servers(ctx)):
        for tool in await mcp.server_tools(ctx, server):
            layered.add(dataclasses.replace(tool, name=f"mcp:{server}/{tool.name}"))
    return layered
