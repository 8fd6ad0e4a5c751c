"""Issue 14, defect 10: fix hints in the web UI name UI actions, not CLI commands (the validator's
hints are shared with `plait validate`, which names `plait nodes`)."""

from __future__ import annotations

from pathlib import Path
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


def test_the_library_imports_a_ragflow_agent_and_the_editor_says_so(
    page: Any, live_server: LiveServer
) -> None:
    """Issue 16: the canvas import button takes a RAGFlow agent document as it is."""
    fixture = Path(__file__).resolve().parents[1] / "spec" / "ragflow_fixtures" / "switch.json"
    page.goto("/")
    page.get_by_test_id("library").wait_for()
    page.get_by_test_id("import-file").set_input_files(str(fixture))
    page.wait_for_url("**/flows/**")
    page.get_by_test_id("editor").wait_for()
    notice = page.get_by_test_id("editor-notice")
    notice.wait_for()
    assert "Imported from a RAGFlow agent" in notice.inner_text()
    flow_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    draft = live_server.api.get(f"/api/v1/flows/{flow_id}").json()["draft"]
    assert any(n["type"] == "switch" for n in draft["nodes"]), draft["nodes"]
    page.locator(".plait-node").first.wait_for()
    assert page.locator(".plait-node").count() == len(draft["nodes"])
