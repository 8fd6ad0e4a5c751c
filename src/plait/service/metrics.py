"""Prometheus metrics of a plait process (`GET /metrics`), fed from its run events.

The metrics live in one registry of their own (`REGISTRY`, not prometheus_client's global one), so
what `/metrics` shows is plait's and the process' (CPU, memory, open files), nothing a library
registered by accident. They are module-level: other parts of the service count into them by name
(the trigger scheduler: `TRIGGERS_FIRED.labels(kind="schedule").inc()`).

`RunMetrics` turns the events of the runs executing in this process into counts: the engine is not
asked for anything new, so its hot path does not change. Two facts are not in the events and are
read in batches through `RunFacts` (an async source the wiring supplies, see
`plait.service.observability`): when the run's row was created (the queue wait is the time from
there to `run_started`) and which provider and model each model-using node names (the token
counters' labels). What depends on the database or on objects outside the events (runs executing,
queue depth, the sandbox pool) is read at scrape time by `Observability.scrape`.

Label values are bounded: statuses, node types, outcome, provider and model names as written in
the flow documents, trigger kinds. Run, flow and node ids are never labels (they would make a
series per run).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from plait.engine import events as ev
from plait.engine.events import Event
from plait.engine.status import TERMINAL_RUN_STATUSES
from plait.spec.models import FlowDocument, GraphSpec

log = logging.getLogger("plait.service.metrics")

METRICS_ENV = "PLAIT_METRICS"
METRICS_MODES = ("public", "admin", "off")  # who may read /metrics; off: nothing is counted either


def metrics_mode_from_env() -> str:
    """`PLAIT_METRICS`: public (default), admin or off (see plait.api.metrics)."""
    value = (os.environ.get(METRICS_ENV) or "public").strip().lower()
    if value not in METRICS_MODES:
        raise ValueError(f"{METRICS_ENV} must be one of {', '.join(METRICS_MODES)}, not {value!r}")
    return value


REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

# Seconds: model calls and sandboxed code take from milliseconds to minutes.
_DURATION_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

RUNS_STARTED = Counter("plait_runs_started", "Runs started in this process.", registry=REGISTRY)
RUNS_FINISHED = Counter(
    "plait_runs_finished",
    "Runs that ended in this process, by final status (completed, failed, cancelled).",
    ["status"],
    registry=REGISTRY,
)
RUNS_PAUSED = Counter(
    "plait_runs_paused", "Times a run stopped to wait for a human (status waiting).", registry=REGISTRY
)
RUNS_EXECUTING = Gauge(
    "plait_runs_executing", "Runs executing in this process now (read at scrape time).", registry=REGISTRY
)
RUN_DURATION = Histogram(
    "plait_run_duration_seconds",
    "Run durations as the engine reports them in run_finished, by final status.",
    ["status"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
NODE_DURATION = Histogram(
    "plait_node_duration_seconds",
    "Node attempt durations, by node type and outcome (ok, error).",
    ["type", "outcome"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
QUEUE_DEPTH = Gauge(
    "plait_queue_depth",
    "Runs in the database waiting to start (status queued), read at scrape time.",
    registry=REGISTRY,
)
QUEUE_WAIT = Histogram(
    "plait_queue_wait_seconds",
    "Time from a run's row being created to its run_started event.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "plait_llm_tokens",
    "Model tokens used by nodes and edge-LLM deciders, by provider and model as the flow names them "
    "and kind (input, output).",
    ["provider", "model", "kind"],
    registry=REGISTRY,
)
SANDBOX_WORKERS = Gauge(
    "plait_sandbox_pool_workers",
    "The code sandbox's pool: its configured size and its idle (ready) workers, read at scrape "
    "time once this process has run sandboxed code.",
    ["state"],
    registry=REGISTRY,
)
TRIGGERS_FIRED = Counter(
    "plait_triggers_fired",
    "Trigger firings that started a run, by trigger kind (schedule, webhook).",
    ["kind"],
    registry=REGISTRY,
)

# Node types whose work happens in the sandbox's pool (so the pool exists once one has run).
SANDBOX_NODE_TYPES = frozenset({"code", "component"})
# How many runs' facts (and per-run node bookkeeping) are kept at most.
_MAX_TRACKED_RUNS = 4096


@dataclass(frozen=True, slots=True)
class ModelName:
    provider: str
    model: str


class RunFacts(Protocol):
    """What the events of runs do not say, read in batches (the wiring reads the store)."""

    async def created_at(self, run_ids: Collection[str]) -> dict[str, float]:
        """When each run's row was created (runs without a row are left out)."""
        ...

    async def models(self, run_ids: Collection[str]) -> dict[str, Mapping[str, ModelName]]:
        """The provider and model each model-using node of each run names (`models_of`)."""
        ...


UNKNOWN_MODEL = ModelName("unknown", "unknown")
DECIDER = ""  # the key of the edge-LLM decider in `RunFacts.models`


def _model_of(config: Mapping[str, Any]) -> ModelName:
    # ModelSettings' defaults: provider "openai"; the scripted provider's model is "scripted".
    provider = str(config.get("provider") or "openai")
    model = str(config.get("model") or ("scripted" if provider in ("scripted", "auto") else ""))
    return ModelName(provider, model)


def _walk(graph: GraphSpec | Mapping[str, Any], out: dict[str, ModelName]) -> None:
    nodes: Iterable[Any] = graph.nodes if isinstance(graph, GraphSpec) else graph.get("nodes") or ()
    for node in nodes:
        node_id, config = (
            (node.id, node.config) if not isinstance(node, Mapping) else (node.get("id"), node.get("config"))
        )
        if not isinstance(config, Mapping):
            continue
        if "provider" in config or "model" in config or "script" in config:
            out[str(node_id).lower()] = _model_of(config)
        for value in config.values():  # loop and map bodies
            if isinstance(value, Mapping) and isinstance(value.get("nodes"), list):
                _walk(value, out)


def model_name(models: Mapping[str, ModelName], node_id: str) -> ModelName:
    """The model `node_id` names (a body node's id may carry its parent's prefix), else unknown."""
    node = node_id.lower()
    return models.get(node) or models.get(node.rsplit("/", 1)[-1]) or UNKNOWN_MODEL


def models_of(doc: FlowDocument) -> dict[str, ModelName]:
    """Node id (lower case) -> the provider and model its config names; the decider under ""."""
    out: dict[str, ModelName] = {}
    _walk(doc, out)
    decider = doc.settings.decider
    if decider is not None:
        out[DECIDER] = ModelName(decider.provider, decider.model or "scripted")
    return out


class RunMetrics:
    """An event sink: counts what the run events of this process say, a dict look-up and a counter
    per event. The queue waits and token counts wait in a buffer for the facts they need (when the
    run's row was created, the models its nodes name), which `flush` reads in one batch: at every
    scrape, and in the background once `FLUSH_AT` of them are waiting. So a run costs no database
    read of its own."""

    FLUSH_AT = 512

    def __init__(self, facts: RunFacts | None = None) -> None:
        self.facts = facts
        self._node_types: dict[str, dict[str, str]] = {}  # run -> node -> type, while it runs
        self._waits: dict[str, float] = {}  # run -> run_started time, for the queue wait
        self._usages: list[tuple[str, str, Mapping[str, Any]]] = []  # run, node, usage
        self._flushing: asyncio.Task[None] | None = None
        self._models: OrderedDict[str, asyncio.Future[Mapping[str, ModelName]]] = OrderedDict()
        self.sandbox_used = False

    def observe(self, event: Event) -> None:
        data = event.data
        if isinstance(data, ev.NodeStarted):
            if event.node_id is not None:
                types = self._node_types.get(event.run_id)
                if types is None:
                    types = self._node_types[event.run_id] = {}
                types[event.node_id] = data.node_type
                if data.node_type in SANDBOX_NODE_TYPES:
                    self.sandbox_used = True
        elif isinstance(data, ev.NodeFinished):
            types = self._node_types.get(event.run_id)
            node_type = (types.pop(event.node_id or "", None) if types else None) or "unknown"
            if data.duration_ms is not None:
                outcome = "ok" if data.ok else "error"
                NODE_DURATION.labels(node_type, outcome).observe(data.duration_ms / 1000.0)
            if data.usage:
                self._buffer_usage(event.run_id, event.node_id or "", data.usage)
        elif isinstance(data, ev.Decision | ev.DecisionRejected):
            if data.usage:
                self._buffer_usage(event.run_id, DECIDER, data.usage)
        elif isinstance(data, ev.RunStarted):
            RUNS_STARTED.inc()
            if self.facts is not None:
                self._waits[event.run_id] = event.ts
                self._maybe_flush()
        elif isinstance(data, ev.RunFinished):
            self._run_ended(event.run_id, data)

    def _run_ended(self, run_id: str, data: ev.RunFinished) -> None:
        status = str(getattr(data.status, "value", data.status))
        if data.status in TERMINAL_RUN_STATUSES:
            RUNS_FINISHED.labels(status).inc()
            if data.duration_ms is not None:
                RUN_DURATION.labels(status).observe(data.duration_ms / 1000.0)
        elif status == "waiting":
            RUNS_PAUSED.inc()
        self._node_types.pop(run_id, None)

    def _buffer_usage(self, run_id: str, node: str, usage: Mapping[str, Any]) -> None:
        if self.facts is None:
            _count_tokens(UNKNOWN_MODEL, usage)
            return
        self._usages.append((run_id, node, usage))
        self._maybe_flush()

    # ------------------------------------------------------------------ facts, read in batches
    def _maybe_flush(self) -> None:
        if len(self._waits) + len(self._usages) < self.FLUSH_AT or self._flushing is not None:
            return
        try:
            task = asyncio.get_running_loop().create_task(self.flush())
        except RuntimeError:  # no running loop: the next scrape flushes
            return
        self._flushing = task

        def _done(t: asyncio.Task[None]) -> None:
            if self._flushing is t:
                self._flushing = None

        task.add_done_callback(_done)

    async def flush(self) -> None:
        """Read the facts the buffered queue waits and token counts need, and count them."""
        waits, self._waits = self._waits, {}
        usages, self._usages = self._usages, []
        if self.facts is None or not (waits or usages):
            return
        if waits:
            try:
                created = await self.facts.created_at(list(waits))
            except Exception:  # noqa: BLE001 - a metric is not worth an error
                log.warning("cannot read when %d runs were created", len(waits), exc_info=True)
                created = {}
            for run_id, started in waits.items():
                at = created.get(run_id)
                if at is not None and started >= at:
                    QUEUE_WAIT.observe(started - at)
        if usages:
            try:
                models = await self.facts.models({run_id for run_id, _, _ in usages})
            except Exception:  # noqa: BLE001
                log.warning("cannot read the models of %d runs", len(usages), exc_info=True)
                models = {}
            for run_id, node, usage in usages:
                _count_tokens(model_name(models.get(run_id) or {}, node), usage)

    def models_for(self, run_id: str) -> asyncio.Future[Mapping[str, ModelName]]:
        """The models the run's nodes name, read once per run (for spans; the last few thousand
        runs are remembered); empty without facts or when they cannot be read."""
        found = self._models.get(run_id)
        if found is None:
            found = self._models[run_id] = asyncio.ensure_future(self._read_models(run_id))
            while len(self._models) > _MAX_TRACKED_RUNS:
                self._models.popitem(last=False)
        else:
            self._models.move_to_end(run_id)
        return found

    async def _read_models(self, run_id: str) -> Mapping[str, ModelName]:
        if self.facts is None:
            return {}
        try:
            return (await self.facts.models([run_id])).get(run_id) or {}
        except Exception:  # noqa: BLE001
            log.debug("cannot read the models of run %s", run_id, exc_info=True)
            return {}

    async def drain(self) -> None:
        """Count everything buffered (tests; shutdown)."""
        if self._flushing is not None:
            await asyncio.gather(self._flushing, return_exceptions=True)
        await self.flush()


def _count_tokens(name: ModelName, usage: Mapping[str, Any]) -> None:
    for kind in ("input", "output"):
        count = usage.get(f"{kind}_tokens")
        if isinstance(count, int) and count > 0:
            LLM_TOKENS.labels(name.provider, name.model, kind).inc(count)


__all__ = [
    "METRICS_ENV",
    "METRICS_MODES",
    "LLM_TOKENS",
    "NODE_DURATION",
    "QUEUE_DEPTH",
    "QUEUE_WAIT",
    "REGISTRY",
    "RUNS_EXECUTING",
    "RUNS_FINISHED",
    "RUNS_PAUSED",
    "RUNS_STARTED",
    "RUN_DURATION",
    "SANDBOX_WORKERS",
    "TRIGGERS_FIRED",
    "ModelName",
    "RunFacts",
    "UNKNOWN_MODEL",
    "RunMetrics",
    "metrics_mode_from_env",
    "model_name",
    "models_of",
]
