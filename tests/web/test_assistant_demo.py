"""The assistant's end-to-end demo (issue 15 acceptance; assistant-spec.md section 5, "The one
end-to-end demo"), in chromium against the real server with the scripted provider playing the
model: on an empty canvas, press A and ask "create a component that reverses text, build a flow
that uses it, and run it with 'hello'". The component is validated in the sandbox and registered,
the flow lands on the canvas without a click (it was run in the same turn), the run shows live
and is in the run history, the reply says "olleh" with run metrics and a usage badge, and New
session removes the component.

The README's screenshots come from this test: it always writes them to a temporary directory and
copies them to docs/screenshots/assistant-*.png when PLAIT_SCREENSHOTS=1.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from .conftest import SCREENSHOTS, LiveServer
from .test_assistant_support import (  # noqa: F401 - no_script_left is an autouse fixture
    Chat,
    call,
    component_names,
    empty_doc,
    intent,
    no_script_left,
    set_script,
    wait_draft,
)

PROMPT = "create a component that reverses text, build a flow that uses it, and run it with 'hello'"
REVERSE = (
    "from plait.sdk import Component, Input, Output\n\n\n"
    "class ReverseText(Component):\n"
    '    display_name = "Reverse text"\n'
    '    description = "Reverses a text, character by character."\n'
    '    inputs = [Input("text", "string", "The text to reverse")]\n'
    '    outputs = [Output("reversed", "string")]\n\n'
    "    def run(self, text):\n"
    '        return {"reversed": text[::-1]}\n'
)
SPEC = (
    "name: Reverse text\n"
    "inputs:\n  text: string\n"
    "nodes:\n  start: start\n  reverse: ReverseText\n  out: output\n"
    "edges:\n  start -> reverse\n  reverse -> out\n"
    'config:\n  reverse.inputs: {"text": "{{inputs.text}}"}\n  out.name: answer\n  out.value: "{{reverse.reversed}}"\n'
)
SCRIPT = [
    intent("component_then_flow", PROMPT),
    call("generate_component", description="a component that reverses text"),
    {"content": f"Here is the component:\n\n```python\n{REVERSE}```\n"},
    call("search_components", query="reverse text"),
    call("build_flow", spec=SPEC),
    call("run_flow", inputs={"text": "hello"}),
    {
        "content": "I made a **ReverseText** component, built a flow around it and ran it with "
        "`hello`: the flow answered **olleh**."
    },
]


def shoot(page: Any, tmp: Path, name: str) -> None:
    """A README screenshot: always taken; copied into docs/screenshots when PLAIT_SCREENSHOTS=1."""
    path = tmp / name
    page.screenshot(path=str(path))
    if os.environ.get("PLAIT_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, SCREENSHOTS / name)


def test_demo_reverse_component_flow_and_run_from_an_empty_canvas(
    page: Any, live_server: LiveServer, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.emulate_media(color_scheme="light")
    flow_id = "reverse-demo"
    set_script(live_server, SCRIPT)
    live_server.create_flow({**empty_doc(flow_id), "name": "Reverse demo"})
    chat = Chat(page, live_server)
    chat.open_flow(flow_id)
    assert chat.canvas_ids() == []

    # press A on the canvas: the panel opens with the input focused
    box = page.get_by_test_id("canvas").bounding_box()
    page.mouse.click(box["x"] + 25, box["y"] + 25)
    page.keyboard.press("a")
    chat.wait_open()
    # (that the shortcut also focuses the input is test_assistant_panel's A-S16)
    chat.input.click()
    page.keyboard.type(PROMPT)
    shoot(page, tmp_path, "assistant-demo-ask.png")
    page.get_by_test_id("assistant-send").click()

    # the flow lands on the canvas by itself (it ran in the same turn): no proposal to click
    assert chat.wait_canvas(lambda ids: ids == ["out", "reverse", "start"], timeout=60) == [
        "out",
        "reverse",
        "start",
    ]
    reply = chat.wait_reply(1, timeout=60_000)
    assert "Orchestrating..." in chat.seen(), chat.seen()
    assert page.get_by_test_id("assistant-flow-proposal").count() == 0
    saved = wait_draft(live_server, flow_id, lambda d: len(d["nodes"]) == 3)
    node = next(n for n in saved["nodes"] if n["id"] == "reverse")
    assert node["type"] == "ReverseText" or (node.get("config") or {}).get("component") == "ReverseText", node

    # the reply: "olleh", the run's metrics and the usage badge
    text = reply.get_by_test_id("assistant-message-text").inner_text()
    assert "olleh" in text
    metrics = reply.get_by_test_id("assistant-run-metrics").inner_text()
    assert re.search(r"ran in \d+(\.\d+)? s", metrics), metrics
    usage = reply.get_by_test_id("assistant-usage").inner_text()
    found = re.fullmatch(r"([\d,]+) in · ([\d,]+) out · ([\d,]+) tokens · ([\d,]+) ms", usage.strip())
    assert found and int(found.group(3).replace(",", "")) > 0, usage

    # a real, durable run: the canvas followed it live, and it is in the run history
    runs = live_server.api.get("/api/v1/runs", params={"flow_id": flow_id}).json()
    ran = [r for r in runs if r["status"] == "completed"]
    assert ran, runs
    run = live_server.wait_run(ran[0]["id"], ("completed",))
    assert run["outputs"] == {"answer": "olleh"} and run["inputs"] == {"text": "hello"}
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-status]')?.dataset.status === 'completed'"
    )
    assert page.get_by_test_id("run-open").get_attribute("href") == f"/runs/{run['id']}"
    page.wait_for_function(
        "() => document.querySelector('.plait-node[data-testid=\"node-reverse\"]')?.classList.contains('status-ok')"
    )
    shoot(page, tmp_path, "assistant-demo-result.png")
    page.get_by_test_id("assistant-close").click()
    chat.wait_closed()
    page.wait_for_function(  # the closing fade is over
        """() => { const p = document.querySelector('[data-testid=assistant-panel]');
                   return !p || p.offsetParent === null || getComputedStyle(p).opacity === '0'; }"""
    )
    shoot(page, tmp_path, "assistant-demo-canvas.png")  # the flow the assistant built, as it ran
    if page.get_by_test_id("panel-runs").count() == 0:
        page.get_by_test_id("toggle-side").click()
    page.get_by_test_id("panel-runs").click()
    row = page.get_by_test_id(f"run-row-{run['id']}")
    row.wait_for()
    assert row.get_attribute("data-status") == "completed"

    # the component was registered for this session; New session removes it
    assert "ReverseText" in component_names(live_server)
    chat.open()
    page.get_by_test_id("assistant-new-session").click()
    for _ in range(50):
        if "ReverseText" not in component_names(live_server):
            break
        page.wait_for_timeout(100)
    assert "ReverseText" not in component_names(live_server)
    assert chat.count() == 0
