"""MCP client against real MCP servers built with the `mcp` SDK: stdio subprocess and streamable HTTP."""

from __future__ import annotations

import asyncio
import json

import pytest
from _mcp import CONNECTIONS, stdio_config

from plait.tools import mcp
from plait.tools.base import ToolError

pytestmark = pytest.mark.usefixtures("mcp_cleanup")


class Services:
    def __init__(self, servers: dict) -> None:
        self.mcp_servers = servers
        self.mcp = CONNECTIONS


class Ctx:
    run_id = "run"
    node_id = "node"

    def __init__(self, servers: dict, secrets: dict | None = None) -> None:
        self.services = Services(servers)
        self.secrets = secrets or {}

    def secret(self, name: str) -> str | None:
        return self.secrets.get(name)

    def lookup(self, root: str) -> dict:
        """The stored variables (`{{env.X}}`): what `${NAME}` in a flow's MCP settings reads."""
        if root == "env":
            return self.secrets
        raise KeyError(root)


async def test_stdio_server_tools_are_listed_and_called(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    ctx = Ctx({"calc": stdio_config(env={"MCP_TEST_USER": "${WHO}"})}, {"WHO": "ada"})
    tools = {t.name: t for t in await mcp.server_tools(ctx, "calc")}
    assert set(tools) == {"add", "shout", "fail", "whoami", "crash"}
    assert tools["add"].source == "mcp:calc"
    assert tools["add"].parameters["required"] == ["a", "b"]
    assert await tools["add"].call({"a": 2, "b": 40}, ctx) == 42
    assert await tools["whoami"].call({}, ctx) == "ada"  # ${WHO} resolved from the run's secrets
    with pytest.raises(ToolError) as exc:
        await tools["fail"].call({"reason": "no way"}, ctx)
    assert str(exc.value) == "MCP tool calc/fail failed: Error executing tool fail: refused: no way"
    assert not exc.value.fatal  # the model may see it and try something else


async def test_tools_filter_and_unknown_names(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    ctx = Ctx({"calc": stdio_config(tools=["add"])})
    assert [t.name for t in await mcp.server_tools(ctx, "calc")] == ["add"]
    with pytest.raises(ToolError, match=r"unknown MCP server 'nope' \(known: calc\)"):
        await mcp.server_tools(ctx, "nope")
    bad = Ctx({"calc": stdio_config(tools=["missing"])})
    with pytest.raises(ToolError, match="has no tool 'missing'"):
        await mcp.server_tools(bad, "calc")


async def test_missing_secret_names_the_variable(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    ctx = Ctx({"calc": stdio_config(env={"MCP_TEST_USER": "${WHO}"})})
    with pytest.raises(ToolError, match="env.MCP_TEST_USER needs the variable WHO"):
        await mcp.server_tools(ctx, "calc")


async def test_stdio_in_flow_settings_is_refused_by_default(monkeypatch):
    monkeypatch.delenv("PLAIT_MCP_FLOW_STDIO", raising=False)
    with pytest.raises(ToolError, match="stdio commands in a flow's settings are disabled") as exc:
        await mcp.server_tools(Ctx({"calc": stdio_config()}), "calc")
    assert "PLAIT_MCP_CONFIG" in exc.value.hint


async def test_server_side_config_file_is_trusted(monkeypatch, tmp_path):
    monkeypatch.delenv("PLAIT_MCP_FLOW_STDIO", raising=False)
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"calc": stdio_config()}}))
    monkeypatch.setenv("PLAIT_MCP_CONFIG", str(path))
    tools = {t.name: t for t in await mcp.server_tools(Ctx({}), "calc")}
    assert await tools["shout"].call({"text": "hi"}, Ctx({})) == "HI"


async def test_bad_config_is_a_clear_error():
    with pytest.raises(ToolError, match=r"settings.mcp_servers.x: .*either `command`"):
        await mcp.server_tools(Ctx({"x": {"args": ["a"]}}), "x")
    with pytest.raises(ToolError, match=r"settings.mcp_servers.x.comand: Extra inputs"):
        await mcp.server_tools(Ctx({"x": {"comand": "a", "url": "http://h/mcp"}}), "x")


async def test_a_command_that_is_not_an_mcp_server(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    import sys

    ctx = Ctx({"broken": {"command": sys.executable, "args": ["-c", "import sys; print('boom', file=sys.stderr)"],
                          "connect_timeout_s": 20}})  # fmt: skip
    with pytest.raises(ToolError) as exc:
        await mcp.server_tools(ctx, "broken")
    assert "cannot connect to MCP server 'broken'" in str(exc.value)
    assert "boom" in str(exc.value)
    assert exc.value.fatal


async def test_killing_the_stdio_server_mid_call_is_a_clear_fatal_error_then_reconnects(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    ctx = Ctx({"calc": stdio_config()})
    tools = {t.name: t for t in await mcp.server_tools(ctx, "calc")}
    with pytest.raises(ToolError) as exc:
        await tools["crash"].call({}, ctx)
    assert "MCP server 'calc'" in str(exc.value) and "went away while calling tool 'crash'" in str(exc.value)
    assert exc.value.fatal
    assert await tools["add"].call({"a": 1, "b": 1}, ctx) == 2  # a new process


async def test_streamable_http_server_with_headers(monkeypatch, mcp_http):
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    ctx = Ctx({"web": {"url": mcp_http.url, "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}}},
              {"MCP_TOKEN": "test-token"})  # fmt: skip
    tools = {t.name: t for t in await mcp.server_tools(ctx, "web")}
    assert tools["add"].source == "mcp:web"
    assert await tools["add"].call({"a": 20, "b": 22}, ctx) == 42
    wrong = Ctx({"web": {"url": mcp_http.url, "headers": {"Authorization": "Bearer nope"}}})
    with pytest.raises(ToolError, match="cannot connect to MCP server 'web'") as exc:
        await mcp.server_tools(wrong, "web")
    assert "401" in str(exc.value)


async def test_http_server_in_flow_settings_passes_the_ssrf_guard(monkeypatch, mcp_http):
    monkeypatch.delenv("PLAIT_HTTP_ALLOW", raising=False)
    ctx = Ctx({"web": {"url": mcp_http.url}})
    with pytest.raises(ToolError, match="loopback address.*PLAIT_HTTP_ALLOW"):
        await mcp.server_tools(ctx, "web")


async def test_killing_the_http_server_mid_run(monkeypatch, mcp_http):
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    ctx = Ctx({"web": {"url": mcp_http.url, "headers": {"Authorization": "Bearer test-token"}}})
    tools = {t.name: t for t in await mcp.server_tools(ctx, "web")}
    assert await tools["shout"].call({"text": "a"}, ctx) == "A"
    mcp_http.stop()
    with pytest.raises(ToolError) as exc:
        await tools["shout"].call({"text": "b"}, ctx)
    assert "MCP server 'web'" in str(exc.value)
    assert exc.value.fatal


async def test_run_tools_lists_builtins_and_mcp_tools_by_reference(monkeypatch):
    from plait.tools.select import run_tools

    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    ctx = Ctx({"calc": stdio_config(tools=["add", "shout"])})
    registry = await run_tools(ctx)
    assert {"web_search", "mcp:calc/add", "mcp:calc/shout"} <= registry.names()
    add = registry.get("mcp:calc/add")
    assert add.source == "mcp:calc"
    assert await add.call({"a": 1, "b": 2}, ctx) == 3


async def test_flow_servers_connect_through_the_pinned_guard(mcp_http):
    """Past the up-front check, every connection of a flow's HTTP server is checked again at
    connect time, on the address actually used (no second DNS answer can slip in)."""
    from plait.net.guard import Allowlist, BlockedURLError

    backend = mcp._PinnedBackend(Allowlist())
    with pytest.raises(BlockedURLError, match="loopback"):
        await backend.connect_tcp("localhost", mcp_http.port)
    stream = await mcp._PinnedBackend(Allowlist(["127.0.0.1"])).connect_tcp("127.0.0.1", mcp_http.port)
    await stream.aclose()


async def test_idle_connections_close_and_the_next_call_reconnects(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    ctx = Ctx({"calc": stdio_config(idle_timeout_s=0.2)})
    (add,) = [t for t in await mcp.server_tools(ctx, "calc") if t.name == "add"]
    conn = await mcp.connect("calc", mcp.server_config(ctx, "calc")[0], ctx, trusted=False)
    await asyncio.wait_for(asyncio.shield(conn.task), 20)  # closes itself when unused
    assert conn.closed
    with pytest.raises(mcp._Retired):
        await conn.call("add", {"a": 1, "b": 1})
    assert await add.call({"a": 1, "b": 1}, ctx) == 2  # a new connection


async def test_a_context_without_a_connection_pool_cannot_reach_servers(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    ctx = Ctx({"calc": stdio_config()})
    ctx.services.mcp = None
    with pytest.raises(ToolError, match="no MCP connection pool") as info:
        await mcp.server_tools(ctx, "calc")
    assert info.value.fatal and "RunServices(mcp=MCPConnections())" in str(info.value)
