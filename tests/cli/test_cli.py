from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from plait.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def test_run_shows_progress_and_outputs():
    result = runner.invoke(
        app, ["run", str(EXAMPLES / "branching.json"), "--input", "query=please refund me"]
    )
    assert result.exit_code == 0, result.output
    assert "✓ route" in result.output and "skipped" in result.output
    assert "Billing team" in result.output and "completed" in result.output


def test_run_json_output():
    result = runner.invoke(app, ["run", str(EXAMPLES / "branching.json"), "-i", "query=app crash", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "completed" and data["outputs"]["route"] == "bug"


def test_run_with_input_json_file(tmp_path):
    inputs = tmp_path / "in.json"
    inputs.write_text(json.dumps({"query": "hello"}))
    result = runner.invoke(
        app, ["run", str(EXAMPLES / "branching.json"), "--input-json", str(inputs), "--json"]
    )
    assert json.loads(result.output)["outputs"]["route"] == "else"


def test_run_missing_input_is_a_clear_error():
    result = runner.invoke(app, ["run", str(EXAMPLES / "branching.json")])
    assert result.exit_code == 1
    assert "inputs.query" in result.output and "--input" in result.output


def test_waiting_run_without_tty_exits_3_with_the_task():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "plait.cli.main",
            "run",
            str(EXAMPLES / "human_approval.json"),
            "-i",
            "employee=Ada",
            "-i",
            "amount=12.5",
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["status"] == "waiting" and last["task"]["node_id"] == "review"
    assert last["task"]["payload"]["actions"] == ["approve", "reject"]


def test_validate_reports_problems_and_exit_code(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "schema": "plait/flow@1",
                "nodes": [{"id": "a", "type": "nope"}],
                "edges": [{"source": "a", "target": "b"}],
            }
        )
    )
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 1
    assert "unknown node type 'nope'" in result.output and "does not exist" in result.output
    ok = runner.invoke(app, ["validate", str(EXAMPLES / "branching.json")])
    assert ok.exit_code == 0 and "valid" in ok.output


def test_schema_and_nodes_commands():
    schema = json.loads(runner.invoke(app, ["schema"]).output)
    assert schema["properties"]["schema"]
    listing = runner.invoke(app, ["nodes", "--json"])
    names = {d["name"] for d in json.loads(listing.output)}
    assert {"start", "output", "message", "switch", "human", "loop", "map", "http"} <= names
    one = json.loads(runner.invoke(app, ["nodes", "human"]).output)
    assert one["config_schema"]["properties"]["actions"]
    assert runner.invoke(app, ["nodes", "bogus"]).exit_code == 1


def test_waiting_run_on_a_terminal_prompts_for_the_fields():
    import os
    import pty
    import select
    import time

    main, child = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "plait.cli.main",
            "run",
            str(EXAMPLES / "human_approval.json"),
            "-i",
            "employee=Ada",
            "-i",
            "amount=5",
        ],
        stdin=child,
        stdout=child,
        stderr=child,
        close_fds=True,
        env={**os.environ, "COLUMNS": "200", "TERM": "dumb"},
    )
    os.close(child)
    seen = b""

    def read_until(marker: bytes, timeout: float = 30) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(main, 4096)
                except OSError:
                    break

    read_until(b"Comment")
    os.write(main, b"looks fine\n")
    read_until(b"action")
    os.write(main, b"approve\n")
    read_until(b"Approved 5 EUR for Ada. looks fine")
    assert b"completed" in seen
    assert proc.wait(timeout=30) == 0
    os.close(main)


def test_progress_says_why_a_node_runs_again() -> None:
    """A node re-run after the server stopped (node_rerun) is a line of its own, with the reason."""
    import io

    from rich.console import Console

    from plait.cli.main import _Progress
    from plait.engine.events import Event, NodeRerun

    out = io.StringIO()
    _Progress(Console(file=out, width=200))(
        Event(
            seq=3,
            type="node_rerun",
            run_id="r",
            ts=0.0,
            node_id="call",
            data=NodeRerun(2, "the server stopped"),
        )
    )
    assert "call runs again (attempt 2): the server stopped" in out.getvalue()
