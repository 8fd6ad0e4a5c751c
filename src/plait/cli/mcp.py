"""`plait mcp`: plait as an MCP server over stdio, for a client that starts it as a subprocess
(Claude Desktop, an IDE agent). The server itself is `plait.mcp` (over HTTP it is `/mcp` of
`plait serve`); this command only reads the settings and the key and starts it.

The service layer is imported when the command runs, not when `plait` starts (as in `admin`).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.console import Console

err_console = Console(stderr=True)


def mcp_command(
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            envvar="PLAIT_MCP_KEY",
            help="Act as the user of this API key (default: PLAIT_API_KEY, else the local admin).",
        ),
    ] = None,
) -> None:
    """Serve MCP over stdin/stdout: the flow-builder tools on your stored flows, the flow library,
    and every published flow as a tool. Uses the database in PLAIT_DATABASE_URL (default
    ./.plait/plait.db), as the user of the API key; without one, as the local admin."""
    from plait.mcp.stdio import serve_stdio
    from plait.service import ServiceError, Settings

    try:
        settings = Settings.from_env()
    except ValueError as exc:
        err_console.print(f"[red]{exc}[/]")
        raise typer.Exit(1) from exc
    try:
        asyncio.run(serve_stdio(settings, key))
    except ServiceError as exc:  # a key that is not valid: said on stderr, exit 1
        err_console.print(f"[red]{exc.message}[/]")
        raise typer.Exit(1) from exc
    except KeyboardInterrupt:  # pragma: no cover - the client stopped us
        pass
