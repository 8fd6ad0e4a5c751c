"""The inspector's forms for people (issue 14, defects 3-5) in chromium: mappings as key-value
rows, a highlighted code editor, human labels and durations, conditions with the operator help
once, retry and time limit on a top-level node, provider dropdowns that drop a scripted node's
script, and run inputs built field by field. Each test fails on the JSON-text-box forms."""

from __future__ import annotations

from typing import Any

from .conftest import LiveServer
from .test_canvas import latest_run, wait_saved


def flow(flow_id: str, *nodes: dict[str, Any], inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """start -> nodes... in a line, each node placed to the right of the previous one."""
    all_nodes = [{"id": "start", "type": "start"}, *nodes]
    for i, n in enumerate(all_nodes):
        n["position"] = {"x": 260 * i, "y": 0}
    doc: dict[str, Any] = {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": flow_id,
        "nodes": all_nodes,
        "edges": [
            {"source": a["id"], "target": b["id"]} for a, b in zip(all_nodes, all_nodes[1:], strict=False)
        ],
    }
    if inputs is not None:
        doc["inputs"] = inputs
    return doc


def open_node(page: Any, flow_id: str, node_id: str) -> None:
    page.goto(f"/flows/{flow_id}")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id(f"node-{node_id}").click()
    page.get_by_test_id("inspector").wait_for()


def draft_node(server: LiveServer, flow_id: str, node_id: str) -> dict[str, Any]:
    draft = server.api.get(f"/api/v1/flows/{flow_id}").json()["draft"]
    return next(n for n in draft["nodes"] if n["id"] == node_id)


def test_http_headers_are_edited_as_key_value_rows(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(
        flow("kv-headers", {"id": "fetch", "type": "http", "config": {"url": "https://example.com"}})
    )
    open_node(page, "kv-headers", "fetch")
    # no JSON text box for the mapping: rows of name and value
    assert page.locator("textarea[data-testid='field-headers']").count() == 0
    page.get_by_test_id("field-headers-add").click()
    page.get_by_test_id("field-headers-key-0").fill("Authorization")
    page.get_by_test_id("field-headers-value-0").fill("Bearer {{env.TOKEN}}")
    page.get_by_test_id("field-headers-add").click()
    page.get_by_test_id("field-headers-key-1").fill("Accept")
    page.get_by_test_id("field-headers-value-1").fill("application/json")
    page.get_by_test_id("field-query-add").click()
    page.get_by_test_id("field-query-key-0").fill("page")
    page.get_by_test_id("field-query-value-0").fill("2")
    wait_saved(page)
    config = draft_node(live_server, "kv-headers", "fetch")["config"]
    assert config["headers"] == {"Authorization": "Bearer {{env.TOKEN}}", "Accept": "application/json"}
    assert config["query"] == {"page": 2}
    # removing the last row unsets the field
    page.get_by_test_id("field-query-remove-0").click()
    page.wait_for_timeout(100)
    wait_saved(page)
    assert "query" not in draft_node(live_server, "kv-headers", "fetch")["config"]
    # the body is JSON in a code editor, checked as it is typed
    body = page.get_by_test_id("field-body")
    body.locator(".cm-editor").wait_for()
    assert body.get_attribute("data-language") == "json"
    body.locator(".cm-content").click()
    page.keyboard.type('{"name": ')
    page.get_by_test_id("field-body-json-problem").wait_for()
    page.keyboard.type('"x"')
    page.get_by_test_id("field-body-json-problem").wait_for(state="detached")
    wait_saved(page)
    assert draft_node(live_server, "kv-headers", "fetch")["config"]["body"] == {"name": "x"}


def test_code_is_highlighted_and_labels_and_durations_read_as_words(
    page: Any, live_server: LiveServer
) -> None:
    code = "def main(**inputs):\n    return {'n': 1}\n"
    live_server.create_flow(flow("code-form", {"id": "calc", "type": "code", "config": {"code": code}}))
    open_node(page, "code-form", "calc")
    editor = page.get_by_test_id("field-code")
    editor.locator(".cm-editor").wait_for()  # CodeMirror, loaded lazily
    assert editor.get_attribute("data-language") == "python"
    # highlighted: keywords are in styled spans, not plain text
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=field-code] .cm-line span')]"
        ".some((s) => s.textContent === 'def' && getComputedStyle(s).color !== getComputedStyle(s.parentElement).color)"
    )
    editor.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("# edited")
    # labels people read
    assert page.locator("label[for='field-timeout_s']").inner_text().strip() == "Timeout"
    assert page.locator("label[for='field-memory_mb']").inner_text().strip() == "Memory (MB)"
    assert "Timeout S" not in page.get_by_test_id("inspector").inner_text()
    timeout = page.get_by_test_id("field-timeout_s")
    timeout.fill("2 min")
    wait_saved(page)
    config = draft_node(live_server, "code-form", "calc")["config"]
    assert config["code"].rstrip().endswith("# edited")
    assert config["timeout_s"] == 120


def test_conditions_show_the_operator_help_once(page: Any, live_server: LiveServer) -> None:
    when = [
        {"ref": "inputs.a", "op": "==", "value": 1},
        {"ref": "inputs.b", "op": ">", "value": 2},
        {"ref": "inputs.c", "op": "empty"},
    ]
    live_server.create_flow(flow("cond-form", {"id": "check", "type": "if", "config": {"when": when}}))
    open_node(page, "cond-form", "check")
    text = page.get_by_test_id("inspector").inner_text()
    assert page.locator(".condition-row").count() == 3
    assert page.locator("[data-testid$='-op-help']").count() == 1
    assert text.count("compare numbers") <= 1  # the operator help, not under every condition
    assert "Item 1" not in text
    assert page.get_by_test_id("field-when.2.value").count() == 0  # "is empty" needs no value
    page.get_by_test_id("field-when-add").click()
    page.get_by_test_id("field-when.3.ref").fill("inputs.d")
    page.get_by_test_id("field-when.3.op").select_option("contains")
    page.get_by_test_id("field-when.3.value").fill("x")
    wait_saved(page)
    assert draft_node(live_server, "cond-form", "check")["config"]["when"][3] == {
        "ref": "inputs.d",
        "op": "contains",
        "value": "x",
    }


def test_retry_and_timeout_are_editable_on_a_top_level_node(page: Any, live_server: LiveServer) -> None:
    live_server.create_flow(flow("retry-form", {"id": "wait", "type": "delay", "config": {"seconds": 0}}))
    open_node(page, "retry-form", "wait")
    page.get_by_test_id("node-run-settings").locator("summary").click()
    page.get_by_test_id("node-retry.max_attempts").fill("3")
    page.get_by_test_id("node-retry.delay_s").fill("2 s")
    page.get_by_test_id("node-timeout_s").fill("1 min")
    page.get_by_test_id("node-on_error.mode").select_option('"route"')
    wait_saved(page)
    node = draft_node(live_server, "retry-form", "wait")
    assert node["retry"] == {"max_attempts": 3, "delay_s": 2}
    assert node["timeout_s"] == 60
    assert node["on_error"] == {"mode": "route"}
    page.get_by_test_id("node-timeout_s").fill("")
    wait_saved(page)
    assert "timeout_s" not in draft_node(live_server, "retry-form", "wait")


def test_switching_an_llm_node_to_a_real_provider_removes_its_script(
    page: Any, live_server: LiveServer
) -> None:
    llm = {
        "id": "ask",
        "type": "llm",
        "config": {"provider": "scripted", "script": ["hello", "again"], "prompt": "hi"},
    }
    live_server.create_flow(flow("llm-form", llm))
    open_node(page, "llm-form", "ask")
    page.get_by_test_id("field-script").wait_for()
    provider = page.get_by_test_id("field-provider")
    assert "scripted (no model)" in provider.inner_text()
    # removing every script item deletes the key instead of leaving "script": []
    page.get_by_test_id("field-script-remove-1").click()
    page.get_by_test_id("field-script-remove-0").click()
    wait_saved(page)
    assert "script" not in draft_node(live_server, "llm-form", "ask")["config"]
    page.get_by_test_id("field-script-add").click()
    page.get_by_test_id("field-script.0").fill('"hello"')
    wait_saved(page)
    assert draft_node(live_server, "llm-form", "ask")["config"]["script"] == ["hello"]

    provider.select_option("openai")
    page.get_by_test_id("field-script").wait_for(state="detached")  # not used by openai: hidden
    model = page.get_by_test_id("field-model")
    if model.count() == 0:  # the server lists models: the dropdown's free entry
        page.get_by_test_id("field-model-select").select_option(label="other…")
    page.get_by_test_id("field-model").fill("gpt-4o-mini")
    wait_saved(page)
    config = draft_node(live_server, "llm-form", "ask")["config"]
    assert config["provider"] == "openai" and config["model"] == "gpt-4o-mini"
    assert "script" not in config
    problems = live_server.api.get("/api/v1/flows/llm-form").json()["problems"]
    assert not [p for p in problems if "script" in p["message"]], problems


def test_run_inputs_built_with_the_fields_builder(page: Any, live_server: LiveServer) -> None:
    out = {
        "id": "done",
        "type": "output",
        "config": {"name": "answer", "value": "{{inputs.city}} x{{inputs.days}}"},
    }
    live_server.create_flow(flow("inputs-form", out))
    open_node(page, "inputs-form", "start")
    page.get_by_test_id("start-inputs").wait_for()
    page.get_by_test_id("start-inputs-add").click()
    page.get_by_test_id("start-inputs-name-0").fill("city")
    page.get_by_test_id("start-inputs-description-0").fill("Where to look")
    page.get_by_test_id("start-inputs-add").click()
    page.get_by_test_id("start-inputs-name-1").fill("days")
    page.get_by_test_id("start-inputs-type-1").select_option("integer")
    page.get_by_test_id("start-inputs-required-1").uncheck()
    page.get_by_test_id("start-inputs-default-1").fill("3")
    wait_saved(page)
    inputs = live_server.api.get("/api/v1/flows/inputs-form").json()["draft"]["inputs"]
    assert inputs == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where to look"},
            "days": {"type": "integer", "default": 3},
        },
        "required": ["city"],
    }
    # the run dialog asks for those fields
    page.get_by_test_id("run-button").click()
    page.get_by_test_id("input-city").fill("Oslo")
    assert page.get_by_test_id("input-days").input_value() == "3"
    page.get_by_test_id("run-start").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=run-status]')?.dataset.status === 'completed'"
    )
    run = latest_run(live_server, "inputs-form", ("completed",))
    assert run["outputs"] == {"answer": "Oslo x3"}
