"""A new user's first hour, in one browser test (issue 14's acceptance): a fresh local start,
opened through the sign-in link it prints (no key pasted); a real model plugged in from the Models
page (the llama.cpp server with SmolLM2 the tests start); a start -> llm -> output flow built from
the palette with forms only (no JSON typed); run in the playground with the answer streamed on
screen; published; and the Use panel's curl snippet run from the test with an API key made on the
Keys page."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import LiveServer, new_page, require_browser_setup, screenshot
from .test_canvas import settle, wait_saved, wire

pytestmark = pytest.mark.timeout(600)


def click_node(page: Any, node_id: str) -> None:
    settle(page)
    page.get_by_test_id(f"node-{node_id}").click()
    page.get_by_test_id("node-id-input").wait_for()
    assert page.get_by_test_id("node-id-input").input_value() == node_id


def test_a_new_user_plugs_in_a_model_builds_runs_publishes_and_calls_a_flow(
    browser: Any, tmp_path: Path, llama_server: str
) -> None:
    require_browser_setup()
    server = LiveServer(tmp_path)  # its own fresh database: nothing made by other tests
    page, errors = new_page(browser, server)  # no session cookie: a stranger's browser
    page.set_viewport_size({"width": 1280, "height": 720})
    try:
        # 1. The sign-in link the start printed opens the app, signed in.
        page.goto(server.signin_link)
        page.get_by_test_id("library").wait_for()
        assert page.get_by_test_id("library-error").count() == 0

        # 2. Settings -> Models: the local llama.cpp endpoint; Test connection lists its model.
        page.get_by_test_id("nav-settings").click()
        page.get_by_test_id("models-page").wait_for()
        page.get_by_test_id("add-endpoint").click()
        page.get_by_test_id("endpoint-provider").select_option("openai")
        page.get_by_test_id("endpoint-base-url").fill(llama_server)
        page.get_by_test_id("test-connection").click()
        page.locator('[data-testid=test-result][data-ok="true"]').wait_for(timeout=60_000)
        listed = page.get_by_test_id("test-models")
        listed.get_by_role("button").first.click()
        model = page.get_by_test_id("endpoint-model").input_value()
        assert model, "choosing a listed model fills the default model"
        page.get_by_test_id("save-endpoint").click()
        page.wait_for_function(
            "() => document.querySelector('[data-testid=provider-status-openai]')?.textContent === 'configured'"
        )

        # 3. A new flow from the library, built from the palette.
        page.get_by_test_id("nav-library").click()
        page.get_by_test_id("new-flow").click()
        page.get_by_test_id("flow-name-input").fill("My first flow")
        page.get_by_test_id("name-dialog-submit").click()
        page.get_by_test_id("editor").wait_for()
        for node_type in ("start", "llm", "output"):
            page.get_by_test_id(f"palette-item-{node_type}").click()
            page.get_by_test_id(f"node-{node_type}").wait_for()
        # each click placed the new node beside the selected one, left to right, and in view
        settle(page)
        xs = [page.get_by_test_id(f"node-{n}").bounding_box()["x"] for n in ("llm", "output")]
        assert xs[0] < xs[1], "added left to right"
        wire(page, "start", "out", "llm")
        wire(page, "llm", "out", "output")
        page.locator(".react-flow__controls-fitview").click()  # the whole flow in view

        # The run input: a `message` field from the start node's fields builder.
        click_node(page, "start")
        page.get_by_test_id("start-inputs-add").click()
        page.get_by_test_id("start-inputs-name-0").fill("message")
        # The model step: the configured provider and its model from dropdowns, a prompt.
        click_node(page, "llm")
        page.get_by_test_id("field-provider").select_option("openai")
        page.get_by_test_id("field-model-select").select_option(model)
        page.get_by_test_id("field-prompt").fill("Answer in one short sentence: {{inputs.message}}")
        # The output: named.
        click_node(page, "output")
        page.get_by_test_id("field-name").fill("answer")
        wait_saved(page)
        page.wait_for_function(
            "() => document.querySelector('[data-testid=problem-count]')?.dataset.count === '0'"
        )
        flow_id = page.url.rstrip("/").rsplit("/", 1)[-1]
        draft = server.api.get(f"/api/v1/flows/{flow_id}").json()["draft"]
        llm = next(n for n in draft["nodes"] if n["id"] == "llm")
        assert llm["config"]["provider"] == "openai" and llm["config"]["model"] == model
        assert "script" not in llm["config"]
        assert draft["inputs"]["properties"] == {"message": {"type": "string"}}

        # 4. The playground: a message in, the model's answer streamed on screen.
        page.get_by_test_id("open-playground").click()
        page.get_by_test_id("playground-input").fill("What colour is the sky?")
        page.get_by_test_id("playground-send").click()
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=playground-answer]')].pop()?.dataset.status === 'completed'",
            timeout=180_000,
        )
        answer = page.get_by_test_id("playground-answer").last.inner_text()
        assert answer.strip(), "the answer is on screen"
        runs = server.api.get("/api/v1/runs", params={"flow_id": flow_id}).json()
        run = server.wait_run(runs[0]["id"], ("completed",))
        assert run["inputs"] == {"message": "What colour is the sky?"}
        assert run["outputs"]["answer"].strip(), run
        # every model call says which provider and model answered
        assert run["nodes"]["llm"]["model"]["provider"] == "openai", run["nodes"]["llm"]
        screenshot(page, "new-user-playground.png")

        # 5. Publish, then the Use panel's curl snippet, with a key made on the Keys page.
        page.get_by_test_id("publish").click()
        page.get_by_test_id("publish-confirm").click()
        page.get_by_test_id("publish-badge").wait_for()
        page.wait_for_function(
            "() => /Published v1/.test(document.querySelector('[data-testid=publish-badge]')?.textContent || '')"
        )
        page.get_by_test_id("use-button").click()
        page.get_by_test_id("use-version").wait_for()
        snippet = page.get_by_test_id("use-curl").inner_text()
        page.keyboard.press("Escape")

        page.get_by_test_id("nav-keys").click()
        page.get_by_test_id("new-key").click()
        page.get_by_test_id("key-name").fill("curl from the docs")
        page.get_by_test_id("create-key-submit").click()
        key = page.get_by_test_id("secret-value").input_value().strip()
        assert key
        out = subprocess.run(
            ["bash", "-c", snippet.replace('"Hello"', '"Name a fruit."')],
            env={"PLAIT_API_KEY": key, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert out.returncode == 0, out.stderr
        body = json.loads(out.stdout)
        assert body["status"] == "completed" and body["outputs"]["answer"].strip(), body
        assert not errors, f"uncaught errors in the page: {errors}"
    finally:
        page.context.close()
        server.stop()
