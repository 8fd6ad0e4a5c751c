"""A real MCP server built with the `mcp` SDK, for the tests: `python mcp_server.py stdio` or
`python mcp_server.py http PORT` (streamable HTTP under uvicorn on 127.0.0.1, requiring the
header `Authorization: Bearer test-token`)."""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("plait-test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def whoami() -> str:
    """The MCP_TEST_USER environment variable of the server process."""
    return os.environ.get("MCP_TEST_USER", "(unset)")


@server.tool()
async def crash() -> str:
    """Kills the server process in the middle of the call."""
    await asyncio.sleep(0.05)
    os._exit(3)


def main() -> None:
    if sys.argv[1] == "stdio":
        print("test MCP server starting", file=sys.stderr, flush=True)
        server.run()
        return
    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != b"Bearer test-token":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})  # fmt: skip
                await send({"type": "http.response.body", "body": b"missing or wrong token"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
