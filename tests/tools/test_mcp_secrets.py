"""`${NAME}` in MCP server settings: a flow's settings read the run's stored variables only, never
the server's environment (a flow must not be able to name PLAIT_SECRET_KEY or a cloud credential
and send it to a server of its choosing); the operator's server-side file may read the environment.
"""

from __future__ import annotations

import json

import pytest
from _mcp import stdio_config

import plait
from plait_testing import flow

pytestmark = pytest.mark.usefixtures("mcp_cleanup")


def _whoami_flow(env_value: str, *, settings: bool = True) -> dict:
    servers = {"calc": stdio_config(env={"MCP_TEST_USER": env_value})} if settings else {}
    return flow(
        [
            {"id": "who", "type": "tool", "config": {"tool": "mcp:calc/whoami", "args": {}}},
            {"id": "out", "type": "output", "config": {"value": "{{who}}"}},
        ],
        [("who", "out")],
        settings={"mcp_servers": servers},
    )


@pytest.mark.parametrize(
    "name", ["PLAIT_SECRET_KEY", "PLAIT_API_KEY", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY"]
)
async def test_flow_settings_never_read_the_process_environment(monkeypatch, name):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    monkeypatch.setenv(name, "server-only-value-123")
    result = await plait.run(_whoami_flow("${" + name + "}"))
    assert result.status == "failed"
    assert "server-only-value-123" not in json.dumps([e.to_dict() for e in result.events])
    assert f"needs the variable {name}" in (result.error or "")
    assert "never read the server's environment" in (result.error or "")


async def test_flow_settings_read_the_stored_variables(monkeypatch):
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    monkeypatch.setenv("WHO", "from-the-environment")
    result = await plait.run(_whoami_flow("${WHO}"), env={"WHO": "stored-ada"})
    assert result.status == "completed", result.error
    assert result.outputs == {"out": "stored-ada"}


async def test_the_operators_file_may_read_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("PLAIT_MCP_FLOW_STDIO", raising=False)
    monkeypatch.setenv("WHO", "operator-env")
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"calc": stdio_config(env={"MCP_TEST_USER": "${WHO}"})}}))
    monkeypatch.setenv("PLAIT_MCP_CONFIG", str(path))
    result = await plait.run(_whoami_flow("", settings=False))
    assert result.status == "completed", result.error
    assert result.outputs == {"out": "operator-env"}
    # A stored variable of the same name still wins.
    result = await plait.run(_whoami_flow("", settings=False), env={"WHO": "stored"})
    assert result.outputs == {"out": "stored"}


async def test_a_flow_entry_replacing_a_server_side_one_is_not_trusted(monkeypatch, tmp_path):
    """Same name as the operator's server: the flow's entry wins, and it is a flow entry (no env)."""
    monkeypatch.setenv("PLAIT_MCP_FLOW_STDIO", "1")
    monkeypatch.setenv("PLAIT_SECRET_KEY", "server-only-value-123")
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"calc": stdio_config()}}))
    monkeypatch.setenv("PLAIT_MCP_CONFIG", str(path))
    result = await plait.run(_whoami_flow("${PLAIT_SECRET_KEY}"))
    assert result.status == "failed"
    assert "needs the variable PLAIT_SECRET_KEY" in (result.error or "")
