"""Spans (OpenTelemetry's in-memory exporter) and JSON log lines of a service's runs."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from plait.engine import events as ev
from plait.engine.events import Event
from plait.net.redact import SecretMask, log_masking
from plait.service import Services, Settings
from plait.service.log_format import (
    NODE_ID,
    RUN_ID,
    JsonFormatter,
    LogContext,
    log_format_from_env,
    uvicorn_log_config,
)
from plait.service.observability import Observability
from plait.service.tracing import RunTracer, TracingUnavailable, otlp_tracer_provider

DOC = {
    "schema": "plait/flow@1",
    "id": "traced",
    "nodes": [
        {"id": "start", "type": "start"},
        {
            "id": "ask",
            "type": "llm",
            "config": {"provider": "scripted", "model": "tiny", "prompt": "one two", "script": ["x y z"]},
        },
        {"id": "out", "type": "output", "config": {"name": "answer"}},
    ],
    "edges": [{"source": "start", "target": "ask"}, {"source": "ask", "target": "out"}],
}


@pytest.fixture
async def traced(tmp_path: Any) -> AsyncIterator[tuple[Services, Observability, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/plait.db", require_auth=False)
    services = await Services.open(settings)
    observability = Observability(services, tracer_provider=provider)
    observability.attach()
    try:
        yield services, observability, exporter
    finally:
        await services.close()
        await observability.close()


async def test_a_run_is_a_trace_of_node_and_model_spans(
    traced: tuple[Services, Observability, InMemorySpanExporter],
) -> None:
    services, observability, exporter = traced
    await services.flows.create(DOC)
    await services.flows.publish("traced")
    run_id, task = await services.runs.start("traced", {})
    await task
    assert observability.tracer is not None
    await observability.tracer.drain()
    spans = exporter.get_finished_spans()
    runs = [s for s in spans if s.name == "plait.run"]
    assert len(runs) == 1
    run = runs[0]
    assert run.attributes["plait.run_id"] == run_id
    assert run.attributes["plait.flow_id"] == "traced"
    assert run.attributes["plait.status"] == "completed"
    nodes = {s.attributes["plait.node_id"]: s for s in spans if s.name == "plait.node"}
    assert set(nodes) == {"start", "ask", "out"}
    for span in nodes.values():
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
        assert span.attributes["plait.run_id"] == run_id
        assert run.start_time <= span.start_time <= span.end_time <= run.end_time
    assert nodes["ask"].attributes["plait.node_type"] == "llm"
    chats = [s for s in spans if s.name.startswith("gen_ai.chat")]
    assert len(chats) == 1
    chat = chats[0]
    assert chat.parent is not None and chat.parent.span_id == nodes["ask"].context.span_id
    assert chat.attributes["gen_ai.system"] == "scripted"
    assert chat.attributes["gen_ai.request.model"] == "tiny"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 2
    assert chat.attributes["gen_ai.usage.output_tokens"] == 3
    assert chat.attributes["plait.node_id"] == "ask"


async def test_a_failed_node_marks_its_span(
    traced: tuple[Services, Observability, InMemorySpanExporter],
) -> None:
    services, _, exporter = traced
    doc = {
        "schema": "plait/flow@1",
        "id": "bad",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "get", "type": "http", "config": {"url": "http://127.0.0.1:9/nothing"}},
        ],
        "edges": [{"source": "start", "target": "get"}],
    }
    await services.flows.create(doc)
    await services.flows.publish("bad")
    _, task = await services.runs.start("bad", {})
    await task
    spans = {
        s.name + ":" + str(s.attributes.get("plait.node_id", "")): s for s in exporter.get_finished_spans()
    }
    assert not spans["plait.node:get"].status.is_ok
    assert spans["plait.run:"].attributes["plait.status"] == "failed"


def test_no_endpoint_no_tracer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    services: Any = type("S", (), {"bus": None})()
    assert Observability.from_env(services).tracer is None


def test_an_endpoint_builds_an_otlp_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    provider = otlp_tracer_provider()
    try:
        assert RunTracer(provider).tracer is not None
    finally:
        provider.shutdown()
    assert issubclass(TracingUnavailable, RuntimeError)


async def test_json_log_lines_carry_the_run_id(
    traced: tuple[Services, Observability, InMemorySpanExporter], capsys: pytest.CaptureFixture[str]
) -> None:
    services, _, _ = traced
    logger = logging.getLogger("plait.test.json")
    handler = logging.StreamHandler()  # stderr, captured
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    doc = {
        "schema": "plait/flow@1",
        "id": "logs",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "w", "type": "delay", "config": {"seconds": 0}},
        ],
        "edges": [{"source": "start", "target": "w"}],
    }
    seen: list[str | None] = []

    # A node that logs: the event sink sets the context in the run's tasks.
    original = services.bus.publish

    def spy(event: Any) -> None:
        original(event)
        if event.type == "node_started":
            logger.info("node %s started", event.node_id, extra={"attempt": 1})
            seen.append(RUN_ID.get())

    services.bus.publish = spy  # type: ignore[method-assign]
    try:
        await services.flows.create(doc)
        await services.flows.publish("logs")
        run_id, task = await services.runs.start("logs", {})
        await task
        logger.warning("boom", extra={"run_id": "r-explicit", "node_id": "n1"})
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    started = [line for line in lines if line["message"].startswith("node ")]
    assert {line["node_id"] for line in started} == {"start", "w"}
    assert all(line["run_id"] == run_id and line["level"] == "info" for line in started)
    assert all(line["attempt"] == 1 and line["logger"] == "plait.test.json" for line in started)
    assert seen == [run_id, run_id]
    assert lines[-1]["run_id"] == "r-explicit" and lines[-1]["node_id"] == "n1"


def test_json_formatter_keeps_secret_masking(caplog: pytest.LogCaptureFixture) -> None:
    log_masking.install()
    log_masking.add(SecretMask(["s3cr3t-value-123"]))
    logger = logging.getLogger("plait.test.mask")
    with caplog.at_level(logging.INFO, logger="plait.test.mask"):
        logger.info("key is %s", "s3cr3t-value-123")
    line = json.loads(JsonFormatter().format(caplog.records[-1]))
    assert "s3cr3t-value-123" not in line["message"]


def test_log_format_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLAIT_LOG_FORMAT", raising=False)
    assert log_format_from_env() == "text"
    assert uvicorn_log_config("text") is None
    monkeypatch.setenv("PLAIT_LOG_FORMAT", "JSON")
    assert log_format_from_env() == "json"
    config = uvicorn_log_config("json", "debug")
    assert config is not None and config["root"]["level"] == "DEBUG"
    monkeypatch.setenv("PLAIT_LOG_FORMAT", "xml")
    with pytest.raises(ValueError, match="PLAIT_LOG_FORMAT"):
        log_format_from_env()


async def test_a_node_task_created_after_node_started_logs_with_its_ids() -> None:
    """The engine creates a node's task right after emitting its node_started (in the run's task):
    the task inherits the ids the sink set."""
    context = LogContext()

    async def node_task() -> tuple[str | None, str | None]:
        return RUN_ID.get(), NODE_ID.get()

    async def run_task() -> list[tuple[str | None, str | None]]:
        context.observe(Event(1, ev.RUN_STARTED, "r1", 0.0, None, ev.RunStarted("f", {})))
        tasks = []
        for node in ("a", "b"):
            context.observe(Event(2, ev.NODE_STARTED, "r1", 0.0, node, ev.NodeStarted("delay")))
            tasks.append(asyncio.get_running_loop().create_task(node_task()))
        context.observe(Event(4, ev.EDGE_FIRED, "r1", 0.0, None, ev.EdgeFired("e", "a", "b")))
        return [*await asyncio.gather(*tasks), (RUN_ID.get(), NODE_ID.get())]

    assert await asyncio.get_running_loop().create_task(run_task()) == [
        ("r1", "a"),
        ("r1", "b"),
        ("r1", None),
    ]
    assert RUN_ID.get() is None  # the test's own context is untouched


async def test_a_process_without_the_api_serves_its_metrics(tmp_path: Any) -> None:
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/plait.db", require_auth=False)
    services = await Services.open(settings)
    observability = Observability(services)
    observability.attach()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    try:
        await observability.serve_metrics(port, every_s=0.05)
        await services.flows.create(DOC)
        await services.flows.publish("traced")
        _, task = await services.runs.start("traced", {})
        await task
        await asyncio.sleep(0.2)  # a refresh
        async with httpx.AsyncClient() as client:
            text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert families["plait_runs_started"].samples[0].value >= 1
        assert "plait_queue_depth" in families
    finally:
        await services.close()
        await observability.close()
