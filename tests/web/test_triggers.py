"""Triggers in the browser: the editor's Triggers dialog adds a webhook (its secret shown once)
and a schedule; a delivery with the secret starts a run the run history marks as triggered."""

from __future__ import annotations

from typing import Any

import httpx

from .conftest import LiveServer
from .test_canvas import linear_doc


def test_add_a_webhook_and_a_schedule_then_a_delivery_shows_in_the_run_history(
    page: Any, live_server: LiveServer
) -> None:
    live_server.create_flow(linear_doc("hooked-ui", 0), publish=True)
    page.goto("/flows/hooked-ui")
    page.get_by_test_id("editor").wait_for()
    page.get_by_test_id("triggers-button").click()
    page.get_by_test_id("triggers-empty").wait_for()

    page.get_by_test_id("trigger-kind").select_option("webhook")
    page.get_by_test_id("trigger-add").click()
    secret_text = page.get_by_test_id("trigger-secret").inner_text()
    secret = secret_text.split(":")[-1].strip()
    assert secret.startswith("whsec_")
    [hook] = live_server.api.get("/api/v1/flows/hooked-ui/triggers").json()
    assert "secret" not in hook

    page.get_by_test_id("trigger-kind").select_option("schedule")
    page.get_by_test_id("trigger-cron").fill("0 9 * * 1-5")
    page.get_by_test_id("trigger-tz").fill("Europe/Paris")
    page.get_by_test_id("trigger-add").click()
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid^=\"trigger-toggle-\"]').length === 2"
    )
    kinds = sorted(t["kind"] for t in live_server.api.get("/api/v1/flows/hooked-ui/triggers").json())
    assert kinds == ["schedule", "webhook"]
    page.get_by_test_id("triggers-close").click()

    resp = httpx.post(
        live_server.url + hook["url"], json={}, headers={"authorization": f"Bearer {secret}"}, timeout=30
    )
    assert resp.status_code == 202, resp.text
    run_id = resp.json()["id"]
    assert live_server.wait_run(run_id, ("completed",))["trigger_id"] == hook["id"]
    page.get_by_test_id("panel-runs").click()
    page.get_by_test_id(f"run-trigger-{run_id}").wait_for()
