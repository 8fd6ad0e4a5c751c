"""The assistant panel's basics in chromium against the real server with the scripted provider
(issue 15; assistant-spec.md section 3.2: "Panel and basics", models and the empty state,
sessions, session reset wiring, input history and skip-all). Each test names its scenarios."""

from __future__ import annotations

import json
from typing import Any

from .conftest import LiveServer
from .test_assistant_support import (  # noqa: F401 - no_script_left is an autouse fixture
    ECHO_SPEC,
    Chat,
    call,
    component_code,
    component_names,
    empty_doc,
    fenced,
    intent,
    new_flow_id,
    no_script_left,
    questions,
    set_script,
    slow_doc,
)

OPEN_KEYS = ("plait-assistant-sessions", "plait-assistant-input-history", "plait-assistant-skip-all")


def start(page: Any, server: LiveServer, steps: list[Any] | None, doc: dict[str, Any] | None = None) -> Chat:
    """Store the script, create the flow, open it in the editor and open the panel."""
    if steps is not None:
        set_script(server, steps)
    doc = doc or empty_doc(new_flow_id("asst"))
    server.create_flow(doc)
    chat = Chat(page, server)
    chat.open_flow(doc["id"])
    chat.open()
    return chat


def click_canvas(page: Any) -> None:
    """Focus the canvas: a click on its empty top-left corner (the panel floats in the middle)."""
    box = page.get_by_test_id("canvas").bounding_box()
    page.mouse.click(box["x"] + 25, box["y"] + 25)


def seed_storage(chat: Chat, values: dict[str, Any]) -> None:
    """Put values in localStorage, then reload so the panel reads them as a returning user's."""
    chat.page.evaluate(
        "(v) => { for (const [k, x] of Object.entries(v)) localStorage.setItem(k, typeof x === 'string' ? x : JSON.stringify(x)); }",
        values,
    )
    chat.page.reload()
    chat.page.get_by_test_id("editor").wait_for()
    chat.open()


# ------------------------------------------------------------------------------ panel and basics
def test_a_t1_a_s16_a_t13_controls_button_and_shortcut_a_toggle_the_panel_and_focus_the_input(
    page: Any, live_server: LiveServer
) -> None:
    set_script(live_server, questions())
    live_server.create_flow(empty_doc("asst-toggle"))
    chat = Chat(page, live_server)
    chat.open_flow("asst-toggle")
    assert page.get_by_test_id("assistant-panel").count() == 0 or not chat.is_open()
    # A-S16: the shortcut on the focused canvas opens it (the first time too) and focuses the input
    click_canvas(page)
    page.keyboard.press("a")
    chat.wait_open()
    page.wait_for_function("() => document.activeElement?.dataset.testid === 'assistant-input'")
    # typing an "a" in the input is text, not the shortcut
    page.keyboard.type("a")
    assert chat.input.input_value() == "a" and chat.is_open()
    # pressed again outside the input, it closes the panel
    click_canvas(page)
    page.keyboard.press("a")
    chat.wait_closed()
    # A-T1: the canvas controls' button opens and closes it too
    page.get_by_test_id("assistant-toggle").click()
    chat.wait_open()
    page.wait_for_function("() => document.activeElement?.dataset.testid === 'assistant-input'")
    page.get_by_test_id("assistant-toggle").click()
    chat.wait_closed()


def test_a_s17_a_t14_escape_closes_the_panel_from_the_input_and_from_the_canvas(
    page: Any, live_server: LiveServer
) -> None:
    chat = start(page, live_server, questions())
    chat.input.click()
    page.keyboard.press("Escape")
    chat.wait_closed()
    chat.open()
    click_canvas(page)
    page.keyboard.press("Escape")
    chat.wait_closed()


def test_a_s16_a_changed_shortcut_key_replaces_a(page: Any, live_server: LiveServer) -> None:
    """A-S16 "default A, configurable": with another key stored (plait-assistant-shortcut, the
    preference a settings page writes), that key toggles the panel and `a` no longer does."""
    set_script(live_server, questions())
    live_server.create_flow(empty_doc("asst-key"))
    chat = Chat(page, live_server)
    chat.open_flow("asst-key")
    page.evaluate("() => localStorage.setItem('plait-assistant-shortcut', 'j')")
    page.reload()
    page.get_by_test_id("editor").wait_for()
    click_canvas(page)
    page.keyboard.press("a")
    page.wait_for_timeout(300)
    assert not chat.is_open()
    page.keyboard.press("j")
    chat.wait_open()
    click_canvas(page)
    page.keyboard.press("j")
    chat.wait_closed()


def test_a_t15_the_shortcut_is_listed_and_changeable_in_settings_shortcuts(
    page: Any, live_server: LiveServer
) -> None:
    """A-T15: Settings has a Shortcuts section listing "AI Assistant" with its key (A), and the
    key can be changed there (a field or a button in that row)."""
    page.goto("/settings")
    page.get_by_text("Shortcuts", exact=True).first.click()
    row = page.get_by_text("AI Assistant", exact=True).first
    row.wait_for()
    line = row.locator("xpath=ancestor::*[self::tr or self::li or self::label or self::div][1]")
    assert "A" in line.inner_text().replace("AI Assistant", "")
    assert line.locator("input, button, select").count() > 0


def test_a_s18_a_t16_placeholder_reads_working_on_it_while_generating(
    page: Any, live_server: LiveServer
) -> None:
    doc = slow_doc("asst-busy", 2)
    chat = start(
        page, live_server, [intent("run_flow"), call("run_flow", inputs={}), {"content": "It ran."}], doc
    )
    idle = chat.input.get_attribute("placeholder") or ""
    assert idle and idle != "Working on it..."
    before = chat.count("assistant")
    chat.send("run it")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=assistant-input]')?.placeholder === 'Working on it...'"
    )
    chat.wait_reply(before + 1)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=assistant-input]')?.placeholder !== 'Working on it...'"
    )
    assert (chat.input.get_attribute("placeholder") or "").strip()


def test_a_t17_resizing_from_the_edge_works_and_the_size_is_kept(page: Any, live_server: LiveServer) -> None:
    chat = start(page, live_server, questions())
    before = chat.panel.bounding_box()
    handle = page.get_by_test_id("assistant-resize").bounding_box()
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 60, y + 50, steps=4)
    page.mouse.move(x - 120, y + 100, steps=4)
    page.mouse.up()
    after = chat.panel.bounding_box()
    assert abs(after["width"] - before["width"]) >= 50 or abs(after["height"] - before["height"]) >= 50, (
        before,
        after,
    )
    saved = chat.storage("plait-assistant-size")
    assert abs(saved["width"] - after["width"]) <= 2 and abs(saved["height"] - after["height"]) <= 2, saved
    page.reload()
    page.get_by_test_id("editor").wait_for()
    chat.open()
    again = chat.panel.bounding_box()
    assert abs(again["width"] - after["width"]) <= 2 and abs(again["height"] - after["height"]) <= 2


def test_a_t18_zooming_does_not_shift_the_canvas_controls(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(empty_doc("asst-zoom"))
    chat = Chat(page, live_server)
    chat.open_flow("asst-zoom")
    toggle = page.get_by_test_id("assistant-toggle")
    where = toggle.bounding_box()
    for button in ("zoomout", "zoomout", "zoomin", "zoomin", "zoomin", "zoomin", "zoomin"):
        page.locator(f".react-flow__controls-{button}").click()
        box = toggle.bounding_box()
        assert (round(box["x"]), round(box["y"]), round(box["width"])) == (
            round(where["x"]),
            round(where["y"]),
            round(where["width"]),
        )


def test_a_t19_the_panel_opens_at_once_with_many_previous_messages(
    page: Any, live_server: LiveServer
) -> None:
    chat = start(page, live_server, questions())
    messages = []
    for i in range(150):
        messages.append(
            {"id": f"u{i}", "role": "user", "text": f"question {i}", "status": "complete", "createdAt": i}
        )
        messages.append(
            {
                "id": f"a{i}",
                "role": "assistant",
                "text": f"An answer with **markdown** number {i}.\n\n```python\nprint({i})\n```",
                "status": "complete",
                "createdAt": i,
            }
        )
    session = {"id": "agentic_many", "title": "question 0", "updatedAt": 1, "messages": messages}
    seed_storage(chat, {"plait-assistant-sessions": [session]})
    page.get_by_test_id("assistant-history-select").select_option("agentic_many")
    page.wait_for_function("() => document.querySelectorAll('[data-testid=assistant-message]').length >= 100")
    page.get_by_test_id("assistant-close").click()
    chat.wait_closed()
    elapsed = page.evaluate(
        """() => new Promise((done) => {
             const t0 = performance.now();
             document.querySelector('[data-testid=assistant-toggle]').click();
             const check = () => {
               const p = document.querySelector('[data-testid=assistant-panel]');
               if (p && p.dataset.state === 'open' && p.offsetParent !== null) done(performance.now() - t0);
               else requestAnimationFrame(check);
             };
             check();
           })"""
    )
    assert elapsed < 400, f"the panel took {elapsed:.0f} ms to open"


# ------------------------------------------------------------------------------ models
def test_a_s13_without_providers_the_empty_state_shows_and_the_input_is_disabled(
    page: Any, live_server: LiveServer
) -> None:
    config = live_server.api.get("/api/v1/assistant/config").json()
    assert config["configured"] is False, config
    chat = start(page, live_server, None)
    empty = page.get_by_test_id("assistant-no-models")
    empty.wait_for()
    assert "no models configured" in empty.inner_text().lower()
    assert chat.input.is_disabled()
    assert page.get_by_test_id("assistant-send").is_disabled()


def test_a_s32_a_t38_configure_providers_opens_the_models_settings_in_place(
    page: Any, live_server: LiveServer
) -> None:
    start(page, live_server, None)
    url = page.url
    page.get_by_test_id("assistant-no-models-configure-providers").click()
    dialog = page.get_by_test_id("assistant-models-dialog")
    dialog.wait_for()
    dialog.get_by_test_id("models-page").wait_for()
    assert page.url == url  # no navigation
    assert page.get_by_test_id("editor").is_visible()


def test_a_s5_the_only_configured_provider_scripted_is_chosen_and_saved(
    page: Any, live_server: LiveServer
) -> None:
    set_script(live_server, questions())
    config = live_server.api.get("/api/v1/assistant/config").json()
    assert config["configured_providers"] == ["scripted"] and config["default_provider"] == "scripted", config
    chat = start(page, live_server, None)
    select = page.get_by_test_id("assistant-model-select")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=assistant-model-select]')?.value === 'scripted/scripted'"
    )
    assert select.input_value() == "scripted/scripted"
    assert chat.storage("plait-assistant-selected-model") == {"provider": "scripted", "model": "scripted"}
    assert page.get_by_test_id("assistant-no-models").count() == 0 and chat.input.is_enabled()
    chat.ask("hello")
    assert chat.requests[-1]["provider"] == "scripted" and chat.requests[-1]["model_name"] == "scripted"


def test_a_t22_a_t23_the_provider_icon_follows_the_chosen_provider(
    page: Any, live_server: LiveServer
) -> None:
    r = live_server.api.put(
        "/api/v1/variables/ANTHROPIC_API_KEY", json={"value": "sk-ant-test", "is_secret": True}
    )
    assert r.status_code in (200, 201), r.text
    try:
        chat = start(page, live_server, questions())
        select = page.get_by_test_id("assistant-model-select")
        page.wait_for_function(
            "() => (document.querySelector('[data-testid=assistant-model-select]')?.value || '').startsWith('anthropic/')"
        )
        icon = page.get_by_test_id("assistant-provider-icon")
        anthropic_icon = icon.evaluate("(e) => e.outerHTML")
        select.select_option("scripted/scripted")
        page.wait_for_function(
            "(was) => document.querySelector('[data-testid=assistant-provider-icon]')?.outerHTML !== was",
            arg=anthropic_icon,
        )
        assert chat.storage("plait-assistant-selected-model") == {"provider": "scripted", "model": "scripted"}
    finally:
        live_server.api.delete("/api/v1/variables/ANTHROPIC_API_KEY")


def test_a_s39_m_t68_a_t42_a_doubly_encoded_saved_model_shows_as_its_name(
    page: Any, live_server: LiveServer
) -> None:
    r = live_server.api.put("/api/v1/variables/OPENAI_API_KEY", json={"value": "sk-test", "is_secret": True})
    assert r.status_code in (200, 201), r.text
    try:
        chat = start(page, live_server, questions())
        encoded = json.dumps(json.dumps([{"name": "gpt-4o", "provider": "openai", "icon": "OpenAI"}]))
        seed_storage(
            chat, {"plait-assistant-selected-model": {"provider": "openai", "model": json.loads(encoded)}}
        )
        page.wait_for_function(
            "() => document.querySelector('[data-testid=assistant-model-select]')?.value === 'openai/gpt-4o'"
        )
        shown = page.get_by_test_id("assistant-model-select").evaluate(
            "(s) => s.selectedOptions[0].textContent"
        )
        assert "[" not in shown and "{" not in shown and "4o" in shown, shown
    finally:
        live_server.api.delete("/api/v1/variables/OPENAI_API_KEY")


# ------------------------------------------------------------------------------ sessions
def test_a_s27_a_t12_m_s71_m_t53_new_session_clears_rotates_resets_and_wipes_components(
    page: Any, live_server: LiveServer
) -> None:
    steps = [intent("generate_component"), {"content": fenced(component_code("SessionUpper"))}]
    chat = start(page, live_server, steps)
    first_id = chat.wait_resets(1)[0]
    assert first_id and first_id.startswith("agentic_"), chat.resets  # F11: reset on mount
    chat.ask("make an uppercase component")
    assert chat.requests[-1]["session_id"] == first_id
    assert "SessionUpper" in component_names(live_server)
    size = chat.panel.bounding_box()
    page.get_by_test_id("assistant-new-session").click()
    page.wait_for_function("() => document.querySelectorAll('[data-testid=assistant-message]').length === 0")
    # F9: the reset names the new id (the panel may also reset the old one, to forget its components)
    for _ in range(100):
        fresh = [r for r in chat.resets[1:] if r and r != first_id]
        if fresh:
            break
        page.wait_for_timeout(50)
    assert len(fresh) == 1 and fresh[0].startswith("agentic_"), chat.resets
    new_id = fresh[0]
    after = chat.panel.bounding_box()
    assert (round(after["width"]), round(after["height"])) == (round(size["width"]), round(size["height"]))
    # the component the old session registered is gone
    for _ in range(50):
        if "SessionUpper" not in component_names(live_server):
            break
        page.wait_for_timeout(100)
    assert "SessionUpper" not in component_names(live_server)
    # the next message uses the new id (and the script replays from its start in that session)
    set_script(live_server, questions("Fresh session."))
    reply = chat.ask("hi")
    assert chat.requests[-1]["session_id"] == new_id
    assert "Fresh session." in reply.get_by_test_id("assistant-message-text").inner_text()


def test_a_s27_new_session_cancels_a_running_turn(page: Any, live_server: LiveServer) -> None:
    doc = slow_doc("asst-newsess-busy", 4)
    chat = start(
        page, live_server, [intent("run_flow"), call("run_flow", inputs={}), {"content": "It ran."}], doc
    )
    chat.send("run it")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=assistant-input]')?.placeholder === 'Working on it...'"
    )
    page.get_by_test_id("assistant-new-session").click()
    page.wait_for_function("() => document.querySelectorAll('[data-testid=assistant-message]').length === 0")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=assistant-input]')?.placeholder !== 'Working on it...'"
    )
    assert chat.input.is_enabled()
    assert (
        page.get_by_test_id("assistant-stop").count() == 0
        or not page.get_by_test_id("assistant-stop").is_visible()
    )


def test_m_s70_m_t54_reloading_starts_a_new_session_and_resets_it(page: Any, live_server: LiveServer) -> None:
    steps = [intent("generate_component"), {"content": fenced(component_code("ReloadUpper"))}]
    chat = start(page, live_server, steps)
    chat.ask("make an uppercase component")
    assert "ReloadUpper" in component_names(live_server)
    old = chat.requests[-1]["session_id"]
    page.reload()
    page.get_by_test_id("editor").wait_for()
    chat.open()
    chat.wait_resets(2)
    fresh = [r for r in chat.resets if r and r != old]
    assert fresh, chat.resets
    for _ in range(50):
        if "ReloadUpper" not in component_names(live_server):
            break
        page.wait_for_timeout(100)
    assert "ReloadUpper" not in component_names(live_server)
    set_script(live_server, questions())
    chat.ask("hi")
    assert chat.requests[-1]["session_id"] == fresh[-1] != old


def test_m_s72_m_t55_loading_a_session_does_not_reset_and_keeps_components(
    page: Any, live_server: LiveServer
) -> None:
    chat = start(page, live_server, questions("First session answer."))
    chat.ask("first question")
    first = chat.requests[-1]["session_id"]
    page.get_by_test_id("assistant-new-session").click()
    page.wait_for_function("() => document.querySelectorAll('[data-testid=assistant-message]').length === 0")
    set_script(live_server, [intent("generate_component"), {"content": fenced(component_code("LoadKeeps"))}])
    chat.ask("make an uppercase component")
    assert "LoadKeeps" in component_names(live_server)
    resets = len(chat.resets)
    page.get_by_test_id("assistant-history-select").select_option(first)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=assistant-message-text]')].some((e) => e.textContent.includes('First session answer.'))"
    )
    page.wait_for_timeout(300)
    assert len(chat.resets) == resets, chat.resets  # F11: no reset on load
    assert "LoadKeeps" in component_names(live_server)
    assert chat.messages("user").first.inner_text().strip().endswith("first question")


def test_f10_ten_sessions_are_kept_and_a_reloaded_streaming_message_is_cancelled(
    page: Any, live_server: LiveServer
) -> None:
    """F10 (A-S27 history): at most 10 stored sessions; a message still streaming when the page
    went away comes back as cancelled, without its progress."""
    doc = slow_doc("asst-ten", 3)
    chat = start(
        page, live_server, [intent("run_flow"), call("run_flow", inputs={}), {"content": "It ran."}], doc
    )
    old = [
        {
            "id": f"agentic_old{i}",
            "title": f"old {i}",
            "updatedAt": 1000 + i,
            "messages": [
                {"id": f"m{i}", "role": "user", "text": f"old {i}", "status": "complete", "createdAt": i}
            ],
        }
        for i in range(10)
    ]
    seed_storage(chat, {"plait-assistant-sessions": sorted(old, key=lambda s: -s["updatedAt"])})
    chat.send("run it")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=assistant-input]')?.placeholder === 'Working on it...'"
    )
    busy_session = chat.requests[-1]["session_id"]
    chat.wait_stored(busy_session, 2)  # stored while the reply streams (F10)
    page.reload()
    page.get_by_test_id("editor").wait_for()
    stored = chat.storage("plait-assistant-sessions")
    assert len(stored) == 10, [s["id"] for s in stored]
    ids = [s["id"] for s in stored]
    assert busy_session in ids and "agentic_old0" not in ids  # the oldest went
    busy = next(s for s in stored if s["id"] == busy_session)
    assert all(m["status"] != "streaming" and not m.get("progress") for m in busy["messages"]), busy
    chat.open()
    page.get_by_test_id("assistant-history-select").select_option(busy_session)
    last = chat.messages("assistant").last
    last.wait_for()
    assert last.get_attribute("data-status") == "cancelled"
    assert page.get_by_test_id("assistant-progress").count() == 0


# ------------------------------------------------------------------------------ input history
def test_m_s53_m_t33_up_in_an_empty_input_recalls_the_latest_with_the_cursor_at_the_end(
    page: Any, live_server: LiveServer
) -> None:
    chat = start(page, live_server, questions())
    seed_storage(chat, {"plait-assistant-input-history": ["latest", "older", "oldest"]})
    chat.input.click()
    page.keyboard.press("ArrowUp")
    assert chat.input.input_value() == "latest"
    assert chat.input.evaluate("(e) => [e.selectionStart, e.selectionEnd]") == [6, 6]


def test_m_s54_m_t34_up_walks_back_and_stops_at_the_oldest(page: Any, live_server: LiveServer) -> None:
    chat = start(page, live_server, questions())
    seed_storage(chat, {"plait-assistant-input-history": ["a", "b", "c"]})
    chat.input.click()
    seen = []
    for _ in range(4):
        page.keyboard.press("ArrowUp")
        seen.append(chat.input.input_value())
    assert seen == ["a", "b", "c", "c"]


def test_m_s55_m_t35_down_gives_back_the_draft_once(page: Any, live_server: LiveServer) -> None:
    chat = start(page, live_server, questions())
    seed_storage(chat, {"plait-assistant-input-history": ["newest", "old"]})
    chat.input.fill("my draft")
    page.keyboard.press("ArrowUp")
    assert chat.input.input_value() == "newest"
    page.keyboard.press("ArrowDown")
    assert chat.input.input_value() == "my draft"
    page.keyboard.press("ArrowDown")
    assert chat.input.input_value() == "my draft"


def test_m_s56_m_t36_up_on_the_second_line_moves_the_cursor_and_does_not_recall(
    page: Any, live_server: LiveServer
) -> None:
    chat = start(page, live_server, questions())
    seed_storage(chat, {"plait-assistant-input-history": ["recalled"]})
    chat.input.fill("line one\nline two")
    chat.input.evaluate("(e) => e.setSelectionRange(e.value.length, e.value.length)")
    page.keyboard.press("ArrowUp")
    assert chat.input.input_value() == "line one\nline two"
    assert chat.input.evaluate("(e) => e.selectionStart") <= len("line one")


def test_m_s57_m_t37_m_t38_sends_are_recorded_without_repeats_and_survive_a_reload(
    page: Any, live_server: LiveServer
) -> None:
    chat = start(page, live_server, questions())
    chat.ask("hello")
    chat.ask("hello")
    assert chat.storage("plait-assistant-input-history") == ["hello"]
    chat.ask("world")
    chat.ask("hello")
    assert chat.storage("plait-assistant-input-history") == ["hello", "world", "hello"]
    assert len(chat.requests) == 4
    page.reload()
    page.get_by_test_id("editor").wait_for()
    chat.open()
    chat.input.click()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert chat.input.input_value() == "world"


BLOCK_STORAGE = """
(() => {
  const blocked = (k) => String(k).startsWith('plait-assistant');
  for (const name of ['getItem', 'setItem', 'removeItem']) {
    const real = Storage.prototype[name];
    Storage.prototype[name] = function (k, ...rest) {
      if (blocked(k)) throw new DOMException('The storage is blocked', 'SecurityError');
      return real.call(this, k, ...rest);
    };
  }
})();
"""


def test_m_s75_m_t39_with_storage_blocked_messages_send_nothing_recalls_and_nothing_throws(
    page: Any, live_server: LiveServer
) -> None:
    page.add_init_script(BLOCK_STORAGE)
    chat = start(page, live_server, questions("Still answering."))
    reply = chat.ask("hello without storage")
    assert "Still answering." in reply.get_by_test_id("assistant-message-text").inner_text()
    chat.input.click()
    page.keyboard.press("ArrowUp")
    assert chat.input.input_value() == ""
    # M-T39: /skip-all works for the page without persisting
    chat.send("/skip-all")
    page.get_by_test_id("assistant-skip-all-badge").wait_for()
    assert len(chat.requests) == 1
    errors = [text for kind, text in chat.console if kind == "error"]
    assert not errors, errors


# ------------------------------------------------------------------------------ skip-all
def test_m_s32_m_t19_m_t20_m_t22_m_s37_skip_all_toggles_locally_and_survives_a_reload(
    page: Any, live_server: LiveServer
) -> None:
    chat = start(page, live_server, questions())
    assert page.get_by_test_id("assistant-skip-all-badge").count() == 0
    chat.send("/skip-all")
    confirm = chat.messages("assistant").last
    confirm.wait_for()
    assert "enabled" in confirm.inner_text().lower()
    badge = page.get_by_test_id("assistant-skip-all-badge")
    badge.wait_for()
    assert "Skip-all" in badge.inner_text()
    assert (badge.get_attribute("title") or badge.get_attribute("aria-label") or "").strip()  # the tooltip
    assert chat.storage("plait-assistant-skip-all") == "true"
    assert chat.requests == []  # never sent to the server
    page.reload()
    page.get_by_test_id("editor").wait_for()
    chat.open()
    page.get_by_test_id("assistant-skip-all-badge").wait_for()
    chat.send("/skip-all")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=assistant-message][data-role=assistant]')].pop()?.textContent.toLowerCase().includes('disabled')"
    )
    page.get_by_test_id("assistant-skip-all-badge").wait_for(state="detached")
    assert chat.storage("plait-assistant-skip-all") != "true"
    assert chat.requests == []


def test_m_s33_m_t23_skip_all_with_more_words_is_an_ordinary_message(
    page: Any, live_server: LiveServer
) -> None:
    chat = start(page, live_server, questions("That is a message."))
    chat.ask("/skip-all please")
    assert [r["input_value"] for r in chat.requests] == ["/skip-all please"]
    assert chat.storage("plait-assistant-skip-all") != "true"
    assert page.get_by_test_id("assistant-skip-all-badge").count() == 0


def test_m_s34_m_t21_skip_all_approves_the_plan_silently_in_one_message(
    page: Any, live_server: LiveServer
) -> None:
    flow_id = new_flow_id("asst-skip-plan")
    steps = [
        intent("build_flow", "build me a flow with an agent and a web crawler"),
        {
            "content": "Let me plan this first.",
            "tool_calls": [{"name": "propose_plan", "arguments": {"plan": "1. start\n2. output"}}],
        },
        call("search_components", query="output"),
        call("build_flow", spec=ECHO_SPEC),
        {"content": "The flow is on the canvas."},
    ]
    chat = start(page, live_server, steps, empty_doc(flow_id))
    chat.send("/skip-all")
    page.get_by_test_id("assistant-skip-all-badge").wait_for()
    users, assistants = chat.count("user"), chat.count("assistant")
    chat.send("build me a flow with an agent and a web crawler")
    chat.wait_canvas(lambda ids: ids == ["out", "start"], timeout=30)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=assistant-message][data-role=assistant]')].pop()?.dataset.status === 'complete'"
    )
    assert [r["input_value"] for r in chat.requests] == [
        "build me a flow with an agent and a web crawler",
        "User approved the plan. Proceed with the build.",
    ]
    assert chat.count("user") == users + 1  # no bubble for the approval
    assert chat.count("assistant") == assistants + 1  # one slot for both turns
    assert page.get_by_test_id("assistant-plan").count() == 0
    assert page.get_by_test_id("assistant-flow-proposal").count() == 0
    last = chat.messages("assistant").last.inner_text()
    assert "The flow is on the canvas." in last and "Let me plan this first." not in last
    assert "Generating flow..." in chat.seen() or "Orchestrating..." in chat.seen()


def test_m_s35_skip_all_applies_a_set_flow_directly(page: Any, live_server: LiveServer) -> None:
    flow_id = new_flow_id("asst-skip-flow")
    steps = [intent("build_flow"), call("build_flow", spec=ECHO_SPEC), {"content": "Built it."}]
    chat = start(page, live_server, steps, empty_doc(flow_id))
    chat.send("/skip-all")
    page.get_by_test_id("assistant-skip-all-badge").wait_for()
    chat.ask("build me an echo flow")
    assert chat.wait_canvas(lambda ids: ids == ["out", "start"]) == ["out", "start"]
    assert page.get_by_test_id("assistant-flow-proposal").count() == 0


def test_m_s36_skip_all_shows_a_validated_component_at_once(page: Any, live_server: LiveServer) -> None:
    steps = [intent("generate_component"), {"content": fenced(component_code("SkipUpper"))}]
    chat = start(page, live_server, steps)
    chat.send("/skip-all")
    page.get_by_test_id("assistant-skip-all-badge").wait_for()
    reply = chat.ask("make an uppercase component")
    card = reply.get_by_test_id("assistant-component-card")
    card.wait_for()
    assert "SkipUpper" in card.inner_text()
    assert reply.get_by_role("button", name="Continue").count() == 0
