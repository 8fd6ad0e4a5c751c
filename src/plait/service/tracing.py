"""OpenTelemetry spans of the runs executing in this process, made from their events.

A run is a trace: a `plait.run` span from `run_started` to `run_finished` (a run that waits for a
human ends its span with status waiting; when it is answered, a new `plait.run` span covers the
rest), a `plait.node` child span per node attempt from `node_started` to `node_finished`, and under
each node that used a model a `gen_ai.chat` span with the provider, the model and the tokens. Every
span carries `plait.run_id`; node spans also `plait.node_id`, `plait.node_type` and `plait.attempt`.
Tool calls are span events of their node's span.

The spans are built after the fact from the events' timestamps (OpenTelemetry takes explicit start
and end times), so the engine's hot path does not change and nothing is traced when no exporter is
configured: `plait.service.observability` attaches a `RunTracer` only when
`OTEL_EXPORTER_OTLP_ENDPOINT` is set (or a test passes its own tracer provider). The SDK and the
OTLP exporter are the optional `otel` extra, imported by `otlp_tracer_provider` only.

What the events cannot show: the model calls inside one node are one `gen_ai.chat` span for the
node (its total tokens; an agent's loop makes several calls), and the edge-LLM decider's calls have
no span (its decisions carry no duration).
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from plait.engine import events as ev
from plait.engine.events import Event
from plait.errors import PlaitError
from plait.service.metrics import ModelName, model_name

OTLP_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
_MAX_OPEN_RUNS = 4096
# The run's node -> model names (plait.service.metrics.RunMetrics.models_for).
ModelsOf = Callable[[str], Awaitable[Mapping[str, ModelName]]]


def _ns(ts: float) -> int:
    return int(ts * 1_000_000_000)


class RunTracer:
    """An event sink that turns run events into spans."""

    def __init__(self, provider: TracerProvider | None = None, *, models: ModelsOf | None = None) -> None:
        self.tracer: Tracer = (provider or trace.get_tracer_provider()).get_tracer("plait")
        self.models = models
        self._runs: OrderedDict[str, Span] = OrderedDict()
        self._nodes: dict[tuple[str, str], tuple[Span, str, float]] = {}  # span, node type, start ts
        self._pending: set[asyncio.Task[Any]] = set()

    def observe(self, event: Event) -> None:
        data = event.data
        if isinstance(data, ev.RunStarted):
            attributes = {"plait.run_id": event.run_id, "plait.flow_id": data.flow_id}
            if data.retry_of:
                attributes["plait.retry_of"] = data.retry_of
            self._open_run(event, attributes)
        elif isinstance(data, ev.RunFinished):
            self._finish_run(event, data)
        elif event.node_id is not None:
            self._node_event(event)

    # ------------------------------------------------------------------ runs
    def _open_run(self, event: Event, attributes: dict[str, Any]) -> Span:
        old = self._runs.pop(event.run_id, None)
        if old is not None:
            old.end(end_time=_ns(event.ts))
        span = self.tracer.start_span(
            "plait.run", kind=SpanKind.INTERNAL, start_time=_ns(event.ts), attributes=attributes
        )
        self._runs[event.run_id] = span
        while len(self._runs) > _MAX_OPEN_RUNS:  # runs that never finished here (the process stopped)
            stale_id, stale = self._runs.popitem(last=False)
            for key in [k for k in self._nodes if k[0] == stale_id]:
                self._nodes.pop(key)[0].end()
            stale.end()
        return span

    def _run_span(self, event: Event) -> Span:
        """The open span of the run; a run continuing here (answered, recovered) gets a new one."""
        span = self._runs.get(event.run_id)
        if span is None:
            span = self._open_run(event, {"plait.run_id": event.run_id, "plait.resumed": True})
        return span

    def _finish_run(self, event: Event, data: ev.RunFinished) -> None:
        span = self._runs.pop(event.run_id, None)
        if span is None:  # a run ended without executing here (cancelled while queued or waiting)
            span = self.tracer.start_span(
                "plait.run", start_time=_ns(event.ts), attributes={"plait.run_id": event.run_id}
            )
        status = str(getattr(data.status, "value", data.status))
        span.set_attribute("plait.status", status)
        for kind in ("input_tokens", "output_tokens"):
            if isinstance(data.usage.get(kind), int):
                span.set_attribute(f"gen_ai.usage.{kind}", data.usage[kind])
        if status == "failed":
            span.set_status(Status(StatusCode.ERROR, data.error or "failed"))
        end = _ns(event.ts)
        for key in [k for k in self._nodes if k[0] == event.run_id]:  # waiting nodes
            node_span, _, _ = self._nodes.pop(key)
            node_span.set_attribute("plait.status", status)
            node_span.end(end_time=end)
        span.end(end_time=end)

    # ------------------------------------------------------------------ nodes
    def _node_event(self, event: Event) -> None:
        data = event.data
        node_id = event.node_id or ""
        key = (event.run_id, node_id)
        if isinstance(data, ev.NodeStarted):
            parent = trace.set_span_in_context(self._run_span(event))
            span = self.tracer.start_span(
                "plait.node",
                context=parent,
                start_time=_ns(event.ts),
                attributes={
                    "plait.run_id": event.run_id,
                    "plait.node_id": node_id,
                    "plait.node_type": data.node_type,
                    "plait.attempt": data.attempt,
                },
            )
            old = self._nodes.pop(key, None)
            if old is not None:
                old[0].end(end_time=_ns(event.ts))
            self._nodes[key] = (span, data.node_type, event.ts)
        elif isinstance(data, ev.NodeFinished):
            found = self._nodes.pop(key, None)
            if found is None:
                return
            span, node_type, started = found
            if data.ok:
                span.set_status(Status(StatusCode.OK))
            else:
                span.set_status(Status(StatusCode.ERROR, data.error or "error"))
            if data.usage:
                self._model_span(event, span, started, data.usage)
            span.end(end_time=_ns(event.ts))
        elif isinstance(data, ev.NodeToolCall):
            found = self._nodes.get(key)
            if found is not None:
                found[0].add_event("plait.tool_call", {"name": data.name}, timestamp=_ns(event.ts))
        elif isinstance(data, ev.NodeSkipped):
            span = self.tracer.start_span(
                "plait.node",
                context=trace.set_span_in_context(self._run_span(event)),
                start_time=_ns(event.ts),
                attributes={"plait.run_id": event.run_id, "plait.node_id": node_id, "plait.skipped": True},
            )
            span.end(end_time=_ns(event.ts))

    def _model_span(self, event: Event, node: Span, started: float, usage: Mapping[str, Any]) -> None:
        """The node's model calls: now without the model's name when there is no source of it,
        else once the run's model names are known."""
        context = trace.set_span_in_context(node)
        if self.models is None:
            self._emit_model_span(context, event, started, usage, None)
            return
        try:
            task = asyncio.ensure_future(self._later(context, event, started, dict(usage)))
        except RuntimeError:  # no running loop
            self._emit_model_span(context, event, started, usage, None)
            return
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _later(self, context: Any, event: Event, started: float, usage: dict[str, Any]) -> None:
        assert self.models is not None
        models = await self.models(event.run_id)
        self._emit_model_span(context, event, started, usage, model_name(models, event.node_id or ""))

    def _emit_model_span(
        self, context: Any, event: Event, started: float, usage: Mapping[str, Any], name: ModelName | None
    ) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "plait.run_id": event.run_id,
            "plait.node_id": event.node_id or "",
        }
        if name is not None:
            attributes["gen_ai.system"] = name.provider
            attributes["gen_ai.request.model"] = name.model
        for key in ("input_tokens", "output_tokens"):
            if isinstance(usage.get(key), int):
                attributes[f"gen_ai.usage.{key}"] = usage[key]
        title = f"gen_ai.chat {name.model}" if name is not None and name.model else "gen_ai.chat"
        span = self.tracer.start_span(
            title, context=context, kind=SpanKind.CLIENT, start_time=_ns(started), attributes=attributes
        )
        span.end(end_time=_ns(event.ts))

    async def drain(self) -> None:
        """Wait for the model spans still waiting for their model names."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)


class TracingUnavailable(PlaitError, RuntimeError):
    """OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed."""


def otlp_endpoint() -> str | None:
    return os.environ.get(OTLP_ENDPOINT_ENV) or None


def otlp_tracer_provider() -> TracerProvider:
    """An SDK tracer provider exporting over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (the
    exporter reads the OTEL_EXPORTER_OTLP_* variables itself), in batches. The service name is
    `plait` unless OTEL_SERVICE_NAME says otherwise."""
    # The `otel` extra: imported here, only when an endpoint is set, so that a server without it
    # never loads (or needs) the SDK.
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise TracingUnavailable(
            f"{OTLP_ENDPOINT_ENV} is set but the OpenTelemetry SDK is not installed",
            hint="pip install 'plait[otel]', or unset the variable",
            code="tracing_unavailable",
        ) from exc
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "plait"}
    provider = SdkTracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


__all__ = ["OTLP_ENDPOINT_ENV", "RunTracer", "TracingUnavailable", "otlp_endpoint", "otlp_tracer_provider"]
