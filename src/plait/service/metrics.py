"""Prometheus metrics of a plait process (`GET /metrics`), fed from its run events.

The metrics live in one registry of their own (`REGISTRY`, not prometheus_client's global one), so
what `/metrics` shows is plait's and the process' (CPU, memory, open files), nothing a library
registered by accident. They are module-level: other parts of the service count into them by name
(the trigger scheduler: `TRIGGERS_FIRED.labels(kind="schedule").inc()`).

`RunMetrics` turns the events of the runs executing in this process into counts: the engine is not
asked for anything new, so its hot path does not change. Two facts are not in the events and are
looked up once per run through `RunFacts` (an async source the wiring supplies, see
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
from collections import OrderedDict
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

from plait.engine import events as ev
from plait.engine.events import Event
from plait.engine.status import TERMINAL_RUN_STATUSES
from plait.spec.models import FlowDocument, GraphSpec

log = logging.getLogger("plait.service.metrics")

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
    """What the events of a run do not say (the wiring reads the store)."""

    async def created_at(self, run_id: str) -> float | None:
        """When the run's row was created; None when it has none."""
        ...

    async def models(self, run_id: str) -> Mapping[str, ModelName]:
        """The provider and model each model-using node of the run names (`models_of`)."""
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
    """An event sink: counts what the run events of this process say. Cheap per event (a dict
    look-up and a counter); the facts of a run are read once, in the background, at its start and
    when a node reports token usage."""

    def __init__(self, facts: RunFacts | None = None) -> None:
        self.facts = facts
        self._node_types: dict[tuple[str, str], str] = {}  # (run, node) -> type, while it runs
        self._models: OrderedDict[str, asyncio.Future[Mapping[str, ModelName]]] = OrderedDict()
        self._pending: set[asyncio.Task[Any]] = set()
        self.sandbox_used = False

    def observe(self, event: Event) -> None:
        data = event.data
        if isinstance(data, ev.NodeStarted):
            if event.node_id is not None:
                self._node_types[(event.run_id, event.node_id)] = data.node_type
                if data.node_type in SANDBOX_NODE_TYPES:
                    self.sandbox_used = True
        elif isinstance(data, ev.NodeFinished):
            node_type = self._node_types.pop((event.run_id, event.node_id or ""), "unknown")
            if data.duration_ms is not None:
                outcome = "ok" if data.ok else "error"
                NODE_DURATION.labels(node_type, outcome).observe(data.duration_ms / 1000.0)
            if data.usage:
                self._count_tokens(event.run_id, (event.node_id or "").lower(), data.usage)
        elif isinstance(data, ev.Decision | ev.DecisionRejected):
            if data.usage:
                self._count_tokens(event.run_id, DECIDER, data.usage)
        elif isinstance(data, ev.RunStarted):
            RUNS_STARTED.inc()
            self._background(self._queue_wait(event.run_id, event.ts))
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
        for key in [k for k in self._node_types if k[0] == run_id]:
            del self._node_types[key]

    # ------------------------------------------------------------------ facts read in the background
    def _background(self, coro: Awaitable[None]) -> None:
        if self.facts is None:
            if asyncio.iscoroutine(coro):
                coro.close()
            return
        try:
            task = asyncio.ensure_future(coro)
        except RuntimeError:  # no running loop (a sink called from sync code): skip
            if asyncio.iscoroutine(coro):
                coro.close()
            return
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def models_for(self, run_id: str) -> asyncio.Future[Mapping[str, ModelName]]:
        """The models the run's nodes name, read once per run (the last few thousand runs are
        remembered); empty without facts or when they cannot be read."""
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
            return await self.facts.models(run_id)
        except Exception:  # noqa: BLE001 - a metric is not worth a failed run
            log.debug("cannot read the models of run %s", run_id, exc_info=True)
            return {}

    async def _queue_wait(self, run_id: str, started: float) -> None:
        assert self.facts is not None
        try:
            created = await self.facts.created_at(run_id)
        except Exception:  # noqa: BLE001
            log.debug("cannot read the creation time of run %s", run_id, exc_info=True)
            return
        if created is not None and started >= created:
            QUEUE_WAIT.observe(started - created)

    def _count_tokens(self, run_id: str, node: str, usage: Mapping[str, Any]) -> None:
        self._background(self._tokens(run_id, node, dict(usage)))

    async def _tokens(self, run_id: str, node: str, usage: dict[str, Any]) -> None:
        models = await self.models_for(run_id)
        name = model_name(models, node)
        for kind in ("input", "output"):
            count = usage.get(f"{kind}_tokens")
            if isinstance(count, int) and count > 0:
                LLM_TOKENS.labels(name.provider, name.model, kind).inc(count)

    async def drain(self) -> None:
        """Wait for the background reads (tests; shutdown)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)


__all__ = [
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
    "model_name",
    "models_of",
]
