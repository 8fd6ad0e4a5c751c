"""`plait run FLOW --server URL` runs a stored flow on a real server and streams its progress."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from plait.cli.main import app

from .conftest import API_KEY, human_flow, linear_flow
from .test_server import Server, create_published

runner = CliRunner()


def test_run_remote_streams_progress_and_outputs(tmp_path: Path) -> None:
    server = Server(tmp_path).start()
    try:
        with server.client() as c:
            create_published(c, linear_flow("lin", n=3))
            create_published(c, human_flow("ask"))
        result = runner.invoke(
            app, ["run", "lin", "--server", server.url, "--api-key", API_KEY, "-i", "query=hi"]
        )
        assert result.exit_code == 0, result.output
        assert "✓ d2" in result.output and "completed" in result.output
        as_json = runner.invoke(
            app, ["run", "lin", "--server", server.url, "--api-key", API_KEY, "--json", "-i", "query=hi"]
        )
        assert json.loads(as_json.output)["status"] == "completed"
        waiting = runner.invoke(
            app, ["run", "ask", "--server", server.url, "--api-key", API_KEY, "--json", "-i", "query=x"]
        )
        assert waiting.exit_code == 3 and json.loads(waiting.output.splitlines()[-1])["status"] == "waiting"
        missing = runner.invoke(app, ["run", "nope", "--server", server.url, "--api-key", API_KEY])
        assert missing.exit_code == 1 and "not_found" in missing.output
        denied = runner.invoke(app, ["run", "lin", "--server", server.url, "--api-key", "wrong"])
        assert denied.exit_code == 1 and "401" in denied.output
    finally:
        server.stop()
