"""Shared pieces of the assistant panel's browser tests (issue 15; no tests here).

The tests drive the real server with the `scripted` assistant provider: each test stores its own
script as the signed-in user's variable `PLAIT_ASSISTANT_SCRIPT` (docs/assistant.md,
"Deterministic runs"), opens a flow, and talks to the panel only through the data-testids of the
issue's contract (notes/assistant-contract.md). Every page load starts a fresh assistant session,
so a script replays from its first step.

A few scenarios need a stream the real server never sends (a `set_flow` followed by more live
updates in one turn, the same `add_component` twice, a `complete` without `validated` after
component steps): those tests replace `/api/v1/assistant/stream` with a recorded SSE body
(`fake_stream`) and say so in their docstring.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from .conftest import LiveServer

STREAM = "/api/v1/assistant/stream"
RESET = "/api/v1/assistant/sessions/reset"
SCRIPT_VARIABLE = "PLAIT_ASSISTANT_SCRIPT"
PLAN_APPROVAL_INPUT = "User approved the plan. Proceed with the build."
EDIT_CONTINUATION_INPUT = "The user applied the proposed field edits. Continue with the remaining steps."
ECHO_SPEC = (
    "name: Echo\ninputs:\n  q: string\nnodes:\n  start: start\n  out: output\nedges:\n  start -> out\n"
    'config:\n  out.name: answer\n  out.value: "{{inputs.q}}"\n'
)

# Records every text the progress card and the thinking label showed, and every placeholder the
# input had, so a test can tell what was on screen during a turn that is over in milliseconds.
RECORDER = """
(() => {
  window.__assistantSeen = [];
  const seen = (t) => { if (t && !window.__assistantSeen.includes(t)) window.__assistantSeen.push(t); };
  const record = () => {
    for (const el of document.querySelectorAll(
        '[data-testid=assistant-progress],[data-testid=assistant-thinking]')) {
      seen((el.textContent || '').replace(/\\s+/g, ' ').trim());
      if (el.dataset.step) seen('step:' + el.dataset.step);
    }
    const input = document.querySelector('[data-testid=assistant-input]');
    if (input) seen('placeholder:' + (input.getAttribute('placeholder') || ''));
  };
  new MutationObserver(record).observe(document, {subtree: true, childList: true, characterData: true,
                                                   attributes: true});
})();
"""

LAST_ASSISTANT_DONE = """(n) => {
  const all = [...document.querySelectorAll('[data-testid=assistant-message][data-role=assistant]')];
  const last = all[all.length - 1];
  return all.length >= n && last && last.dataset.status && last.dataset.status !== 'streaming';
}"""


# ------------------------------------------------------------------------------ scripts
def intent(name: str, translation: str = "", match: str | None = None) -> dict[str, Any]:
    """The classifier's answer (the first model call of a turn)."""
    step: dict[str, Any] = {"json": {"translation": translation or name, "intent": name}}
    if match is not None:
        step["match"] = match
    return step


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """The flow builder's model asking for one tool."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def component_code(
    class_name: str, *, doc: str = "Converts text to upper case.", body: str = "text.upper()"
) -> str:
    return (
        "from plait.sdk import Component, Input, Output\n\n\n"
        f"class {class_name}(Component):\n"
        f'    description = "{doc}"\n'
        '    inputs = [Input("text", "string")]\n'
        '    outputs = [Output("result", "string")]\n\n'
        "    def run(self, text):\n"
        f'        return {{"result": {body}}}\n'
    )


def fenced(code: str, before: str = "Here is the component:") -> str:
    return f"{before}\n\n```python\n{code}```\n"


# Fails in the sandbox (a missing module), not in the parser: each attempt takes a moment, so
# the progress card shows every attempt.
BROKEN = (
    "import does_not_exist_xyz\nfrom plait.sdk import Component, Input, Output\n\n\n"
    "class Broken(Component):\n"
    '    inputs = [Input("text", "string")]\n'
    '    outputs = [Output("result", "string")]\n\n'
    "    def run(self, text):\n"
    '        return {"result": text}\n'
)


def questions(answer: str = "Sure, here you are.", n: int = 6) -> list[dict[str, Any]]:
    """A script answering `n` questions with the same text: the classifier's step then the
    answer's, in turn (a turn consumes its steps in order)."""
    return [{"json": {"translation": "a question", "intent": "question"}}, {"content": answer}] * n


# ------------------------------------------------------------------------------ server side
def set_script(server: LiveServer, steps: list[Any]) -> None:
    r = server.api.put(f"/api/v1/variables/{SCRIPT_VARIABLE}", json={"value": json.dumps(steps)})
    assert r.status_code in (200, 201), r.text


def forget_script(server: LiveServer) -> None:
    server.api.delete(f"/api/v1/variables/{SCRIPT_VARIABLE}")


@pytest.fixture(autouse=True)
def no_script_left(live_server: LiveServer) -> Iterator[None]:
    """The live server is shared by the package: leave the admin without an assistant script and
    without the components the assistant registered (a reset without a session removes them all)."""
    yield
    forget_script(live_server)
    live_server.api.post(RESET)


def new_flow_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def empty_doc(flow_id: str) -> dict[str, Any]:
    return {"schema": "plait/flow@1", "id": flow_id, "name": flow_id, "nodes": [], "edges": []}


def echo_doc(flow_id: str) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": flow_id,
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "out",
                "type": "output",
                "config": {"name": "answer", "value": "hi"},
                "position": {"x": 260, "y": 0},
            },
        ],
        "edges": [{"source": "start", "target": "out"}],
    }


def slow_doc(flow_id: str, seconds: float) -> dict[str, Any]:
    """start -> wait (a delay of `seconds`) -> out: a run_flow of it keeps a turn busy."""
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": flow_id,
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {"id": "wait", "type": "delay", "config": {"seconds": seconds}, "position": {"x": 260, "y": 0}},
            {
                "id": "out",
                "type": "output",
                "config": {"name": "done", "value": "ok"},
                "position": {"x": 520, "y": 0},
            },
        ],
        "edges": [{"source": "start", "target": "wait"}, {"source": "wait", "target": "out"}],
    }


def draft(server: LiveServer, flow_id: str) -> dict[str, Any]:
    r = server.api.get(f"/api/v1/flows/{flow_id}")
    assert r.status_code == 200, r.text
    return dict(r.json()["draft"])


def wait_draft(
    server: LiveServer, flow_id: str, ok: Callable[[dict[str, Any]], bool], timeout: float = 10
) -> dict[str, Any]:
    """The saved draft once `ok` holds for it (the editor autosaves a moment after an edit)."""
    deadline = time.monotonic() + timeout
    while True:
        doc = draft(server, flow_id)
        if ok(doc):
            return doc
        if time.monotonic() > deadline:
            raise AssertionError(f"the saved draft never matched: {json.dumps(doc)[:2000]}")
        time.sleep(0.1)


def component_names(server: LiveServer) -> list[str]:
    return [c["name"] for c in server.api.get("/api/v1/components").json()]


def sse_body(events: list[dict[str, Any]]) -> str:
    return "".join(f"event: {e['event']}\ndata: {json.dumps(e)}\n\n" for e in events)


def fake_stream(page: Any, *turns: list[dict[str, Any]]) -> None:
    """Answer the panel's next stream requests with these recorded turns, in order."""
    queue = list(turns)

    def fulfil(route: Any) -> None:
        events = queue.pop(0) if queue else [{"event": "error", "message": "no recorded turn left"}]
        route.fulfill(status=200, headers={"content-type": "text/event-stream"}, body=sse_body(events))

    page.route(f"**{STREAM}", fulfil)


def complete_event(result: str = "Done.", **data: Any) -> dict[str, Any]:
    return {
        "event": "complete",
        "data": {
            "result": result,
            "validated": False,
            "class_name": None,
            "component_code": None,
            "validation_attempts": 0,
            "intent": "build_flow",
            "provider": "scripted",
            "model": "scripted",
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
            "duration_seconds": 0.25,
            **data,
        },
    }


# ------------------------------------------------------------------------------ the page
class Chat:
    """The assistant panel of one page, plus what the page sent to the assistant's routes."""

    def __init__(self, page: Any, server: LiveServer) -> None:
        self.page = page
        self.server = server
        self.requests: list[dict[str, Any]] = []  # the bodies of POST /assistant/stream, in order
        self.resets: list[str | None] = []  # the session_id of each POST /assistant/sessions/reset
        self.console: list[tuple[str, str]] = []
        page.on("request", self._on_request)
        page.on("console", lambda m: self.console.append((m.type, m.text)))
        page.add_init_script(RECORDER)

    def _on_request(self, request: Any) -> None:
        path = urlparse(request.url).path
        if path == STREAM and request.method == "POST":
            self.requests.append(json.loads(request.post_data or "{}"))
        elif path == RESET and request.method == "POST":
            self.resets.append((parse_qs(urlparse(request.url).query).get("session_id") or [None])[0])

    # -- navigation
    def open_flow(self, flow_id: str) -> None:
        self.page.goto(f"/flows/{flow_id}")
        self.page.get_by_test_id("editor").wait_for()
        self.page.get_by_test_id("assistant-toggle").wait_for()

    def open(self) -> Any:
        """Open the panel from the canvas controls; the panel."""
        panel = self.panel
        if panel.count() == 0 or panel.get_attribute("data-state") != "open":
            self.page.get_by_test_id("assistant-toggle").click()
        self.wait_open()
        return panel

    def wait_open(self) -> None:
        self.page.locator('[data-testid=assistant-panel][data-state="open"]').wait_for()

    def is_open(self) -> bool:
        panel = self.panel
        return panel.count() > 0 and panel.is_visible() and panel.get_attribute("data-state") == "open"

    def wait_closed(self) -> None:
        self.page.wait_for_function(
            """() => { const p = document.querySelector('[data-testid=assistant-panel]');
                       return !p || p.dataset.state !== 'open' || p.offsetParent === null; }"""
        )

    @property
    def panel(self) -> Any:
        return self.page.get_by_test_id("assistant-panel")

    @property
    def input(self) -> Any:
        return self.page.get_by_test_id("assistant-input")

    def wait_resets(self, n: int, timeout: float = 10) -> list[str | None]:
        """The session resets the page sent, once there are at least `n`."""
        deadline = time.monotonic() + timeout
        while len(self.resets) < n:
            assert time.monotonic() < deadline, f"expected {n} session resets, saw {self.resets}"
            self.page.wait_for_timeout(50)
        return list(self.resets)

    # -- talking
    def send(self, text: str) -> None:
        self.input.fill(text)
        self.page.get_by_test_id("assistant-send").click()

    def ask(self, text: str, status: str | None = "complete", timeout: float = 30_000) -> Any:
        """Send `text` and wait for the new assistant message to stop streaming; that message."""
        before = self.count("assistant")
        self.send(text)
        return self.wait_reply(before + 1, status, timeout)

    def wait_reply(self, n: int, status: str | None = "complete", timeout: float = 30_000) -> Any:
        self.page.wait_for_function(LAST_ASSISTANT_DONE, arg=n, timeout=timeout)
        # a fixed position, not `.last`: later messages must not move this locator
        last = self.messages("assistant").nth(self.count("assistant") - 1)
        if status is not None:
            assert last.get_attribute("data-status") == status, (
                last.get_attribute("data-status"),
                last.inner_text(),
            )
        return last

    def messages(self, role: str | None = None) -> Any:
        sel = "[data-testid=assistant-message]" + (f"[data-role={role}]" if role else "")
        return self.page.locator(sel)

    def count(self, role: str | None = None) -> int:
        return int(self.messages(role).count())

    def seen(self) -> list[str]:
        """Every progress/thinking text and input placeholder shown since the page loaded."""
        return list(self.page.evaluate("() => window.__assistantSeen || []"))

    def storage(self, key: str) -> Any:
        raw = self.page.evaluate("(k) => window.localStorage.getItem(k)", key)
        return None if raw is None else json.loads(raw) if raw[:1] in "[{" else raw

    def wait_stored(self, session_id: str, messages: int = 1) -> None:
        """Wait until the browser stored the session with at least `messages` messages."""
        self.page.wait_for_function(
            """([id, n]) => { try { const all = JSON.parse(localStorage.getItem('plait-assistant-sessions') || '[]');
                                   const s = all.find((x) => x.id === id);
                                   return !!s && s.messages.length >= n; } catch { return false; } }""",
            arg=[session_id, messages],
        )

    # -- the canvas
    def canvas_ids(self) -> list[str]:
        """The ids of the nodes on the editor's canvas (not those of a preview in the panel)."""
        return sorted(
            self.page.evaluate(
                """() => [...document.querySelectorAll('.plait-node[data-testid^="node-"]')]
                      .filter((el) => !el.closest('[data-testid=assistant-panel]'))
                      .map((el) => el.getAttribute('data-testid').slice(5))"""
            )
        )

    def canvas_boxes(self) -> dict[str, dict[str, float]]:
        return dict(
            self.page.evaluate(
                """() => Object.fromEntries([...document.querySelectorAll('.plait-node[data-testid^="node-"]')]
                      .filter((el) => !el.closest('[data-testid=assistant-panel]'))
                      .map((el) => { const r = el.getBoundingClientRect();
                                     return [el.getAttribute('data-testid').slice(5),
                                             {x: r.x, y: r.y, width: r.width, height: r.height}]; }))"""
            )
        )

    def wait_canvas(self, ok: Callable[[list[str]], bool], timeout: float = 10) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            ids = self.canvas_ids()
            if ok(ids):
                return ids
            if time.monotonic() > deadline:
                raise AssertionError(f"the canvas never matched: {ids}")
            time.sleep(0.05)

    def canvas_selected(self) -> list[str]:
        """The ids of the canvas nodes shown as selected."""
        return sorted(
            self.page.evaluate(
                """() => [...document.querySelectorAll('.plait-node.selected[data-testid^="node-"]')]
                      .filter((el) => !el.closest('[data-testid=assistant-panel]'))
                      .map((el) => el.getAttribute('data-testid').slice(5))"""
            )
        )


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )
