"""GET /metrics: scraped after some runs and parsed with prometheus_client's own parser; who may
read it (PLAIT_METRICS public, admin, off)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from plait.api import create_app
from plait.service import Settings
from plait.service.metrics import TRIGGERS_FIRED

from .conftest import API_KEY, human_flow, linear_flow
from .test_api import make_flow
from .test_llm_usage_api import DOC as LLM_DOC

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(client: httpx.AsyncClient) -> Samples:
    r = await client.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def test_metrics_count_runs_nodes_tokens_and_queue(app: Any, client: httpx.AsyncClient) -> None:
    await make_flow(client, linear_flow("lin", n=2))
    await make_flow(client, LLM_DOC)
    before = await scrape(client)
    for i in range(3):
        r = await client.post("/api/v1/flows/lin/runs", json={"inputs": {"query": f"q{i}"}})
        assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    r = await client.post("/api/v1/flows/ask/runs", json={"inputs": {}})
    assert r.json()["status"] == "completed", r.text
    bad = await client.post("/api/v1/flows/lin/runs", json={"inputs": {}})  # invalid inputs: no run
    assert bad.status_code == 422
    TRIGGERS_FIRED.labels(kind="webhook").inc()
    await app.state.observability.metrics.drain()  # the background reads (queue wait, model names)
    after = await scrape(client)

    assert delta(before, after, "plait_runs_started_total") == 4
    assert delta(before, after, "plait_runs_finished_total", status="completed") == 4
    assert delta(before, after, "plait_runs_finished_total", status="failed") == 0
    assert delta(before, after, "plait_run_duration_seconds_count", status="completed") == 4
    assert value(after, "plait_runs_executing") == 0
    assert value(after, "plait_queue_depth") == 0
    # 3 runs x 2 delay nodes; start and output nodes too; the llm flow's two model nodes.
    assert delta(before, after, "plait_node_duration_seconds_count", type="delay", outcome="ok") == 6
    assert delta(before, after, "plait_node_duration_seconds_count", type="output", outcome="ok") == 4
    assert delta(before, after, "plait_node_duration_seconds_count", type="llm", outcome="ok") == 2
    slow = delta(before, after, "plait_node_duration_seconds_bucket", type="delay", outcome="ok", le="+Inf")
    assert slow == 6
    # Tokens of the scripted llm nodes (the same counts as tests/api/test_llm_usage_api.py).
    tokens = {"provider": "scripted", "model": "scripted"}
    assert delta(before, after, "plait_llm_tokens_total", kind="input", **tokens) == 5
    assert delta(before, after, "plait_llm_tokens_total", kind="output", **tokens) == 4
    assert delta(before, after, "plait_queue_wait_seconds_count") == 4
    assert delta(before, after, "plait_triggers_fired_total", kind="webhook") == 1
    assert value(after, "process_cpu_seconds_total") > 0


async def test_metrics_count_failed_and_cancelled_runs(app: Any, client: httpx.AsyncClient) -> None:
    doc = {
        "schema": "plait/flow@1",
        "id": "boom",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "c", "type": "code", "config": {"code": "def main(**kw):\n    raise ValueError('no')\n"}},
        ],
        "edges": [{"source": "start", "target": "c"}],
    }
    await make_flow(client, doc)
    before = await scrape(client)
    r = await client.post("/api/v1/flows/boom/runs", json={"inputs": {}})
    assert r.json()["status"] == "failed", r.text
    after = await scrape(client)
    assert delta(before, after, "plait_runs_finished_total", status="failed") == 1
    assert delta(before, after, "plait_node_duration_seconds_count", type="code", outcome="error") == 1
    # A code node ran: the sandbox pool is shown.
    assert value(after, "plait_sandbox_pool_workers", state="size") >= 0
    assert ("plait_sandbox_pool_workers", (("state", "idle"),)) in after


@pytest.fixture
def make_app(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Any:
    async def make(mode: str) -> AsyncIterator[httpx.AsyncClient]:
        monkeypatch.setenv("PLAIT_METRICS", mode)
        application = create_app(settings)
        async with application.router.lifespan_context(application):
            transport = httpx.ASGITransport(app=application)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                yield client

    return make


async def test_metrics_public_by_default(make_app: Any) -> None:
    async for client in make_app("public"):
        assert (await client.get("/metrics")).status_code == 200
        schema = (await client.get("/openapi.json", headers={"x-api-key": API_KEY})).json()
        assert "/metrics" not in schema["paths"]


async def test_metrics_admin_needs_an_admin_key(make_app: Any) -> None:
    async for client in make_app("admin"):
        assert (await client.get("/metrics")).status_code == 401
        r = await client.get("/metrics", headers={"authorization": f"Bearer {API_KEY}"})
        assert r.status_code == 200
        assert "plait_runs_started_total" in r.text


async def test_metrics_off(make_app: Any) -> None:
    async for client in make_app("off"):
        assert (await client.get("/metrics")).status_code == 404


def test_a_bad_metrics_mode_is_refused(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_METRICS", "sometimes")
    with pytest.raises(ValueError, match="PLAIT_METRICS"):
        create_app(settings)


async def test_a_run_waiting_for_a_human_is_paused_not_finished(app: Any, client: httpx.AsyncClient) -> None:
    await make_flow(client, human_flow("hum"))
    before = await scrape(client)
    r = await client.post("/api/v1/flows/hum/runs", json={"inputs": {"query": "x"}})
    assert r.json()["status"] == "waiting", r.text
    after = await scrape(client)
    assert delta(before, after, "plait_runs_paused_total") == 1
    assert delta(before, after, "plait_runs_started_total") == 1
    assert (
        sum(delta(before, after, "plait_runs_finished_total", status=s) for s in ("completed", "failed")) == 0
    )
    assert value(after, "plait_runs_executing") == 0
