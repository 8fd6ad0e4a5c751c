"""`plait import ragflow` and `plait export ragflow`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from plait.cli.main import app

FIXTURES = Path(__file__).parents[1] / "spec" / "ragflow_fixtures"
EXAMPLES = Path(__file__).parents[2] / "examples"
runner = CliRunner()


def test_import_writes_a_plait_flow(tmp_path: Path) -> None:
    out = tmp_path / "flow.json"
    result = runner.invoke(
        app, ["import", "ragflow", str(FIXTURES / "switch.json"), "-o", str(out), "--id", "sw"]
    )
    assert result.exit_code == 0, result.output
    flow = json.loads(out.read_text(encoding="utf-8"))
    assert flow["id"] == "sw" and any(n["type"] == "switch" for n in flow["nodes"])
    checked = runner.invoke(app, ["validate", str(out)])
    assert checked.exit_code == 0, checked.output


def test_import_to_stdout_and_refusal() -> None:
    result = runner.invoke(app, ["import", "ragflow", str(FIXTURES / "agent_msg.json")])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["schema"] == "plait/flow@1"
    refused = runner.invoke(app, ["import", "ragflow", str(FIXTURES / "resume.json")])
    assert refused.exit_code == 1
    assert "ingestion pipeline" in refused.output
    missing = runner.invoke(app, ["import", "ragflow", str(FIXTURES / "nope.json")])
    assert missing.exit_code == 1


def test_import_publish_stores_the_flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path}/plait.db")
    args = ["import", "ragflow", str(FIXTURES / "questions_category.json"), "--publish", "--id", "cat"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "published flow 'cat' version 1" in result.output
    again = runner.invoke(app, args)
    assert again.exit_code == 1  # already there: --overwrite replaces it
    assert runner.invoke(app, [*args, "--overwrite"]).exit_code == 0


def test_export_and_import_back(tmp_path: Path) -> None:
    out = tmp_path / "rf.json"
    result = runner.invoke(app, ["export", "ragflow", str(EXAMPLES / "llm_triage.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "components" in json.loads(out.read_text(encoding="utf-8"))
    back = runner.invoke(app, ["import", "ragflow", str(out)])
    assert back.exit_code == 0
    assert json.loads(back.stdout)["id"] == "llm-triage"
    refused = runner.invoke(app, ["export", "ragflow", str(EXAMPLES / "subflow.json")])
    assert refused.exit_code == 1
    assert "first" in refused.output and "second" in refused.output
