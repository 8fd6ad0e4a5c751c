"""`Observability`: metrics, spans and log context of a service, fed from its run events.

Every event of the runs executing in this process goes through the service's `EventBus.publish`
(the launcher's sink hands it there; runs ended while idle publish their `run_finished` there too).
`attach` taps that one method, so the sinks below see every event right after the live
subscribers, in the task that emitted it, and the engine is not changed at all:

    RunMetrics   Prometheus counters and histograms (plait.service.metrics)
    RunTracer    OpenTelemetry spans, only when OTEL_EXPORTER_OTLP_ENDPOINT is set (plait.service.tracing)
    LogContext   the run and node ids of JSON log lines (plait.service.log_format)

`scrape()` reads what the events cannot say (runs executing here, queued runs in the database, the
sandbox pool) and renders the Prometheus text (`GET /metrics`); a process without the HTTP API (a
queue worker) calls `serve_metrics(port)` instead. `StoreFacts` answers the metrics' two questions
about a run from the store: when its row was created, and which models its nodes name (a published
version's answer is remembered: versions are immutable).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from opentelemetry.trace import TracerProvider
from prometheus_client import generate_latest, start_http_server
from sqlalchemy import func, select

from plait.engine.events import Event
from plait.engine.status import RunStatus
from plait.sandbox import default_pool
from plait.service.core import Services
from plait.service.log_format import LogContext, log_format_from_env
from plait.service.metrics import (
    QUEUE_DEPTH,
    REGISTRY,
    RUNS_EXECUTING,
    SANDBOX_WORKERS,
    ModelName,
    RunMetrics,
    metrics_mode_from_env,
    models_of,
)
from plait.service.tracing import RunTracer, otlp_endpoint, otlp_tracer_provider
from plait.store.models import Run

log = logging.getLogger("plait.service")

EventSink = Callable[[Event], None]
_MAX_CACHED_VERSIONS = 1024
_CHUNK = 500  # run ids per IN (...) query


class StoreFacts:
    """`RunFacts` from the store (plait.service.metrics.RunFacts), a query per `_CHUNK` runs."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self._versions: dict[tuple[str, int], Mapping[str, ModelName]] = {}

    async def created_at(self, run_ids: Collection[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        async with self.services.store.sessionmaker() as session:
            for chunk in _chunks(run_ids):
                rows = await session.execute(select(Run.id, Run.created_at).where(Run.id.in_(chunk)))
                out.update((run_id, float(created)) for run_id, created in rows)
        return out

    async def models(self, run_ids: Collection[str]) -> dict[str, Mapping[str, ModelName]]:
        out: dict[str, Mapping[str, ModelName]] = {}
        drafts: list[str] = []
        async with self.services.store.sessionmaker() as session:
            for chunk in _chunks(run_ids):
                rows = await session.execute(
                    select(Run.id, Run.flow_id, Run.version).where(Run.id.in_(chunk))
                )
                for run_id, flow_id, version in rows:
                    if version is None:
                        drafts.append(run_id)
                    else:
                        out[run_id] = await self._version_models(flow_id, version)
            for chunk in _chunks(drafts):  # runs of a draft keep their document
                kept = await session.execute(
                    select(Run.id, Run.flow_id, Run.document).where(Run.id.in_(chunk))
                )
                for run_id, flow_id, document in kept:
                    flow = await self.services.flows.document_for_run(flow_id, None, document)
                    out[run_id] = models_of(flow.doc)
        return out

    async def _version_models(self, flow_id: str, version: int) -> Mapping[str, ModelName]:
        """A published version's models (versions are immutable: remembered)."""
        found = self._versions.get((flow_id, version))
        if found is None:
            flow = await self.services.flows.document_for_run(flow_id, version)
            found = models_of(flow.doc)
            if len(self._versions) >= _MAX_CACHED_VERSIONS:
                self._versions.pop(next(iter(self._versions)))
            self._versions[(flow_id, version)] = found
        return found


def _chunks(ids: Collection[str]) -> Iterator[list[str]]:
    items = list(ids)
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


class Observability:
    """The observability sinks of one `Services`; `attach` once, `close` at shutdown."""

    def __init__(
        self,
        services: Services,
        *,
        metrics: bool = True,
        log_context: bool = True,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.services = services
        self.metrics = RunMetrics(StoreFacts(services))
        self.logs = LogContext()
        self.tracer_provider = tracer_provider
        self.tracer = (
            RunTracer(tracer_provider, models=self.metrics.models_for)
            if tracer_provider is not None
            else None
        )
        sinks: list[EventSink] = []
        if log_context:
            sinks.append(self.logs.observe)
        if metrics:
            sinks.append(self.metrics.observe)
        if self.tracer is not None:
            sinks.append(self.tracer.observe)
        self.sinks: tuple[EventSink, ...] = tuple(sinks)
        self._attached = False
        self._server: tuple[Any, Any] | None = None  # serve_metrics' HTTP server and thread
        self._refresher: asyncio.Task[None] | None = None

    @classmethod
    def from_env(cls, services: Services) -> Observability:
        """What the environment asks for: metrics unless PLAIT_METRICS=off, the log context with
        PLAIT_LOG_FORMAT=json, spans when OTEL_EXPORTER_OTLP_ENDPOINT is set (raises
        TracingUnavailable when the `otel` extra is missing then). Nothing asked, nothing attached."""
        return cls(
            services,
            metrics=metrics_mode_from_env() != "off",
            log_context=log_format_from_env() == "json",
            tracer_provider=otlp_tracer_provider() if otlp_endpoint() else None,
        )

    def attach(self) -> None:
        """Tap the service's event bus (once): the bus is the service's one fan-out point of run
        events, so the engine and the launcher stay as they are."""
        if self._attached or not self.sinks:
            return
        self._attached = True
        self.services.bus.taps.extend(self.sinks)

    async def refresh(self) -> None:
        """Count what is buffered and read the gauges (runs executing here, queued runs in the
        database, the sandbox pool) now."""
        await self.metrics.flush()
        RUNS_EXECUTING.set(len(self.services.runs.active))
        try:
            async with self.services.store.sessionmaker() as session:
                queued = (
                    await session.execute(
                        select(func.count()).select_from(Run).where(Run.status == RunStatus.QUEUED.value)
                    )
                ).scalar_one()
            QUEUE_DEPTH.set(int(queued))
        except Exception:  # noqa: BLE001 - the other metrics are still worth serving
            log.warning("cannot count the queued runs", exc_info=True)
        if self.metrics.sandbox_used:  # the pool exists: reading it starts nothing
            pool = default_pool()
            SANDBOX_WORKERS.labels("size").set(pool.size)
            SANDBOX_WORKERS.labels("idle").set(pool.idle_count())

    async def scrape(self) -> bytes:
        """The Prometheus text of this process, refreshed now (`GET /metrics`)."""
        await self.refresh()
        return generate_latest(REGISTRY)

    async def serve_metrics(self, port: int, addr: str = "127.0.0.1", *, every_s: float = 5.0) -> None:
        """For a process without the HTTP API (a queue worker): serve the metrics on `addr:port`
        from prometheus_client's own HTTP server (a thread) and `refresh` them every `every_s`
        seconds on this loop. Call it on the loop that executes the runs; `close` stops it."""
        self._server = start_http_server(port, addr, registry=REGISTRY)
        self._refresher = asyncio.get_running_loop().create_task(self._refresh_every(every_s))

    async def _refresh_every(self, every_s: float) -> None:
        while True:
            try:
                await self.refresh()
            except Exception:  # noqa: BLE001
                log.warning("cannot refresh the metrics", exc_info=True)
            await asyncio.sleep(every_s)

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.gather(self._refresher, return_exceptions=True)
        if self._server is not None:
            server, _thread = self._server
            server.shutdown()
        await self.metrics.drain()
        if self.tracer is not None:
            await self.tracer.drain()
        shutdown = getattr(self.tracer_provider, "shutdown", None)
        if callable(shutdown):
            shutdown()  # flushes the batch exporter


__all__ = ["Observability", "StoreFacts"]
