from __future__ import annotations

import pytest
from _services import Services


@pytest.fixture
def services(monkeypatch):
    """The fake public services on 127.0.0.1, reachable through the SSRF guard's allowlist."""
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    with Services() as s:
        yield s


@pytest.fixture
async def mcp_cleanup():
    """Close the MCP connections a test opened (they are kept per event loop)."""
    from plait.tools import mcp

    yield
    await mcp.aclose_all()


@pytest.fixture
def mcp_http():
    from _mcp import HttpServer

    server = HttpServer()
    yield server
    server.stop()
