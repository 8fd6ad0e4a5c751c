"""The canvas issue's readability and editing defects (issue 14: 3, 6, 7, 8, 9, 10) in chromium
against the real server: each test fails on the canvas before the fix."""

from __future__ import annotations

import copy
from typing import Any

from .conftest import LiveServer, new_page, screenshot
from .test_canvas import linear_doc, settle, wait_saved
from .test_editing import draft_ids, node_ids, open_flow


def categorize_doc(flow_id: str) -> dict[str, Any]:
    """start -> categorize (billing | bug | refund | else) -> four outputs; the categorize node's
    config is invalid while it is being edited (a temperature typed out of range): the server's
    ports for it are none, yet its four edges are still in the document."""
    names = ["billing", "bug", "refund", "else"]
    nodes: list[dict[str, Any]] = [
        {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
        {
            "id": "route",
            "type": "categorize",
            "position": {"x": 280, "y": 0},
            "config": {
                "provider": "openai",
                "model": "gpt-4o-mini",
                "temperature": 7,
                "input": "{{inputs.message}}",
                "categories": [{"name": n} for n in names[:3]],
            },
        },
    ]
    edges: list[dict[str, Any]] = [{"source": "start", "target": "route"}]
    for i, n in enumerate(names):
        nodes.append(
            {
                "id": f"to_{n}",
                "type": "output",
                "position": {"x": 560, "y": -180 + i * 120},
                "config": {"name": n, "value": n},
            }
        )
        edges.append({"source": "route", "source_port": n, "target": f"to_{n}"})
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": "Categorize edges",
        "nodes": nodes,
        "edges": edges,
    }


def loop_map_doc(flow_id: str) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": "Bodies",
        "inputs": {"type": "object", "properties": {"words": {"type": "array", "items": {"type": "string"}}}},
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "each",
                "type": "map",
                "position": {"x": 280, "y": 0},
                "config": {
                    "items": "{{inputs.words}}",
                    "body": {
                        "nodes": [
                            {
                                "id": "shout",
                                "type": "output",
                                "position": {"x": 0, "y": 0},
                                "config": {"name": "w", "value": "{{item}}!"},
                            }
                        ],
                        "edges": [],
                    },
                },
            },
            {
                "id": "done",
                "type": "output",
                "position": {"x": 560, "y": 0},
                "config": {"name": "words", "value": "{{each}}"},
            },
        ],
        "edges": [{"source": "start", "target": "each"}, {"source": "each", "target": "done"}],
    }


def wide_doc(flow_id: str, layers: int = 7) -> dict[str, Any]:
    """A chain of `layers` nodes 260 px apart: wider than a 1280 px screen at zoom 1."""
    doc = linear_doc(flow_id, 0)
    doc["nodes"] = [{"id": "start", "type": "start", "position": {"x": 0, "y": 0}}]
    doc["edges"] = []
    prev = "start"
    for i in range(1, layers):
        nid = f"step{i}"
        doc["nodes"].append(
            {
                "id": nid,
                "type": "http",
                "position": {"x": i * 260, "y": (i % 2) * 60},
                "config": {"method": "GET", "url": f"https://example.com/{i}"},
            }
        )
        doc["edges"].append({"source": prev, "target": nid})
        prev = nid
    return doc


def boxes_overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


# ------------------------------------------------------------------------------ defect 3 (canvas)
def test_every_edge_of_a_categorize_node_is_drawn_while_its_config_is_invalid(
    page: Any, live_server: LiveServer
) -> None:
    live_server.create_flow(categorize_doc("cat-edges"))
    open_flow(page, "cat-edges")
    page.wait_for_timeout(700)  # the ports the server computes for the (invalid) config have arrived
    for port in ("billing", "bug", "refund", "else"):
        page.get_by_test_id(f"handle-route-out-{port}").wait_for()
    leaving = page.locator('.react-flow__edge[data-id^="route:"]')
    assert leaving.count() == 4, page.locator(".react-flow__edge").evaluate_all(
        "es => es.map(e => e.dataset.id)"
    )
    assert page.locator(".react-flow__edge").count() == 5


# ------------------------------------------------------------------------------ defect 6
def test_double_click_opens_a_map_body_as_a_canvas_with_a_breadcrumb(
    page: Any, live_server: LiveServer
) -> None:
    live_server.create_flow(loop_map_doc("bodies"))
    open_flow(page, "bodies")
    page.get_by_test_id("node-each").dblclick()
    page.get_by_test_id("breadcrumb").wait_for()
    assert "each" in page.get_by_test_id("breadcrumb-current").inner_text()
    page.get_by_test_id("node-shout").wait_for()
    assert node_ids(page) == ["shout"]

    # the same palette adds into the body; the edit lands inside the map's config
    page.get_by_test_id("palette-search").fill("message")
    page.get_by_test_id("palette-item-message").click()
    page.get_by_test_id("palette-search").fill("")
    page.get_by_test_id("node-message").wait_for()
    wait_saved(page)
    draft = live_server.api.get("/api/v1/flows/bodies").json()["draft"]
    each = next(n for n in draft["nodes"] if n["id"] == "each")
    assert sorted(n["id"] for n in each["config"]["body"]["nodes"]) == ["message", "shout"]
    assert draft_ids(live_server, "bodies") == ["done", "each", "start"]

    # undo works inside, and the breadcrumb goes back to the flow
    page.get_by_test_id("undo").click()
    page.get_by_test_id("node-message").wait_for(state="detached")
    page.get_by_test_id("breadcrumb-root").click()
    page.get_by_test_id("breadcrumb").wait_for(state="detached")
    page.get_by_test_id("node-each").wait_for()
    assert node_ids(page) == ["done", "each", "start"]


# ------------------------------------------------------------------------------ defect 7
def test_node_text_is_readable_at_1280x720_with_icons_colours_and_summaries(
    page: Any, live_server: LiveServer
) -> None:
    live_server.create_flow(wide_doc("wide"))
    page.set_viewport_size({"width": 1280, "height": 720})
    open_flow(page, "wide")
    settle(page)
    smallest = page.evaluate(
        """() => {
             const m = getComputedStyle(document.querySelector('.react-flow__viewport')).transform;
             const zoom = m === 'none' ? 1 : new DOMMatrixReadOnly(m).a;
             const els = [...document.querySelectorAll('.plait-node-title, .plait-node-type, .plait-node-summary')];
             return Math.min(...els.map((e) => parseFloat(getComputedStyle(e).fontSize) * zoom));
           }"""
    )
    assert smallest >= 11, f"node text is {smallest:.1f} px on screen"
    step = page.get_by_test_id("node-step1")
    assert step.get_attribute("data-group") == "tool"
    assert page.get_by_test_id("node-summary-step1").inner_text() == "GET https://example.com/1"
    assert step.locator(".plait-node-icon").inner_text().strip()
    screenshot(page, "canvas-1280x720-light.png")


def test_side_panels_collapse_and_stay_collapsed(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(linear_doc("panels", 0))
    page.set_viewport_size({"width": 1280, "height": 720})
    open_flow(page, "panels")
    before = page.get_by_test_id("canvas").bounding_box()["width"]
    page.get_by_test_id("toggle-palette").click()
    page.get_by_test_id("toggle-side").click()
    page.get_by_test_id("palette").wait_for(state="detached")
    after = page.get_by_test_id("canvas").bounding_box()["width"]
    assert after > before + 400, (before, after)
    assert after > 1280 * 0.9
    page.reload()
    page.get_by_test_id("node-start").wait_for()
    assert page.get_by_test_id("palette").count() == 0
    assert page.get_by_test_id("canvas").bounding_box()["width"] > 1280 * 0.9
    page.get_by_test_id("toggle-palette").click()
    page.get_by_test_id("toggle-side").click()
    page.get_by_test_id("palette").wait_for()


def test_tabs_show_names_and_close_when_their_flow_is_deleted(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow({**linear_doc("named-tab", 0), "name": "My named flow"})
    page.goto("/")
    page.get_by_test_id("library").wait_for()
    # a tab kept in this browser for a flow that no longer exists
    page.evaluate("() => localStorage.setItem('plait.openFlows', JSON.stringify(['long-gone-flow']))")
    open_flow(page, "named-tab")
    tab = page.get_by_test_id("tab-named-tab")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=tab-named-tab]')?.innerText.includes('My named flow')"
    )
    assert "named-tab" not in tab.locator("a").inner_text()
    page.get_by_test_id("tab-long-gone-flow").wait_for(state="detached")

    page.get_by_test_id("nav-library").click()
    page.get_by_test_id("delete-named-tab").click()
    page.get_by_test_id("delete-confirm").click()
    page.get_by_test_id("flow-row-named-tab").wait_for(state="detached")
    tab.wait_for(state="detached")


# ------------------------------------------------------------------------------ defect 8 (badge)
def test_the_toolbar_badge_says_draft_published_and_ahead(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(linear_doc("badge", 0))
    open_flow(page, "badge")
    badge = page.get_by_test_id("publish-badge")
    assert badge.inner_text() == "Draft"
    page.get_by_test_id("publish").click()
    page.get_by_test_id("publish-confirm").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=publish-badge]')?.innerText === 'Published v1'"
    )
    # an edit after publishing: the API still runs v1
    page.get_by_test_id("node-done").click()
    page.keyboard.press("Delete")
    wait_saved(page)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=publish-badge]')?.innerText === 'Draft · ahead of v1'"
    )
    page.get_by_test_id("undo").click()  # back to what v1 is
    wait_saved(page)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=publish-badge]')?.innerText === 'Published v1'"
    )
    page.reload()
    page.get_by_test_id("node-done").wait_for()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=publish-badge]')?.innerText === 'Published v1'"
    )


# ------------------------------------------------------------------------------ defect 9
FIRST_SCREEN_RECORDER = """
window.__seen = [];
new MutationObserver(() => {
  for (const sel of ['[data-testid=library-empty]', '[data-testid=library-error]', '[data-testid=library-load-error]', '[role=alert]']) {
    const el = document.querySelector(sel);
    if (el && !window.__seen.includes(sel + ': ' + el.textContent)) window.__seen.push(sel + ': ' + el.textContent);
  }
}).observe(document, {subtree: true, childList: true});
"""


def test_the_first_screen_shows_the_flows_and_no_error(browser: Any, live_server: LiveServer) -> None:
    for i in range(3):
        live_server.create_flow({**linear_doc(f"first-{i}", 0), "name": f"First {i}"})
    page, errors = new_page(browser, live_server, live_server.admin_session)  # a new browser context
    page.set_viewport_size({"width": 1280, "height": 720})
    page.add_init_script(FIRST_SCREEN_RECORDER)
    failed: list[str] = []
    page.on(
        "response",
        lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 and "/api/" in r.url else None,
    )
    try:
        page.goto("/")
        page.get_by_test_id("flow-row-first-2").wait_for()
        page.wait_for_timeout(300)
        assert page.evaluate("() => window.__seen") == []
        assert failed == [], failed
        assert not errors
    finally:
        page.context.close()


# ------------------------------------------------------------------------------ defect 10 (canvas)
def drop_at(page: Any, type_name: str, x: float, y: float) -> None:
    page.get_by_test_id("palette-search").fill(type_name)
    page.get_by_test_id(f"palette-item-{type_name}").drag_to(
        page.get_by_test_id("canvas"), target_position={"x": x, "y": y}
    )
    page.get_by_test_id("palette-search").fill("")


def test_dropping_a_node_on_an_edge_splits_it(page: Any, live_server: LiveServer) -> None:
    doc = linear_doc("split", 0)
    doc["nodes"] = [doc["nodes"][0], doc["nodes"][2]]
    doc["nodes"][1]["position"] = {"x": 600, "y": 0}
    doc["edges"] = [{"source": "start", "target": "done"}]
    live_server.create_flow(doc)
    open_flow(page, "split")
    settle(page)
    path = page.locator(".react-flow__edge path.react-flow__edge-path").first
    mid = path.evaluate(
        """(p) => { const l = p.getTotalLength(); const pt = p.getPointAtLength(l / 2);
                    const m = p.getScreenCTM(); return {x: pt.x * m.a + m.e, y: pt.y * m.d + m.f}; }"""
    )
    canvas = page.get_by_test_id("canvas").bounding_box()
    drop_at(page, "delay", mid["x"] - canvas["x"], mid["y"] - canvas["y"])
    page.get_by_test_id("node-delay").wait_for()
    wait_saved(page)
    edges = sorted(
        (e["source"], e["target"])
        for e in live_server.api.get("/api/v1/flows/split").json()["draft"]["edges"]
    )
    assert edges == [("delay", "done"), ("start", "delay")]


def test_drops_and_pastes_never_overlap_and_select_all(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(linear_doc("spots", 0))
    open_flow(page, "spots")
    settle(page)
    start = page.get_by_test_id("node-start").bounding_box()
    canvas = page.get_by_test_id("canvas").bounding_box()
    # drop right on top of the start node, twice
    for _ in range(2):
        drop_at(page, "message", start["x"] - canvas["x"] + 30, start["y"] - canvas["y"] + 20)
    page.get_by_test_id("node-message_2").wait_for()
    page.get_by_test_id("node-wait").click()
    page.get_by_test_id("copy").click()
    page.get_by_test_id("paste").click()
    page.get_by_test_id("node-wait_2").wait_for()
    settle(page)
    boxes = {i: page.get_by_test_id(f"node-{i}").bounding_box() for i in node_ids(page)}
    ids = sorted(boxes)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            assert not boxes_overlap(boxes[a], boxes[b]), (a, b, boxes[a], boxes[b])

    page.get_by_test_id("canvas").click(position={"x": 5, "y": 5})
    page.keyboard.press("ControlOrMeta+a")
    page.wait_for_function("() => document.querySelectorAll('.plait-node.selected').length === 6")
    page.get_by_test_id("delete-selection").click()
    page.wait_for_function("() => document.querySelectorAll('.plait-node').length === 0")
    page.get_by_test_id("undo").click()
    page.get_by_test_id("node-start").wait_for()


# ------------------------------------------------------------------------------ dark mode
def test_the_theme_toggle_switches_to_dark_and_is_remembered(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(copy.deepcopy(linear_doc("dark", 0)))
    page.set_viewport_size({"width": 1280, "height": 720})
    open_flow(page, "dark")
    bg = "() => getComputedStyle(document.body).backgroundColor"
    canvas_bg = "() => getComputedStyle(document.querySelector('.react-flow')).backgroundColor"
    light, light_canvas = page.evaluate(bg), page.evaluate(canvas_bg)
    page.set_viewport_size({"width": 1920, "height": 1080})
    settle(page)
    screenshot(page, "canvas-1920x1080-light.png")
    page.set_viewport_size({"width": 1280, "height": 720})
    toggle = page.get_by_test_id("theme-toggle")
    while toggle.get_attribute("data-theme-choice") != "dark":
        toggle.click()
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    assert page.evaluate(bg) != light
    assert page.evaluate(canvas_bg) != light_canvas
    dark_bg = page.evaluate(bg)
    # a dark background: the sum of its RGB channels is low
    assert sum(int(c) for c in dark_bg[dark_bg.index("(") + 1 : -1].split(",")[:3]) < 150, dark_bg
    settle(page)
    screenshot(page, "canvas-1280x720-dark.png")
    page.set_viewport_size({"width": 1920, "height": 1080})
    settle(page)
    screenshot(page, "canvas-1920x1080-dark.png")
    page.reload()
    page.get_by_test_id("node-start").wait_for()
    assert page.evaluate(bg) == dark_bg
    while toggle.get_attribute("data-theme-choice") != "system":
        toggle.click()
