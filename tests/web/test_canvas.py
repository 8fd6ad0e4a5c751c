"""The web canvas end to end in chromium against the real server (see conftest.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from .conftest import LiveServer, screenshot

# Records every status class a canvas node takes (`status-running`, `status-ok`, ...), so a test
# can tell that states changed live (from the run's events) and in which order.
STATUS_RECORDER = """
() => {
  window.__plaitStatus = {};
  const record = () => {
    for (const el of document.querySelectorAll('[data-testid^="node-"].plait-node')) {
      const id = el.getAttribute('data-testid').slice(5);
      const cls = [...el.classList].find((c) => c.startsWith('status-'));
      const seen = (window.__plaitStatus[id] ||= []);
      if (cls && seen[seen.length - 1] !== cls) seen.push(cls);
    }
  };
  record();
  new MutationObserver(record).observe(document.body, {subtree: true, attributes: true, childList: true,
                                                       attributeFilter: ['class']});
}
"""


def statuses(page: Any) -> dict[str, list[str]]:
    return page.evaluate("() => window.__plaitStatus")


def node_status(page: Any, node_id: str) -> str:
    cls = page.get_by_test_id(f"node-{node_id}").get_attribute("class") or ""
    return next((c[7:] for c in cls.split() if c.startswith("status-")), "")


def wait_node_status(page: Any, node_id: str, status: str) -> None:
    page.wait_for_function(
        """([id, status]) => {
             const el = document.querySelector(`[data-testid="node-${id}"]`);
             return el && el.classList.contains(`status-${status}`);
           }""",
        arg=[node_id, status],
    )


def drag_from_palette(page: Any, type_name: str, x: float, y: float) -> None:
    page.get_by_test_id("palette-search").fill(type_name)
    page.get_by_test_id(f"palette-item-{type_name}").drag_to(
        page.get_by_test_id("canvas"), target_position={"x": x, "y": y}
    )
    page.get_by_test_id("palette-search").fill("")


def settle(page: Any) -> None:
    """Wait until the canvas stops moving (auto-layout and fit-view animate)."""
    page.wait_for_function(
        """() => new Promise((resolve) => {
             const snap = () => document.querySelector('.react-flow__viewport')?.style.transform + '|' +
               [...document.querySelectorAll('.react-flow__node')].map((n) => n.style.transform).join();
             let last = snap();
             const check = () => setTimeout(() => {
               const now = snap();
               if (now === last) resolve(true); else { last = now; check(); }
             }, 150);
             check();
           })"""
    )


def wire(page: Any, source: str, port: str, target: str) -> None:
    """Drag from an output handle to an input handle (React Flow's pointer events, step by step)."""
    settle(page)
    edges = page.locator(".react-flow__edge").count()
    src = page.get_by_test_id(f"handle-{source}-out-{port}").bounding_box()
    dst = page.get_by_test_id(f"handle-{target}-in-in").bounding_box()
    page.mouse.move(src["x"] + src["width"] / 2, src["y"] + src["height"] / 2)
    page.mouse.down()
    page.mouse.move(dst["x"] + dst["width"] / 2, dst["y"] + dst["height"] / 2, steps=12)
    page.mouse.up()
    page.wait_for_function(
        "(n) => document.querySelectorAll('.react-flow__edge').length > n", arg=edges, timeout=5000
    )


def wait_saved(page: Any) -> None:
    page.wait_for_function(
        "() => document.querySelector('[data-testid=save-status]')?.dataset.state === 'saved'"
    )


def latest_run(server: LiveServer, flow_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
    """The flow's newest run once stored with one of `statuses` (the canvas hears `run_finished`
    a moment before the run's row is written)."""
    runs = server.api.get("/api/v1/runs", params={"flow_id": flow_id}).json()
    assert runs, f"no run of {flow_id}"
    return server.wait_run(runs[0]["id"], statuses, timeout=10)


def linear_doc(flow_id: str, delay_s: float) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": f"Delay {delay_s:g}s",
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {"id": "wait", "type": "delay", "config": {"seconds": delay_s}, "position": {"x": 260, "y": 0}},
            {
                "id": "done",
                "type": "output",
                "config": {"name": "result", "value": "waited"},
                "position": {"x": 520, "y": 0},
            },
        ],
        "edges": [{"source": "start", "target": "wait"}, {"source": "wait", "target": "done"}],
    }


def human_doc(flow_id: str) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": "Approval",
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "review",
                "type": "human",
                "position": {"x": 260, "y": 0},
                "config": {
                    "message": "Ship it?",
                    "fields": [{"name": "comment", "type": "text", "required": True}],
                    "actions": ["approve", "reject"],
                },
            },
            {
                "id": "yes",
                "type": "output",
                "position": {"x": 520, "y": -80},
                "config": {"name": "decision", "value": "approved: {{review.comment}}"},
            },
            {
                "id": "no",
                "type": "output",
                "position": {"x": 520, "y": 80},
                "config": {"name": "decision", "value": "rejected: {{review.comment}}"},
            },
        ],
        "edges": [
            {"source": "start", "target": "review"},
            {"source": "review", "source_port": "approve", "target": "yes"},
            {"source": "review", "source_port": "reject", "target": "no"},
        ],
    }


# ----------------------------------------------------------------------------------------- tests
def test_build_a_branching_flow_from_an_empty_canvas_and_run_it(page: Any, live_server: LiveServer) -> None:
    page.goto("/")
    page.get_by_test_id("library").wait_for()
    page.get_by_test_id("new-flow").click()
    page.get_by_test_id("flow-name-input").fill("Size check")
    page.get_by_test_id("flow-id-input").fill("size-check")
    page.get_by_test_id("name-dialog-submit").click()
    page.get_by_test_id("editor").wait_for()
    assert page.url.endswith("/flows/size-check")
    assert page.locator(".plait-node").count() == 0  # an empty canvas

    # Drag four nodes from the palette and wire them: start -> if -(true)-> output, -(false)-> output_2.
    for type_name, x, y in (("start", 80, 300), ("if", 330, 300), ("output", 620, 160), ("output", 620, 460)):
        drag_from_palette(page, type_name, x, y)
    assert page.locator(".plait-node").count() == 4
    page.get_by_test_id("auto-layout").click()
    wire(page, "start", "out", "if")
    wire(page, "if", "true", "output")
    wire(page, "if", "false", "output_2")
    assert page.locator(".react-flow__edge").count() == 3

    # The if node has no condition yet: the validator's problem shows on the node and its field.
    page.get_by_test_id("node-problems-if").wait_for()
    page.get_by_test_id("node-if").click()
    page.get_by_test_id("field-when-error").wait_for()
    assert "required" in page.get_by_test_id("field-when-error").inner_text().lower()
    assert int(page.get_by_test_id("problem-count").get_attribute("data-count")) >= 1

    # Fix it: one condition `inputs.n > 10`.
    page.get_by_test_id("field-when-add").click()
    page.get_by_test_id("field-when.0.ref").fill("inputs.n")
    page.get_by_test_id("field-when.0.op").select_option(">")
    page.get_by_test_id("field-when.0.value").fill("10")
    page.get_by_test_id("node-output").click()
    page.get_by_test_id("field-name").fill("size")
    page.get_by_test_id("field-value").fill("big {{inputs.n}}")
    page.get_by_test_id("node-output_2").click()
    page.get_by_test_id("field-name").fill("size")
    page.get_by_test_id("field-value").fill("small {{inputs.n}}")

    # Declare the run input in the flow settings (nothing selected).
    page.get_by_test_id("canvas").click(position={"x": 30, "y": 30})
    page.keyboard.press("Escape")
    page.get_by_test_id("flow-inputs-advanced").locator("summary").click()  # the raw schema
    page.get_by_test_id("flow-inputs-schema").fill(
        json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    )
    page.wait_for_function(
        "() => document.querySelector('[data-testid=problem-count]')?.dataset.count === '0'"
    )
    page.get_by_test_id("node-problems-if").wait_for(state="detached")
    wait_saved(page)

    # The server has the flow the canvas drew.
    draft = live_server.api.get("/api/v1/flows/size-check").json()
    assert draft["problems"] == []
    assert sorted(n["type"] for n in draft["draft"]["nodes"]) == ["if", "output", "output", "start"]
    ports = sorted((e["source"], e.get("source_port", "out"), e["target"]) for e in draft["draft"]["edges"])
    assert ports == [("if", "false", "output_2"), ("if", "true", "output"), ("start", "out", "if")]

    # Run it: the inputs form, then the node states follow the run's events.
    page.evaluate(STATUS_RECORDER)
    page.get_by_test_id("run-button").click()
    page.get_by_test_id("input-n").fill("42")
    page.get_by_test_id("run-start").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-status]')?.dataset.status === 'completed'"
    )
    assert node_status(page, "start") == "ok"
    assert node_status(page, "if") == "ok"
    assert node_status(page, "output") == "ok"
    assert node_status(page, "output_2") == "skipped"
    seen = statuses(page)
    assert seen["output"][-1] == "status-ok" and len(seen["output"]) >= 2, seen  # changed during the run
    assert seen["output_2"][-1] == "status-skipped", seen
    run = latest_run(live_server, "size-check", ("completed",))
    assert run["outputs"] == {"size": "big 42"}


def slow_doc(flow_id: str) -> dict[str, Any]:
    """start -> route (if) -(true)-> wait (60 s) -> done; -(false)-> quick."""
    doc = linear_doc(flow_id, 60)
    doc["name"] = "Slow lane"
    doc["inputs"] = {
        "type": "object",
        "properties": {"lane": {"type": "string", "enum": ["slow", "fast"], "default": "slow"}},
    }
    doc["nodes"][1]["position"] = {"x": 520, "y": -70}
    doc["nodes"][2]["position"] = {"x": 780, "y": -70}
    doc["nodes"] += [
        {
            "id": "route",
            "type": "if",
            "config": {"when": [{"ref": "inputs.lane", "op": "==", "value": "slow"}]},
            "position": {"x": 260, "y": 0},
        },
        {
            "id": "quick",
            "type": "output",
            "config": {"name": "result", "value": "fast"},
            "position": {"x": 520, "y": 90},
        },
    ]
    doc["edges"] = [
        {"source": "start", "target": "route"},
        {"source": "route", "source_port": "true", "target": "wait"},
        {"source": "route", "source_port": "false", "target": "quick"},
        {"source": "wait", "target": "done"},
    ]
    return doc


def test_stop_a_long_run(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(slow_doc("slow"))
    page.goto("/flows/slow")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("node-wait").wait_for()
    page.evaluate(STATUS_RECORDER)
    page.get_by_test_id("run-button").click()
    page.get_by_test_id("run-start").click()  # the lane defaults to slow
    wait_node_status(page, "wait", "running")  # glowing while it runs
    assert node_status(page, "start") == "ok" and node_status(page, "route") == "ok"
    wait_node_status(page, "quick", "skipped")  # the untaken branch is dimmed
    settle(page)
    screenshot(page, "canvas-run.png")
    # A running node shows what it received (rebuilt from the fired edge and route's output).
    page.get_by_test_id("node-wait").click()
    assert page.get_by_test_id("node-run-status").inner_text() == "running"
    page.get_by_test_id("node-run-inputs").wait_for()
    assert page.get_by_test_id("node-run-inputs").inner_text().strip() not in ("", "null")
    started = time.monotonic()
    page.get_by_test_id("stop-button").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-status]')?.dataset.status === 'cancelled'"
    )
    assert time.monotonic() - started < 10
    latest_run(live_server, "slow", ("cancelled",))
    # the stopped node and the node the run never reached are dimmed
    wait_node_status(page, "wait", "cancelled")
    assert node_status(page, "done") == "unreached"


def test_complete_a_human_task_through_its_page(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(human_doc("approval"))
    page.goto("/flows/approval")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("run-button").click()
    link = page.get_by_test_id("task-link-review")
    link.wait_for()
    wait_node_status(page, "review", "waiting")
    href = link.get_attribute("href")
    assert href and href.startswith("/tasks/")

    task_page = page.context.new_page()
    task_page.goto(href)
    task_page.get_by_test_id("task-page").wait_for()
    assert "Ship it?" in task_page.get_by_test_id("task-message").inner_text()
    task_page.get_by_test_id("task-action-approve").click()  # the comment is required
    task_page.locator("#task-field-comment-error").wait_for()  # the server's "comment: required"
    assert live_server.api.get(f"/api/v1/human-tasks{href[6:]}").json()["status"] == "pending"
    task_page.get_by_test_id("task-field-comment").fill("looks good")
    task_page.get_by_test_id("task-action-approve").click()
    task_page.get_by_test_id("task-outcome").wait_for()
    task_page.close()

    # The canvas that started the run follows it to the end.
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-status]')?.dataset.status === 'completed'"
    )
    assert node_status(page, "yes") == "ok" and node_status(page, "no") == "skipped"
    run = latest_run(live_server, "approval", ("completed",))
    assert run["outputs"] == {"decision": "approved: looks good"}


def test_run_history_inspect_a_node_and_retry_from_it(page: Any, live_server: LiveServer) -> None:
    doc = linear_doc("history", 0)
    doc["inputs"] = {"type": "object", "properties": {"topic": {"type": "string"}}}
    doc["nodes"][2]["config"]["value"] = "{{inputs.topic}}: done"
    live_server.create_flow(doc)
    run_id = live_server.api.post("/api/v1/flows/history/runs", json={"inputs": {"topic": "report"}}).json()[
        "id"
    ]
    page.goto("/flows/history")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("panel-runs").click()
    row = page.get_by_test_id(f"run-row-{run_id}")
    row.wait_for()
    assert row.get_attribute("data-status") == "completed"
    page.get_by_test_id(f"run-link-{run_id}").click()

    page.get_by_test_id("run-inspector").wait_for()
    assert page.url.endswith(f"/runs/{run_id}")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-status]')?.dataset.status === 'completed'"
    )
    assert page.get_by_test_id("run-duration").inner_text().strip()
    page.get_by_test_id("node-done").click()
    page.get_by_test_id("run-node-inspector").wait_for()
    assert json.loads(page.get_by_test_id("node-run-output").inner_text()) == "report: done"
    page.get_by_test_id("node-wait").click()
    page.get_by_test_id("node-run-inputs").wait_for()
    assert "report" in page.get_by_test_id("node-run-inputs").inner_text()  # what the node received
    assert page.get_by_test_id("node-run-status").inner_text().strip() == "ok"
    screenshot(page, "run-inspector.png")

    page.get_by_test_id("retry-from-node").click()
    page.wait_for_url(lambda url: "/runs/" in url and not url.endswith(run_id))
    new_id = page.url.rsplit("/", 1)[-1]
    retried = live_server.wait_run(new_id, ("completed",))
    assert retried["outputs"] == {"result": "report: done"}
    assert retried["nodes"]["start"].get("reused") is True


def test_export_and_reimport_a_flow(page: Any, live_server: LiveServer, tmp_path: Path) -> None:
    live_server.create_flow({**linear_doc("roundtrip", 0), "name": "Round trip"})
    page.goto("/")
    page.get_by_test_id("flow-row-roundtrip").wait_for()
    screenshot(page, "library.png")
    with page.expect_download() as info:
        page.get_by_test_id("export-roundtrip").click()
    exported = tmp_path / "roundtrip.plait.json"
    info.value.save_as(exported)
    doc = json.loads(exported.read_text())
    assert doc["id"] == "roundtrip" and len(doc["nodes"]) == 3

    page.get_by_test_id("delete-roundtrip").click()
    page.get_by_test_id("delete-confirm").click()
    page.get_by_test_id("flow-row-roundtrip").wait_for(state="detached")
    assert live_server.api.get("/api/v1/flows/roundtrip").status_code == 404

    page.get_by_test_id("import-file").set_input_files(str(exported))
    page.wait_for_url("**/flows/roundtrip")
    page.get_by_test_id("node-wait").wait_for()
    back = live_server.api.get("/api/v1/flows/roundtrip").json()
    assert [n["id"] for n in back["draft"]["nodes"]] == ["start", "wait", "done"]
    assert back["problems"] == []


def test_a_200_node_flow_renders_within_1_5_s(page: Any, live_server: LiveServer) -> None:
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "start", "position": {"x": 0, "y": 0}}]
    edges = []
    prev = "start"
    for i in range(1, 200):
        nid = f"n{i}"
        nodes.append(
            {
                "id": nid,
                "type": "delay",
                "config": {"seconds": 0},
                "position": {"x": (i % 20) * 240, "y": (i // 20) * 140},
            }
        )
        edges.append({"source": prev, "target": nid})
        prev = nid
    live_server.create_flow(
        {"schema": "plait/flow@1", "id": "big", "name": "Big", "nodes": nodes, "edges": edges}
    )
    # First render: from the click that opens the flow in the library to all its nodes and edges
    # on the canvas (the editor's code, its API calls and React Flow's layout). Best of two opens,
    # so one hiccup of a shared machine does not decide it.
    times = []
    for _ in range(2):
        page.goto("/")
        page.get_by_test_id("flow-row-big").wait_for()
        elapsed_ms = page.evaluate(
            """() => new Promise((resolve) => {
                 const t0 = performance.now();
                 document.querySelector('[data-testid="open-big"]').click();
                 const tick = () => {
                   const nodes = document.querySelectorAll('.react-flow__node').length;
                   const edges = document.querySelectorAll('.react-flow__edge').length;
                   if (nodes >= 200 && edges >= 199) resolve(performance.now() - t0);
                   else if (performance.now() - t0 > 15000) resolve(-1);
                   else requestAnimationFrame(tick);
                 };
                 tick();
               })"""
        )
        assert elapsed_ms >= 0, "the 200 nodes never all rendered"
        times.append(elapsed_ms)
    print(f"\n  first render of a 200-node flow: {', '.join(f'{t:.0f}' for t in times)} ms")
    assert min(times) < 1500, f"first render took {min(times):.0f} ms"
    # Still responsive: selecting a node opens its inspector.
    page.get_by_test_id("node-n1").click()
    page.get_by_test_id("inspector").wait_for()


def test_agent_tokens_stream_into_the_preview_and_tool_calls_are_listed(
    page: Any, live_server: LiveServer
) -> None:
    # A library flow the agent calls as a tool, and an agent on the scripted model.
    live_server.create_flow(
        {
            "schema": "plait/flow@1",
            "id": "lookup-flow",
            "inputs": {"type": "object", "properties": {"q": {"type": "string"}}},
            "nodes": [
                {"id": "start", "type": "start"},
                {"id": "out", "type": "output", "config": {"name": "answer", "value": "42"}},
            ],
            "edges": [{"source": "start", "target": "out"}],
        },
        publish=True,
    )
    script = [
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "meaning"}}]},
        {"content": "The answer is forty two", "chunks": ["The answer ", "is ", "forty ", "two"]},
    ]
    agent = {
        "provider": "scripted",
        "model": "m",
        "prompt": "What is the meaning?",
        "stream": True,
        "script": script,
        "flows": [
            {
                "flow": "lookup-flow",
                "name": "lookup",
                "description": "Looks things up.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ],
    }
    live_server.create_flow(
        {
            "schema": "plait/flow@1",
            "id": "agentic",
            "nodes": [
                {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
                {"id": "agent", "type": "agent", "config": agent, "position": {"x": 260, "y": 0}},
                {
                    "id": "reply",
                    "type": "output",
                    "config": {"name": "reply", "value": "{{agent.content}}"},
                    "position": {"x": 520, "y": 0},
                },
            ],
            "edges": [{"source": "start", "target": "agent"}, {"source": "agent", "target": "reply"}],
        }
    )
    page.goto("/flows/agentic")
    page.get_by_test_id("node-agent").wait_for()
    page.get_by_test_id("run-button").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-status]')?.dataset.status === 'completed'"
    )
    # The preview is built from node_token events only: the text got there by streaming.
    page.get_by_test_id("node-preview-agent").wait_for()
    assert "The answer is forty two" in page.get_by_test_id("node-preview-agent").inner_text()
    assert "lookup" in page.get_by_test_id("node-tools-agent").inner_text()
    run = latest_run(live_server, "agentic", ("completed",))
    assert run["outputs"] == {"reply": "The answer is forty two"}
    # The agent's tool fields offer the tools the server lists (GET /api/v1/tools).
    page.get_by_test_id("node-agent").click()
    page.get_by_test_id("field-tools-add").click()
    item = page.get_by_test_id("field-tools.0")
    assert item.get_attribute("list") == "field-tools.0-choices"
    page.wait_for_function(
        "() => [...(document.getElementById('field-tools.0-choices')?.options ?? [])]"
        ".some((o) => o.value === 'web_search')"
    )
    options = page.eval_on_selector_all(
        "[data-testid='field-force_tool-choices'] option", "els => els.map((e) => e.value)"
    )
    assert {"web_search", "http_request", "wikipedia"} <= set(options)


def test_the_run_inspector_lists_the_edge_llm_decisions(page: Any, live_server: LiveServer) -> None:
    doc = yaml.safe_load((Path(__file__).parents[2] / "examples" / "edge_support.yaml").read_text())
    doc["id"] = "edge-decisions"
    doc["settings"]["decider"]["provider"] = "scripted"  # whatever keys the environment has
    live_server.create_flow(doc)
    r = live_server.api.post(
        "/api/v1/flows/edge-decisions/runs",
        params={"mode": "background", "version": "draft"},
        json={"inputs": {"ticket": "I want a refund"}},
    )
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    live_server.wait_run(run_id, ("waiting",))  # the scripted decider sends the refund to a person
    page.goto(f"/runs/{run_id}")
    page.get_by_test_id("run-decisions").wait_for()
    first = page.get_by_test_id("decision-1").inner_text()
    assert "Step 1: run triage" in first and "every ticket is triaged first" in first
    page.get_by_test_id("decision-2").wait_for()
    # The editor follows the flow's active run: its decisions show in the side panel too.
    page.goto("/flows/edge-decisions")
    page.get_by_test_id("decision-2").wait_for()
    assert "triage" in page.get_by_test_id("decision-1").inner_text()
