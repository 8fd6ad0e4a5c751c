"""Issue 14, defect 10: fix hints in the web UI name UI actions, not CLI commands (the validator's
hints are shared with `plait validate`, which names `plait nodes`)."""

from __future__ import annotations

from typing import Any

from .conftest import LiveServer
from .test_forms import flow


def test_problem_hints_name_ui_actions_not_cli_commands(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(
        flow(
            "hinted",
            {"id": "odd", "type": "zzz"},
            {
                "id": "ask",
                "type": "llm",
                "config": {"provider": "scripted", "prompt": "hi", "temperature": 9},
            },
        )
    )
    page.goto("/flows/hinted")
    page.get_by_test_id("editor").wait_for()
    problems = page.get_by_test_id("problems-list")
    problems.wait_for()
    text = problems.inner_text()
    assert "pick a node type from the palette" in text, text
    assert "settings form" in text, text
    assert "plait nodes" not in text and "`plait" not in text, text
    page.get_by_test_id("node-ask").click()
    page.get_by_test_id("inspector").wait_for()
    assert "plait nodes" not in page.get_by_test_id("inspector").inner_text()
