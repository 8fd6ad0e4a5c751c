"""Plugging in a real model from the UI (issue 14, defects 2 and 3), in chromium against the real
server, with an OpenAI-compatible model server on 127.0.0.1 (tests/api/test_llm_settings.py's
`serve_models`): the Models page adds an endpoint and "Test connection" lists its models; the
providers the node forms offer reflect it; a run's inspector says which provider and model
answered; the Variables page keeps secrets write-only; a made-up provider is a problem in the
editor. Each would fail on the old UI (no settings pages, no model recorded, `gpt4` valid)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.test_llm_settings import KEY, MODELS, serve_models

from .conftest import LiveServer

MODEL_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL")


def _forget_endpoint(server: LiveServer) -> None:
    """The live server is shared by the package: leave the admin without a model endpoint."""
    for name in MODEL_VARIABLES:
        server.api.delete(f"/api/v1/variables/{name}")


@pytest.fixture
def model_server(live_server: LiveServer) -> Iterator[Any]:
    with serve_models() as httpd:
        try:
            yield httpd
        finally:
            _forget_endpoint(live_server)


def _providers_in_browser(page: Any) -> dict[str, Any]:
    """What the node forms' provider and model dropdowns read, fetched with the page's session."""
    listed = page.evaluate("() => fetch('/api/v1/llm/providers').then((r) => r.json())")
    return {p["name"]: p for p in listed}


def test_models_page_adds_an_endpoint_and_test_connection_lists_its_models(
    page: Any, live_server: LiveServer, model_server: Any
) -> None:
    page.goto("/")
    page.get_by_test_id("nav-settings").click()
    page.get_by_test_id("models-page").wait_for()
    assert page.get_by_test_id("provider-status-openai").inner_text() == "not configured"
    assert "scripted (no model)" in page.get_by_test_id("provider-card-scripted").inner_text()

    page.get_by_test_id("add-endpoint").click()
    page.get_by_test_id("endpoint-provider").select_option("openai")
    page.get_by_test_id("endpoint-base-url").fill(model_server.url)
    page.get_by_test_id("endpoint-key").fill("sk-wrong")
    page.get_by_test_id("test-connection").click()
    error = page.get_by_test_id("test-error")
    error.wait_for()
    assert "refused the key (HTTP 401)" in error.inner_text()

    page.get_by_test_id("endpoint-key").fill(KEY)
    page.get_by_test_id("test-connection").click()
    page.locator('[data-testid=test-result][data-ok="true"]').wait_for()
    listed = page.get_by_test_id("test-models").inner_text()
    assert all(m in listed for m in MODELS)
    page.get_by_test_id("test-models").get_by_text("smol-b").click()
    assert page.get_by_test_id("endpoint-model").input_value() == "smol-b"
    page.get_by_test_id("save-endpoint").click()
    page.get_by_test_id("models-notice").wait_for()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=provider-status-openai]')?.textContent === 'configured'"
    )
    assert KEY not in page.content()  # the key is never shown back

    # The key is the user's secret variable; the providers the forms offer now list the models.
    variables = {v["name"]: v for v in live_server.api.get("/api/v1/variables").json()}
    assert variables["OPENAI_API_KEY"]["is_secret"] and variables["OPENAI_API_KEY"]["value"] != KEY
    assert variables["OPENAI_BASE_URL"]["value"] == model_server.url
    openai = _providers_in_browser(page)["openai"]
    assert openai["configured"] and openai["models"] == MODELS and openai["default_model"] == "smol-b"

    page.get_by_test_id("remove-openai").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=provider-status-openai]')?.textContent === 'not configured'"
    )


def test_a_run_shows_which_provider_and_model_answered(
    page: Any, live_server: LiveServer, model_server: Any
) -> None:
    for name, value, secret in (("OPENAI_BASE_URL", model_server.url, False), ("OPENAI_API_KEY", KEY, True)):
        r = live_server.api.put(f"/api/v1/variables/{name}", json={"value": value, "is_secret": secret})
        assert r.status_code == 200, r.text
    doc = {
        "schema": "plait/flow@1",
        "id": "asks-a-model",
        "name": "Asks a model",
        "nodes": [
            {"id": "ask", "type": "llm", "config": {"provider": "openai", "model": "smol-b", "prompt": "hi"}},
            {"id": "done", "type": "output", "config": {"name": "answer", "value": "{{ask.output}}"}},
        ],
        "edges": [{"source": "ask", "target": "done"}],
    }
    live_server.create_flow(doc)
    r = live_server.api.post(
        "/api/v1/flows/asks-a-model/runs", params={"version": "draft"}, json={"inputs": {}}
    )
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    page.goto(f"/runs/{r.json()['id']}")
    page.get_by_test_id("run-inspector").wait_for()
    page.get_by_test_id("node-ask").click()
    model = page.get_by_test_id("node-model")
    model.wait_for()
    assert "openai" in model.inner_text() and "smol-b" in model.inner_text()


def test_variables_page_keeps_secrets_write_only(page: Any, live_server: LiveServer) -> None:
    page.goto("/settings/variables")
    page.get_by_test_id("variables-page").wait_for()
    try:
        page.get_by_test_id("add-variable").click()
        page.get_by_test_id("variable-name").fill("REGION")
        page.get_by_test_id("variable-value").fill("eu-west")
        page.get_by_test_id("variable-save").click()
        page.get_by_test_id("variable-row-REGION").wait_for()
        assert page.get_by_test_id("variable-value-REGION").inner_text() == "eu-west"

        page.get_by_test_id("add-variable").click()
        page.get_by_test_id("variable-name").fill("SERVICE_TOKEN")
        page.get_by_test_id("variable-secret").check()
        page.get_by_test_id("variable-value").fill("tok-very-secret-123")
        page.get_by_test_id("variable-save").click()
        page.get_by_test_id("variable-row-SERVICE_TOKEN").wait_for()
        assert "tok-very-secret-123" not in page.get_by_test_id("variable-value-SERVICE_TOKEN").inner_text()

        # Editing a secret starts empty (write-only): the stored value never reaches the page.
        page.get_by_test_id("variable-edit-SERVICE_TOKEN").click()
        assert page.get_by_test_id("variable-value").input_value() == ""
        assert "tok-very-secret-123" not in page.content()
        page.get_by_test_id("variable-value").fill("tok-rotated-456")
        page.get_by_test_id("variable-save").click()
        page.get_by_test_id("variable-form").wait_for(state="detached")

        page.get_by_test_id("variable-edit-REGION").click()
        assert page.get_by_test_id("variable-value").input_value() == "eu-west"
        page.get_by_test_id("variable-value").fill("us-east")
        page.get_by_test_id("variable-save").click()
        page.wait_for_function(
            "() => document.querySelector('[data-testid=variable-value-REGION]')?.textContent === 'us-east'"
        )

        page.get_by_test_id("variable-delete-REGION").click()
        page.get_by_test_id("variable-row-REGION").wait_for(state="detached")
        names = [v["name"] for v in live_server.api.get("/api/v1/variables").json()]
        assert "REGION" not in names and "SERVICE_TOKEN" in names
    finally:
        for name in ("REGION", "SERVICE_TOKEN"):
            live_server.api.delete(f"/api/v1/variables/{name}")


def test_a_made_up_provider_is_a_problem_in_the_editor(page: Any, live_server: LiveServer) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "made-up-provider",
        "name": "Made-up provider",
        "nodes": [
            {"id": "start", "type": "start", "position": {"x": 0, "y": 0}},
            {
                "id": "ask",
                "type": "llm",
                "config": {"provider": "gpt4", "prompt": "hi"},
                "position": {"x": 260, "y": 0},
            },
        ],
        "edges": [{"source": "start", "target": "ask"}],
    }
    live_server.create_flow(doc)
    page.goto("/flows/made-up-provider")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("node-problems-ask").wait_for()
    assert int(page.get_by_test_id("problem-count").get_attribute("data-count")) >= 1
    page.get_by_test_id("node-ask").click()
    page.get_by_text("did you mean provider 'openai' with model 'gpt4'", exact=False).first.wait_for()
