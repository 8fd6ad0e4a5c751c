"""`plait mcp` over stdio, driven by the `mcp` SDK's client as an external program would (spec
M-T12, issue 13's acceptance): the server is a subprocess on a temporary SQLite database, acting
as the user of the key it is given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp_server_helpers import assert_invisible, build_run_publish, data

from plait.service import Services, Settings

pytestmark = pytest.mark.timeout(180)


async def _users(db: Path) -> dict[str, str]:
    """Two editors with a key each (read, write, run), on the database the servers will open."""
    services = await Services.open(Settings(database_url=f"sqlite+aiosqlite:///{db}"))
    try:
        keys = {}
        for who in ("ann", "bob"):
            user = await services.users.create_user(email=f"{who}@example.com", role="editor")
            created = await services.users.create_key_for(user["id"], "mcp", ["read", "write", "run"])
            keys[who] = created["key"]
        return keys
    finally:
        await services.close()


def _server(tmp_path: Path, db: Path, key: str | None) -> StdioServerParameters:
    env = {**os.environ, "PLAIT_DATABASE_URL": f"sqlite+aiosqlite:///{db}"}
    env.pop("PLAIT_API_KEY", None)
    env.pop("PLAIT_MCP_KEY", None)
    args = ["-m", "plait.cli.main", "mcp"] + (["--key", key] if key else [])
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tmp_path))


async def test_m_t12_stdio_client_builds_runs_and_publishes_a_flow_and_another_key_cannot_see_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "plait.db"
    keys = await _users(db)

    async with Client(_server(tmp_path, db, keys["ann"]), read_timeout_seconds=60) as ann:
        flow_id = await build_run_publish(ann)

    async with Client(_server(tmp_path, db, keys["bob"]), read_timeout_seconds=60) as bob:
        await assert_invisible(bob, flow_id)
        # bob's own flow gets its own id, even with the same name
        mine = data(await bob.call_tool("create_flow", {"name": "Echo bot"}))
        assert mine["id"] != flow_id


async def test_stdio_without_a_key_acts_as_the_local_admin(tmp_path: Path) -> None:
    db = tmp_path / "plait.db"
    keys = await _users(db)
    async with Client(_server(tmp_path, db, keys["ann"]), read_timeout_seconds=60) as ann:
        flow_id = data(await ann.call_tool("create_flow", {"name": "Ann's"}))["id"]
    async with Client(_server(tmp_path, db, None), read_timeout_seconds=60, mode="legacy") as admin:
        listed = data(await admin.call_tool("list_flows", {}))
        assert [(f["id"], f["access"]) for f in listed["flows"]] == [(flow_id, "admin")]


def test_plait_mcp_with_a_key_that_is_not_valid_says_so_and_exits_1(tmp_path: Path) -> None:
    params = _server(tmp_path, tmp_path / "plait.db", "plait_not-a-key")
    done = subprocess.run(
        [params.command, *params.args],
        env=params.env,
        cwd=tmp_path,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "invalid API key" in done.stderr
