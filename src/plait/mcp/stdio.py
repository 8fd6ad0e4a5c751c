"""MCP over stdio (`plait mcp`): one client (an IDE agent, Claude Desktop) starts plait as a
subprocess and talks to it over stdin/stdout.

The process opens the configured database itself (PLAIT_DATABASE_URL, as `plait serve` does) and
acts as one user for its whole life: the user of the API key it is given (`--key`, else
PLAIT_API_KEY: the deployment key acts as the local admin), or, without a key, the local admin
of a local database (whoever can start the process can open that database anyway).

While serving, the SDK points fd 1 at stderr, so nothing but MCP messages reaches the client
(opening the services prints nothing on stdout: their log goes to stderr).
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server

from plait.mcp.server import build_server
from plait.service import Services, Settings
from plait.service.access import Principal


async def caller_for(services: Services, key: str | None) -> Principal:
    """Who the process acts as: the key's user (Unauthorized for a bad key), else the local admin."""
    if key:
        return await services.users.check_key(key)
    return await services.users.local_admin()


async def serve_stdio(settings: Settings, key: str | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin. A key that is not valid raises
    `Unauthorized` before anything is served."""
    services = await Services.open(settings)
    try:
        who = await caller_for(services, key or settings.api_key)

        async def caller(ctx: ServerRequestContext[Any, Any]) -> Principal:
            return who

        server = build_server(services, caller)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await services.close()


__all__ = ["caller_for", "serve_stdio"]
