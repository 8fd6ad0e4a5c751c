"""The assistant's messages in chromium against the real server with the scripted provider (issue
15; assistant-spec.md section 3.2, "Component and Q&A rendering"): the progress card and
"Attempt X of Y", streamed markdown, the component card and Add to canvas, the failure card, stop,
the usage badge and the thinking labels. Each test names its scenarios."""

from __future__ import annotations

import json
import re
from typing import Any

from .conftest import LiveServer
from .test_assistant_support import (  # noqa: F401 - no_script_left is an autouse fixture
    BROKEN,
    ECHO_SPEC,
    STREAM,
    Chat,
    call,
    complete_event,
    component_code,
    draft,
    echo_doc,
    empty_doc,
    fake_stream,
    fenced,
    intent,
    new_flow_id,
    no_script_left,
    questions,
    set_script,
    slow_doc,
    wait_draft,
)

COMPONENT_STEPS = {
    "generating_component",
    "extracting_code",
    "validating",
    "validated",
    "validation_failed",
    "retrying",
}


def start(page: Any, server: LiveServer, steps: list[Any] | None, doc: dict[str, Any] | None = None) -> Chat:
    if steps is not None:
        set_script(server, steps)
    doc = doc or empty_doc(new_flow_id("msg"))
    server.create_flow(doc)
    chat = Chat(page, server)
    chat.open_flow(doc["id"])
    chat.open()
    return chat


def text_of(message: Any) -> str:
    return str(message.get_by_test_id("assistant-message-text").inner_text())


# ------------------------------------------------------------------------------ components
def test_a_s1_a_t3_a_t4_a_t5_a_component_request_shows_its_steps_then_the_card(
    page: Any, live_server: LiveServer
) -> None:
    code = component_code("UpperMsg")
    chat = start(page, live_server, [intent("generate_component"), {"content": fenced(code)}])
    reply = chat.ask("Create a component that converts text to uppercase")
    seen = chat.seen()
    assert any(s in seen for s in ("step:validating", "step:validated", "step:extracting_code")), seen
    card = reply.get_by_test_id("assistant-component-card")
    card.wait_for()
    assert "UpperMsg" in card.inner_text()
    add = card.get_by_test_id("assistant-component-add")
    assert "add to canvas" in add.inner_text().lower() and add.is_enabled()
    card.get_by_test_id("assistant-component-view-code").click()
    assert "class UpperMsg(Component):" in card.inner_text()
    # the progress card goes away with the turn
    assert reply.get_by_test_id("assistant-progress").count() == 0


def test_a_s2_a_t7_a_question_streams_text_without_validation_or_card(
    page: Any, live_server: LiveServer
) -> None:
    answer = "To connect two components, drag from the output handle of one to the input handle of the other."
    chat = start(page, live_server, questions(answer))
    reply = chat.ask("How do I connect two components?")
    assert text_of(reply).strip() == answer
    seen = chat.seen()
    assert "Generating..." in seen, seen
    assert not [s for s in seen if s.startswith("step:") and s[5:] in COMPONENT_STEPS], seen
    assert reply.get_by_test_id("assistant-component-card").count() == 0
    assert page.get_by_test_id("assistant-component-add").count() == 0


def test_a_s19_code_in_an_answer_is_highlighted_sanitised_markdown_and_no_card(
    page: Any, live_server: LiveServer
) -> None:
    answer = (
        "Use **this**:\n\n```python\nfrom plait.sdk import Component\n\n\nclass Shout(Component):\n"
        "    def run(self, text):\n        return {'out': text.upper()}\n```\n\n"
        '<img src="x" onerror="window.__pwned = 1"> <script>window.__pwned = 2</script>'
    )
    chat = start(page, live_server, questions(answer))
    reply = chat.ask("Show me an example component")
    body = reply.get_by_test_id("assistant-message-text")
    assert body.locator("strong").inner_text() == "this"
    code = body.locator("pre code")
    assert "class Shout(Component):" in code.inner_text()
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid=assistant-message-text] pre code')]
                 .some((c) => c.querySelector('span') !== null)"""
    )  # highlighted (the highlighter loads on demand)
    assert page.evaluate("() => window.__pwned") is None
    assert body.locator("script").count() == 0 and body.locator("img[onerror]").count() == 0
    assert reply.get_by_test_id("assistant-component-card").count() == 0


def test_a_s3_a_t6_add_to_canvas_places_the_component_at_the_viewport_centre(
    page: Any, live_server: LiveServer
) -> None:
    flow_id = new_flow_id("msg-add")
    chat = start(
        page,
        live_server,
        [intent("generate_component"), {"content": fenced(component_code("CenterUpper"))}],
        echo_doc(flow_id),
    )
    before = chat.canvas_ids()
    assert before == ["out", "start"]
    reply = chat.ask("make an uppercase component")
    reply.get_by_test_id("assistant-component-add").click()
    ids = chat.wait_canvas(lambda ids: len(ids) == 3)
    (new,) = [i for i in ids if i not in before]
    page.get_by_test_id("editor-notice").wait_for()
    canvas = page.get_by_test_id("canvas").bounding_box()
    box = chat.canvas_boxes()[new]
    cx, cy = canvas["x"] + canvas["width"] / 2, canvas["y"] + canvas["height"] / 2
    pad = 24
    assert (
        box["x"] - pad <= cx <= box["x"] + box["width"] + pad
        and box["y"] - pad <= cy <= box["y"] + box["height"] + pad
    ), (
        box,
        (cx, cy),
    )

    def has_it(doc: dict[str, Any]) -> bool:
        node = next((n for n in doc["nodes"] if n["id"] == new), None)
        return node is not None and (
            node["type"] == "CenterUpper"
            or (node["type"] == "component" and (node.get("config") or {}).get("component") == "CenterUpper")
        )

    wait_draft(live_server, flow_id, has_it)


def test_a_s6_a_follow_up_gets_its_own_card_with_add_and_view_code(
    page: Any, live_server: LiveServer
) -> None:
    first = component_code("FollowUpper")
    second = component_code("FollowUpper", body="text.upper() if isinstance(text, str) else ''")
    steps = [
        intent("generate_component"),
        {"content": fenced(first)},
        intent("generate_component", "add error handling"),
        {"content": fenced(second)},
    ]
    chat = start(page, live_server, steps)
    chat.ask("make an uppercase component")
    reply = chat.ask("add error handling")
    cards = page.get_by_test_id("assistant-component-card")
    assert cards.count() == 2
    card = reply.get_by_test_id("assistant-component-card")
    assert card.get_by_test_id("assistant-component-add").is_visible()
    card.get_by_test_id("assistant-component-view-code").click()
    assert "isinstance(text, str)" in card.inner_text()


def test_a_s11_a_t25_a_t26_three_failures_give_the_failure_card_and_try_again_works(
    page: Any, live_server: LiveServer
) -> None:
    steps = [
        intent("generate_component"),
        *[{"content": fenced(BROKEN)}] * 3,
        intent("generate_component"),
        {"content": fenced(component_code("RetriedUpper"))},
    ]
    chat = start(page, live_server, steps)
    reply = chat.ask("make a broken component")
    seen = chat.seen()
    attempts = [s for s in seen if "Attempt" in s]
    assert any("Attempt 2 of 3" in s or "Attempt 3 of 3" in s for s in attempts), seen
    assert not [
        s
        for s in attempts
        if re.search(r"Attempt (\d+) of 3", s) and int(re.search(r"Attempt (\d+) of 3", s).group(1)) > 3
    ]
    failed = reply.get_by_test_id("assistant-component-failed")
    failed.wait_for()
    text = failed.inner_text()
    assert "Component generation failed" in text and "Try again" in text and "more capable model" in text
    details = failed.get_by_test_id("assistant-error-details")
    assert details.evaluate("(d) => d.open") is False
    details.locator("summary").click()
    assert details.evaluate("(d) => d.open") is True
    failed.get_by_test_id("assistant-component-view-code").click()
    assert "class Broken(Component):" in failed.inner_text()
    assert "does_not_exist_xyz" in details.inner_text()
    assert reply.get_by_test_id("assistant-component-add").count() == 0
    before = chat.count("assistant")
    failed.get_by_test_id("assistant-try-again").click()
    again = chat.wait_reply(before + 1) if chat.count("assistant") > before else chat.wait_reply(before)
    assert chat.requests[-1]["input_value"] == "make a broken component" and len(chat.requests) == 2
    again.get_by_test_id("assistant-component-card").wait_for()
    assert "RetriedUpper" in again.get_by_test_id("assistant-component-card").inner_text()


def test_a_s20_component_steps_and_a_component_in_a_code_block_give_a_card_without_validated(
    page: Any, live_server: LiveServer
) -> None:
    """A-S20 (F17), on a recorded stream: the server here always sets `validated`, so the
    fallback is checked with a `complete` that lacks it after component steps."""
    code = component_code("FallbackUpper")
    steps = [
        {"event": "progress", "step": s, "attempt": 1, "max_attempts": 3}
        for s in ("generating_component", "generating", "extracting_code", "validating")
    ]
    done = complete_event(fenced(code), intent="generate_component")
    del done["data"]["validated"]
    chat = start(page, live_server, questions())
    fake_stream(page, [*steps, {"event": "token", "chunk": fenced(code)}, done])
    reply = chat.ask("make an uppercase component")
    card = reply.get_by_test_id("assistant-component-card")
    card.wait_for()
    assert "FallbackUpper" in card.inner_text()


def test_a_s20_no_card_without_component_steps(page: Any, live_server: LiveServer) -> None:
    """The fallback needs the generation steps: a Q&A answer with the same code has no card."""
    code = component_code("NoStepsUpper")
    chat = start(page, live_server, questions())
    done = complete_event(fenced(code), intent="question")
    del done["data"]["validated"]
    fake_stream(page, [{"event": "token", "chunk": fenced(code)}, done])
    reply = chat.ask("show me code")
    assert "class NoStepsUpper" in text_of(reply)
    assert reply.get_by_test_id("assistant-component-card").count() == 0


# ------------------------------------------------------------------------------ stop
def test_a_s15_a_t11_stop_cancels_the_reply_and_a_new_message_can_be_sent(
    page: Any, live_server: LiveServer
) -> None:
    doc = slow_doc(new_flow_id("msg-stop"), 5)
    chat = start(
        page, live_server, [intent("run_flow"), call("run_flow", inputs={}), {"content": "It ran."}], doc
    )
    before = chat.count("assistant")
    chat.send("run it")
    stop = page.get_by_test_id("assistant-stop")
    stop.wait_for()
    stop.click()
    last = chat.wait_reply(before + 1, status="cancelled")
    assert last.get_by_test_id("assistant-progress").count() == 0
    assert last.get_by_test_id("assistant-thinking").count() == 0
    assert "It ran." not in last.inner_text()
    assert chat.input.is_enabled()
    set_script(live_server, questions("Back again."))
    reply = chat.ask("are you there?")
    assert "Back again." in text_of(reply)


# ------------------------------------------------------------------------------ usage
def test_a_s28_a_t34_m_t61_every_reply_has_the_usage_badge_kept_across_reopen_and_reload(
    page: Any, live_server: LiveServer
) -> None:
    steps = [
        {"match": "n8n", "json": {"translation": "how does n8n work?", "intent": "off_topic"}},
        *questions("A flow is a graph of steps."),
    ]
    chat = start(page, live_server, steps)
    completes: list[dict[str, Any]] = []

    def relay(route: Any) -> None:
        response = route.fetch()
        body = response.text()
        for block in body.split("\n\n"):
            for line in block.splitlines():
                if line.startswith("data: ") and '"complete"' in line:
                    event = json.loads(line[6:])
                    if event.get("event") == "complete":
                        completes.append(event["data"])
        route.fulfill(response=response, body=body)

    page.route(f"**{STREAM}", relay)
    chat.ask("what is a flow?")
    chat.ask("how does n8n work?")
    badges = page.get_by_test_id("assistant-usage")
    assert badges.count() == 2 and len(completes) == 2

    def expected(data: dict[str, Any]) -> tuple[str, int]:
        u = data["usage"]
        tokens = f"{u['input_tokens']:,} in · {u['output_tokens']:,} out · {u['total_tokens']:,} tokens · "
        return tokens, round(data["duration_seconds"] * 1000)

    shown = [badges.nth(i).inner_text().strip() for i in range(2)]
    for text, data in zip(shown, completes, strict=True):
        tokens, ms = expected(data)
        assert text.startswith(tokens) and text.endswith(" ms"), (text, data)
        assert abs(int(text[len(tokens) : -3].replace(",", "")) - ms) <= 1, (text, data)
    # still there after closing and reopening the panel, and after a reload + loading the session
    page.get_by_test_id("assistant-close").click()
    chat.wait_closed()
    chat.open()
    assert [badges.nth(i).inner_text().strip() for i in range(badges.count())] == shown
    session = chat.requests[-1]["session_id"]
    chat.wait_stored(session, 4)
    page.reload()
    page.get_by_test_id("editor").wait_for()
    chat.open()
    page.get_by_test_id("assistant-history-select").select_option(session)
    page.wait_for_function("() => document.querySelectorAll('[data-testid=assistant-usage]').length === 2")
    assert [badges.nth(i).inner_text().strip() for i in range(2)] == shown


# ------------------------------------------------------------------------------ labels
def test_a_t33_f20_orchestrating_shows_for_a_build_and_run_prompt(page: Any, live_server: LiveServer) -> None:
    doc = slow_doc(new_flow_id("msg-orch"), 1)
    chat = start(
        page, live_server, [intent("run_flow"), call("run_flow", inputs={}), {"content": "It ran."}], doc
    )
    reply = chat.ask("run the flow and tell me what it says")
    assert "Orchestrating..." in chat.seen(), chat.seen()
    metrics = reply.get_by_test_id("assistant-run-metrics")
    assert re.search(r"ran in \d+(\.\d+)? s", metrics.inner_text()), metrics.inner_text()


def test_f20_generating_flow_shows_for_a_build(page: Any, live_server: LiveServer) -> None:
    chat = start(
        page,
        live_server,
        [intent("build_flow"), call("build_flow", spec=ECHO_SPEC), {"content": "Built it."}],
    )
    chat.ask("build me an echo flow")
    assert "Generating flow..." in chat.seen(), chat.seen()


def test_f13_an_error_event_shows_its_message_and_the_input_stays_usable(
    page: Any, live_server: LiveServer
) -> None:
    """A turn the script cannot answer ends with an `error` event naming the fix."""
    chat = start(page, live_server, [intent("question")])  # no step left for the answer
    reply = chat.ask("what is a flow?", status="error")
    assert "PLAIT_ASSISTANT_SCRIPT" in reply.inner_text() or "script" in reply.inner_text().lower()
    assert chat.input.is_enabled()
    assert draft(live_server, chat.requests[-1]["flow_id"])["nodes"] == []
