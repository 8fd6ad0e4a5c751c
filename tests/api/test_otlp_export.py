"""OTEL_EXPORTER_OTLP_ENDPOINT set: a server's runs reach an OTLP/HTTP collector as spans (a local
HTTP server stands in for the collector and decodes what it receives)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from plait.api import create_app
from plait.service import Settings

from .conftest import linear_flow
from .test_api import make_flow


class Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        Collector.received.append((self.path, body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


async def test_spans_reach_the_otlp_endpoint(
    collector: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", headers={"x-api-key": settings.api_key or ""}
        ) as client:
            await make_flow(client, linear_flow("lin", n=1))
            r = await client.post("/api/v1/flows/lin/runs", json={"inputs": {"query": "q"}})
            run_id = r.json()["id"]
    # The lifespan's end shut the tracer provider down, which flushed the batch.
    spans = []
    for path, body in Collector.received:
        assert path == "/v1/traces"
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
            assert service == "plait"
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (run,) = by_name["plait.run"]
    attributes = {a.key: a.value.string_value for a in run.attributes}
    assert attributes["plait.run_id"] == run_id and attributes["plait.status"] == "completed"
    nodes = by_name["plait.node"]
    assert {next(a.value.string_value for a in n.attributes if a.key == "plait.node_id") for n in nodes} == {
        "start",
        "d0",
        "out",
    }
    assert all(n.parent_span_id == run.span_id and n.trace_id == run.trace_id for n in nodes)
