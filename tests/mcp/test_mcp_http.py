"""plait's MCP server over streamable HTTP at `/mcp` of a real `plait serve` (a subprocess on a
temporary SQLite database), driven by the `mcp` SDK's client (spec M-T12, issue 13's acceptance):
the same API keys as the REST API (`x-api-key` or a bearer token), each key seeing only its own
user's flows."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_server_helpers import assert_invisible, build_run_publish, data, tool_names

from api.test_server import Server

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path).start()
    yield srv
    srv.stop()


def _editor_key(server: Server, email: str, scopes: list[str]) -> str:
    with server.client() as admin:  # the deployment key: the local admin
        user = admin.post("/api/v1/users", json={"email": email, "role": "editor"})
        assert user.status_code == 201, user.text
        key = admin.post(
            f"/api/v1/users/{user.json()['id']}/api-keys", json={"name": "mcp", "scopes": scopes}
        )
        assert key.status_code == 201, key.text
        return str(key.json()["key"])


@asynccontextmanager
async def mcp_client(server: Server, headers: dict[str, str], mode: str = "auto") -> AsyncIterator[Any]:
    """The SDK's client; mode "auto" speaks the 2026 stateless protocol to plait, "legacy" the
    2025 initialize handshake that most deployed clients still use."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


async def test_m_t12_http_client_builds_runs_and_publishes_a_flow_and_another_key_cannot_see_it(
    server: Server,
) -> None:
    ann = _editor_key(server, "ann@example.com", ["read", "write", "run"])
    bob = _editor_key(server, "bob@example.com", ["read", "write", "run"])

    async with mcp_client(server, {"x-api-key": ann}) as client:
        flow_id = await build_run_publish(client)

    async with mcp_client(server, {"Authorization": f"Bearer {bob}"}, mode="legacy") as client:
        await assert_invisible(client, flow_id)

    # the runs are real runs of ann's flow: in her REST run history, not in bob's
    with httpx.Client(base_url=server.url, timeout=30) as rest:
        runs = rest.get("/api/v1/runs", params={"flow_id": flow_id}, headers={"x-api-key": ann}).json()
        assert len(runs) == 2, runs
        assert rest.get("/api/v1/runs", headers={"x-api-key": bob}).json() == []
        # and the flow the client built is the stored draft, published as version 1
        flow = rest.get(f"/api/v1/flows/{flow_id}", headers={"x-api-key": ann}).json()
        assert [n["id"] for n in flow["draft"]["nodes"]] == ["start", "ask", "done"]
        assert flow["latest_version"] == 1


async def test_http_needs_a_valid_key_and_a_read_only_key_only_reads(server: Server) -> None:
    for headers in ({}, {"x-api-key": "not-a-key"}):
        resp = httpx.post(
            f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers
        )
        assert resp.status_code == 401, resp.text
    owner = _editor_key(server, "ann@example.com", ["read", "write", "run"])
    reader = _editor_key(server, "ann2@example.com", ["read"])
    async with mcp_client(server, {"x-api-key": owner}, mode="legacy") as client:
        flow_id = await build_run_publish(client, "Reader test")
    async with mcp_client(server, {"x-api-key": reader}) as client:
        refused = await client.call_tool("create_flow", {"name": "nope"})
        assert refused.is_error and data(refused)["code"] == "forbidden"
        assert not [n for n in await tool_names(client) if n.startswith("flow_")]  # no run scope
        await assert_invisible(client, flow_id, can_write=False)
