"""Seeing results and iterating fast (issue 14, defects 1, 8 and 10): the answer of a run is on
screen when it ends, a prompt-style flow has a chat playground whose answer streams in, the Use
panel's curl snippet starts the published version as shown, one node runs alone with the inputs of
the last run, the run dialog remembers its inputs, and a run has one duration everywhere. Each test
fails on the UI before these panels (they did not exist, or showed the last segment's duration)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from typing import Any

from .conftest import API_KEY, LiveServer, screenshot


def scripted_llm(content: str, prompt: str = "{{inputs.message}}") -> dict[str, Any]:
    words = re.findall(r"\S+\s*", content)
    return {
        "provider": "scripted",
        "model": "m",
        "prompt": prompt,
        "stream": True,
        "script": [{"content": content, "chunks": words, "repeat": True}],
    }


def chat_doc(flow_id: str, content: str, *, with_input: bool = True) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": flow_id,
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "llm",
                "type": "llm",
                "config": scripted_llm(content, "{{inputs.message}}" if with_input else "Say it"),
                "position": {"x": 260, "y": 0},
            },
            {"id": "out", "type": "output", "config": {"name": "answer"}, "position": {"x": 520, "y": 0}},
        ],
        "edges": [{"source": "start", "target": "llm"}, {"source": "llm", "target": "out"}],
    }
    if with_input:
        doc["inputs"] = {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        }
    return doc


def wait_run_status(page: Any, status: str) -> None:
    page.wait_for_function(
        "(s) => document.querySelector('[data-testid=run-status]')?.dataset.status === s", arg=status
    )


def latest_run_id(server: LiveServer, flow_id: str) -> str:
    runs = server.api.get("/api/v1/runs", params={"flow_id": flow_id}).json()
    assert runs, f"no run of {flow_id}"
    return str(runs[0]["id"])


def test_after_run_the_answer_is_on_screen_without_inspecting(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(chat_doc("answer-shown", "The printer is **on fire**.", with_input=False))
    page.goto("/flows/answer-shown")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("run-button").click()
    wait_run_status(page, "completed")
    result = page.get_by_test_id("run-result")
    result.wait_for()
    value = page.get_by_test_id("run-result-value-answer")
    value.locator("strong").wait_for()  # the markdown renderer is loaded on demand
    assert "The printer is on fire." in value.inner_text()
    assert value.locator("strong").inner_text() == "on fire"  # markdown, rendered
    assert page.get_by_test_id("run-result-status").get_attribute("data-status") == "completed"
    screenshot(page, "run-result-panel.png")
    page.get_by_test_id("run-dock-close").click()
    assert page.get_by_test_id("run-result").count() == 0


def test_playground_message_gets_a_streamed_answer(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(chat_doc("chatty", "Hello from the playground, friend."))
    page.goto("/flows/chatty")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("open-playground").click()
    page.get_by_test_id("playground-input").fill("hi there")
    page.get_by_test_id("playground-send").click()
    answer = page.get_by_test_id("playground-answer").last
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=playground-answer]')].pop()?.dataset.status === 'completed'"
    )
    assert "Hello from the playground, friend." in answer.inner_text()
    assert page.get_by_test_id("playground-user").last.inner_text().strip() == "hi there"
    run_id = latest_run_id(live_server, "chatty")
    assert answer.get_by_test_id("playground-run-link").get_attribute("href") == f"/runs/{run_id}"
    run = live_server.wait_run(run_id, ("completed",))
    assert run["inputs"] == {"message": "hi there"}
    # the answer came as tokens (the playground shows them as they arrive)
    events = live_server.api.get(f"/api/v1/runs/{run_id}/events").text
    assert events.count("event: node_token") >= 3
    screenshot(page, "playground.png")
    # the history is kept per flow in the browser; New chat clears it
    page.reload()
    page.get_by_test_id("open-playground").click()
    assert page.get_by_test_id("playground-answer").count() == 1
    page.get_by_test_id("playground-new").click()
    assert page.get_by_test_id("playground-answer").count() == 0


def test_use_panel_curl_snippet_runs_the_published_flow(page: Any, live_server: LiveServer) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "usable",
        "inputs": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "out",
                "type": "output",
                "config": {"name": "echo", "value": "got {{inputs.query}}"},
                "position": {"x": 260, "y": 0},
            },
        ],
        "edges": [{"source": "start", "target": "out"}],
    }
    live_server.create_flow(doc, publish=True)
    page.goto("/flows/usable")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("use-button").click()
    page.get_by_test_id("use-dialog").wait_for()
    page.get_by_test_id("use-version").wait_for()
    snippet = page.get_by_test_id("use-curl").inner_text()
    assert live_server.url in snippet and "$PLAIT_API_KEY" in snippet
    assert page.get_by_test_id("use-mcp-tool").inner_text() == "flow_usable"
    assert "os.environ" in page.get_by_test_id("use-python").inner_text()
    screenshot(page, "use-panel.png")
    out = subprocess.run(
        ["bash", "-c", snippet],
        env={"PLAIT_API_KEY": API_KEY, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["status"] == "completed" and body["outputs"] == {"echo": "got Hello"}, body


def test_run_one_node_shows_its_output(page: Any, live_server: LiveServer) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "steps",
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "classify",
                "type": "transform",
                "config": {"mapping": {"label": "bug"}},
                "position": {"x": 260, "y": 0},
            },
            {
                "id": "shout",
                "type": "text",
                "config": {"operation": "template", "template": "label={{classify.label | upper}}"},
                "position": {"x": 520, "y": 0},
            },
            {"id": "out", "type": "output", "config": {"name": "r"}, "position": {"x": 780, "y": 0}},
        ],
        "edges": [
            {"source": "start", "target": "classify"},
            {"source": "classify", "target": "shout"},
            {"source": "shout", "target": "out"},
        ],
    }
    live_server.create_flow(doc)
    page.goto("/flows/steps")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("run-button").click()
    wait_run_status(page, "completed")
    full_run = latest_run_id(live_server, "steps")
    page.get_by_test_id("node-shout").click()
    page.get_by_test_id("run-step").click()
    output = page.get_by_test_id("run-step-output")
    output.wait_for()
    assert "label=BUG" in output.inner_text()
    runs = live_server.api.get("/api/v1/runs", params={"flow_id": "steps"}).json()
    step_run = live_server.wait_run(runs[0]["id"], ("completed",))
    assert step_run["id"] != full_run
    assert "out" not in step_run["nodes"] and step_run["nodes"]["shout"]["output"] == "label=BUG"
    # pinned inputs replace what the node got (the output node gives its input port's value)
    page.get_by_test_id("node-out").click()
    page.get_by_test_id("run-step-pin-edit").click()
    page.get_by_test_id("run-step-pin-text").fill('{"in": "a pinned value"}')
    page.get_by_test_id("run-step-pin").click()
    page.get_by_test_id("run-step").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-step-output]')?.innerText.includes('a pinned value')"
    )
    screenshot(page, "run-step.png")


def test_run_dialog_remembers_the_last_inputs(page: Any, live_server: LiveServer) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "remember",
        "inputs": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 3}},
            "required": ["city"],
        },
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "out",
                "type": "output",
                "config": {"value": "{{inputs.city}}"},
                "position": {"x": 260, "y": 0},
            },
        ],
        "edges": [{"source": "start", "target": "out"}],
    }
    live_server.create_flow(doc)
    page.goto("/flows/remember")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("run-button").click()
    page.get_by_test_id("input-city").fill("Oslo")
    page.get_by_test_id("input-days").fill("5")
    page.get_by_test_id("run-start").click()
    wait_run_status(page, "completed")
    page.reload()
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("run-button").click()
    assert page.get_by_test_id("input-city").input_value() == "Oslo"
    assert page.get_by_test_id("input-days").input_value() == "5"


def _seconds(text: str) -> float:
    m = re.search(r"(\d+(?:\.\d+)?)\s*(ms|s)\b", text)
    assert m, text
    return float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)


def test_a_run_has_one_duration_in_editor_panel_and_inspector(page: Any, live_server: LiveServer) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "timed",
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "review",
                "type": "human",
                "config": {"message": "ok?", "fields": [], "actions": ["approve"]},
                "position": {"x": 260, "y": 0},
            },
            {"id": "done", "type": "output", "config": {"value": "yes"}, "position": {"x": 520, "y": 0}},
        ],
        "edges": [
            {"source": "start", "target": "review"},
            {"source": "review", "source_port": "approve", "target": "done"},
        ],
    }
    live_server.create_flow(doc)
    page.goto("/flows/timed")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("run-button").click()
    page.get_by_test_id("task-link-review").wait_for()
    run_id = latest_run_id(live_server, "timed")
    time.sleep(1.6)  # the run waits for a person: its duration includes the wait
    token = live_server.api.get(f"/api/v1/runs/{run_id}").json()["tasks"][0]["token"]
    r = live_server.api.post(f"/api/v1/human-tasks/{token}/submit", json={"action": "approve", "values": {}})
    assert r.status_code == 200, r.text
    wait_run_status(page, "completed")
    editor_text = page.get_by_test_id("run-status").inner_text()
    editor_s = _seconds(editor_text)
    assert editor_s >= 1.6, editor_text  # not the last segment's few milliseconds
    dock = page.get_by_test_id("run-result-duration").inner_text()
    assert dock.strip() == editor_text.split("·")[1].strip()
    row = live_server.wait_run(run_id, ("completed",))
    assert abs(row["duration_ms"] / 1000 - editor_s) < 0.2
    page.get_by_test_id("panel-runs").click()
    panel_s = _seconds(page.get_by_test_id(f"run-duration-{run_id}").inner_text())
    assert abs(panel_s - editor_s) < 0.2
    page.goto(f"/runs/{run_id}")
    page.get_by_test_id("run-inspector").wait_for()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-status]')?.dataset.status === 'completed'"
    )
    page.wait_for_function(
        "(t) => document.querySelector('[data-testid=run-duration]')?.innerText.trim() === t",
        arg=dock.strip(),
    )
