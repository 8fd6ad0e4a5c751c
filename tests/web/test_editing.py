"""Editing conveniences of the canvas in chromium: keyboard delete with undo/redo, copy/paste,
publish with a note and restore a version, tabs, Escape closing dialogs, zoom levels."""

from __future__ import annotations

from typing import Any

from .conftest import LiveServer
from .test_canvas import linear_doc, wait_saved


def node_ids(page: Any) -> list[str]:
    return sorted(
        el.get_attribute("data-testid")[5:] for el in page.locator('.plait-node[data-testid^="node-"]').all()
    )


def draft_ids(server: LiveServer, flow_id: str) -> list[str]:
    return sorted(n["id"] for n in server.api.get(f"/api/v1/flows/{flow_id}").json()["draft"]["nodes"])


def open_flow(page: Any, flow_id: str) -> None:
    page.goto(f"/flows/{flow_id}")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("node-start").wait_for()


def test_delete_key_undo_redo_and_copy_paste(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(linear_doc("edits", 0))
    open_flow(page, "edits")
    assert node_ids(page) == ["done", "start", "wait"]

    page.get_by_test_id("node-wait").click()
    page.keyboard.press("Delete")
    page.get_by_test_id("node-wait").wait_for(state="detached")
    assert page.locator(".react-flow__edge").count() == 0  # its edges went with it
    wait_saved(page)
    assert draft_ids(live_server, "edits") == ["done", "start"]  # autosaved

    page.get_by_test_id("undo").click()
    page.get_by_test_id("node-wait").wait_for()
    assert page.locator(".react-flow__edge").count() == 2
    page.get_by_test_id("redo").click()
    page.get_by_test_id("node-wait").wait_for(state="detached")
    page.get_by_test_id("undo").click()
    page.get_by_test_id("node-wait").wait_for()

    page.get_by_test_id("node-wait").click()
    page.get_by_test_id("copy").click()
    page.get_by_test_id("paste").click()
    page.wait_for_function("() => document.querySelectorAll('.plait-node').length === 4")
    pasted = [n for n in node_ids(page) if n not in ("done", "start", "wait")]
    assert len(pasted) == 1 and pasted[0].startswith("wait")
    wait_saved(page)
    assert draft_ids(live_server, "edits") == sorted(["done", "start", "wait", pasted[0]])


def test_publish_with_a_note_and_restore_a_version(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(linear_doc("versions", 0))
    open_flow(page, "versions")
    page.get_by_test_id("publish").click()
    page.get_by_test_id("publish-note").fill("first cut")
    page.get_by_test_id("publish-confirm").click()
    page.get_by_test_id("publish-note").wait_for(state="detached")
    versions = live_server.api.get("/api/v1/flows/versions/versions").json()
    assert [(v["version"], v["note"]) for v in versions] == [(1, "first cut")]

    # Change the draft, then bring version 1 back from the history.
    page.get_by_test_id("node-done").click()
    page.keyboard.press("Delete")
    page.get_by_test_id("node-done").wait_for(state="detached")
    wait_saved(page)
    page.get_by_test_id("panel-versions").click()
    page.get_by_test_id("version-row-1").wait_for()
    assert "first cut" in page.get_by_test_id("version-row-1").inner_text()
    page.get_by_test_id("version-view-1").click()
    page.get_by_test_id("viewing-version").wait_for()
    page.get_by_test_id("node-done").wait_for()  # the version as it was
    page.get_by_test_id("viewing-restore").click()
    page.get_by_test_id("viewing-version").wait_for(state="detached")
    page.get_by_test_id("node-done").wait_for()
    wait_saved(page)
    assert draft_ids(live_server, "versions") == ["done", "start", "wait"]


def test_tabs_and_escape(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow({**linear_doc("tab-a", 0), "name": "Tab A"})
    live_server.create_flow({**linear_doc("tab-b", 0), "name": "Tab B"})
    open_flow(page, "tab-a")
    page.get_by_test_id("nav-library").click()
    page.get_by_test_id("open-tab-b").click()
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("tab-tab-a").wait_for()
    page.get_by_test_id("tab-tab-b").wait_for()
    page.get_by_test_id("tab-tab-a").locator("a, button").first.click()
    page.wait_for_url("**/flows/tab-a")
    page.get_by_test_id("tab-close-tab-b").click()
    page.get_by_test_id("tab-tab-b").wait_for(state="detached")

    page.get_by_test_id("publish").click()
    page.get_by_test_id("publish-note").wait_for()
    page.keyboard.press("Escape")
    page.get_by_test_id("publish-note").wait_for(state="detached")


def test_the_editor_fits_at_60_and_200_percent_zoom(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(linear_doc("zoom", 0))
    for zoom in ("0.6", "2"):
        open_flow(page, "zoom")
        page.evaluate(f"() => {{ document.body.style.zoom = '{zoom}'; }}")
        page.wait_for_timeout(200)
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"horizontal overflow of {overflow}px at zoom {zoom}"
        for testid in ("run-button", "publish", "palette-search"):
            box = page.get_by_test_id(testid).bounding_box()
            assert box and box["width"] > 0 and box["height"] > 0, (testid, zoom)


def test_template_fields_complete_upstream_references(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(linear_doc("refs", 0))
    open_flow(page, "refs")
    page.get_by_test_id("node-done").click()
    field = page.get_by_test_id("field-value")
    field.fill("")
    field.press_sequentially("got {{")
    page.get_by_test_id("refs-field-value").wait_for()
    options = page.get_by_test_id("refs-field-value").inner_text()
    assert "{{wait}}" in options and "{{start}}" in options
    assert "{{done}}" not in options  # not itself: only what runs before it
    page.get_by_test_id("ref-option-wait").click()
    assert field.input_value().startswith("got {{wait")
    wait_saved(page)


def test_library_search_rename_and_duplicate(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow({**linear_doc("lib-alpha", 0), "name": "Alpha"})
    live_server.create_flow({**linear_doc("lib-beta", 0), "name": "Beta"})
    page.goto("/")
    page.get_by_test_id("flow-row-lib-alpha").wait_for()
    page.get_by_test_id("library-search").fill("beta")
    page.get_by_test_id("flow-row-lib-alpha").wait_for(state="detached")
    assert page.get_by_test_id("flow-row-lib-beta").is_visible()
    page.get_by_test_id("library-search").fill("")

    page.get_by_test_id("rename-lib-alpha").click()
    page.get_by_test_id("flow-name-input").fill("Alpha two")
    page.get_by_test_id("name-dialog-submit").click()
    page.get_by_test_id("flow-row-lib-alpha").get_by_text("Alpha two").wait_for()
    assert live_server.api.get("/api/v1/flows/lib-alpha").json()["name"] == "Alpha two"

    page.get_by_test_id("duplicate-lib-alpha").click()
    page.locator('[data-testid^="flow-row-lib-alpha-"]').first.wait_for()
    copies = [f for f in live_server.api.get("/api/v1/flows").json() if f["id"].startswith("lib-alpha-")]
    assert len(copies) == 1 and "Alpha two" in copies[0]["name"]
    copy = live_server.api.get(f"/api/v1/flows/{copies[0]['id']}").json()
    assert [n["id"] for n in copy["draft"]["nodes"]] == ["start", "wait", "done"]
