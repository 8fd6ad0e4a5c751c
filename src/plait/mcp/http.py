"""MCP over streamable HTTP inside the plait server, at `/mcp`.

The API authenticates the request like any route (an API key in `x-api-key` or as a bearer token,
the `read` scope at least) and hands the caller to `MCPHttp.response(who)`, which serves the MCP
message as that caller: the handlers read the caller from the request's ASGI scope, so a key
sees its own user's flows and nothing else.

The transport is the SDK's `StreamableHTTPSessionManager` in stateless JSON mode: every POST is a
complete exchange (no MCP session to resume, no server-initiated requests), which is all these
tools need and lets any number of server processes answer behind a load balancer. It runs
during the app's lifespan (`MCPHttp.lifespan`, merged into the app's by FastAPI), started after
the services are open; each lifespan makes a new manager (one can run only once).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from plait.mcp.server import build_server
from plait.service import Services
from plait.service.access import Principal
from plait.service.errors import ServiceError, Unauthorized

CALLER_KEY = "plait.mcp.caller"  # the ASGI scope key the caller travels under


async def request_caller(ctx: ServerRequestContext[Any, Any]) -> Principal:
    """The caller the API authenticated for this HTTP request."""
    request = ctx.request
    who = getattr(request, "scope", {}).get(CALLER_KEY) if request is not None else None
    if not isinstance(who, Principal):
        raise Unauthorized("send an API key (x-api-key header or Authorization: Bearer)")
    return who


class MCPResponse(Response):
    """A response that lets the MCP transport answer the request, as `who`."""

    def __init__(self, manager: StreamableHTTPSessionManager, who: Principal) -> None:
        super().__init__()
        self.manager = manager
        self.who = who

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request({**scope, CALLER_KEY: self.who}, receive, send)


class MCPNotReady(ServiceError):
    status = 503
    code = "unavailable"


class NotJSON(ServiceError):
    """An MCP message is JSON: anything else is refused before the transport sees it, with plait's
    error body (the transport's own refusals are plain text)."""

    status = 415
    code = "unsupported_media_type"


class MCPHttp:
    """The `/mcp` endpoint's transport, started and stopped with the app."""

    def __init__(self) -> None:
        self.manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """Run the transport while the app runs. The SDK's task group lives in a task of its own:
        a lifespan may be entered and left in different tasks (test fixtures do), a task group
        may not."""
        services: Services = app.state.services  # opened by the app's own lifespan, which runs first
        manager = StreamableHTTPSessionManager(
            app=build_server(services, request_caller), stateless=True, json_response=True
        )
        ready, stop = asyncio.Event(), asyncio.Event()

        async def keep() -> None:
            async with manager.run():
                ready.set()
                await stop.wait()

        task = asyncio.get_running_loop().create_task(keep(), name="plait-mcp-http")
        started = asyncio.ensure_future(ready.wait())
        await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            started.cancel()
            await task  # raises why the transport could not start
        self.manager = manager
        try:
            yield
        finally:
            self.manager = None
            stop.set()
            await task

    def response(self, who: Principal, content_type: str | None) -> Response:
        """The answer to one POST of an MCP message (`content_type`: the request's header)."""
        if (content_type or "").split(";")[0].strip().lower() != "application/json":
            raise NotJSON(
                "an MCP message is a JSON-RPC object: send it with Content-Type: application/json",
                hint="point an MCP client (streamable HTTP) at this URL",
            )
        if self.manager is None:
            raise MCPNotReady("the MCP endpoint is not running (the server is starting or stopping)")
        return MCPResponse(self.manager, who)


__all__ = ["CALLER_KEY", "MCPHttp", "MCPResponse", "request_caller"]
