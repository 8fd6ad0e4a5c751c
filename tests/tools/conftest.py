from __future__ import annotations

import pytest
from _mcp import CONNECTIONS
from _services import Services

from plait.engine.api import default_mcp


@pytest.fixture
def services(monkeypatch):
    """The fake public services on 127.0.0.1, reachable through the SSRF guard's allowlist."""
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    with Services() as s:
        yield s


@pytest.fixture
async def mcp_cleanup():
    """Close the MCP connections a test opened: its fake contexts' pool, and the pool of runs
    started without one (`plait.run`'s default)."""
    yield
    await CONNECTIONS.aclose()
    await default_mcp.aclose()


@pytest.fixture
def mcp_http():
    from _mcp import HttpServer

    server = HttpServer()
    yield server
    server.stop()
