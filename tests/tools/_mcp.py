"""Fixtures' helpers: the test MCP server as a stdio config or a streamable-HTTP subprocess."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from plait.tools.mcp import MCPConnections

SERVER = str(Path(__file__).with_name("mcp_server.py"))

# The MCP connection pool of the tests' fake contexts (test_mcp's Ctx); `mcp_cleanup` closes it.
CONNECTIONS = MCPConnections()


def stdio_config(**extra) -> dict:
    return {"command": sys.executable, "args": [SERVER, "stdio"], **extra}


class HttpServer:
    """`mcp_server.py http PORT` under uvicorn on 127.0.0.1, waited for until it accepts connections."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "http", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"MCP HTTP server exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("MCP HTTP server did not start")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        if self.proc.stderr:
            self.proc.stderr.close()
