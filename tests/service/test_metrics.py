"""RunMetrics as an event sink: what each event counts, the batched facts, the model names."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping

from plait.engine import events as ev
from plait.engine.events import Event
from plait.engine.status import RunStatus
from plait.service.metrics import (
    DECIDER,
    REGISTRY,
    UNKNOWN_MODEL,
    ModelName,
    RunMetrics,
    model_name,
    models_of,
)
from plait.spec.models import FlowDocument

USAGE = {"input_tokens": 2, "output_tokens": 3, "total_tokens": 5}


class FakeFacts:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    async def created_at(self, run_ids: Collection[str]) -> dict[str, float]:
        self.calls.append(("created_at", sorted(run_ids)))
        return {run_id: 100.0 for run_id in run_ids if run_id != "ghost"}

    async def models(self, run_ids: Collection[str]) -> dict[str, Mapping[str, ModelName]]:
        self.calls.append(("models", sorted(run_ids)))
        return {run_id: {"ask": ModelName("openai", "gpt-x")} for run_id in run_ids}


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def run_events(run_id: str) -> list[Event]:
    return [
        Event(1, ev.RUN_STARTED, run_id, 100.5, None, ev.RunStarted("f", {})),
        Event(2, ev.NODE_STARTED, run_id, 100.6, "ask", ev.NodeStarted("llm-test")),
        Event(
            3,
            ev.NODE_FINISHED,
            run_id,
            100.7,
            "ask",
            ev.NodeFinished(True, "x", duration_ms=100.0, usage=USAGE),
        ),
        Event(4, ev.RUN_FINISHED, run_id, 100.8, None, ev.RunFinished(RunStatus.COMPLETED, {}, USAGE, 300.0)),
    ]


async def test_events_count_and_facts_are_read_in_one_batch() -> None:
    facts = FakeFacts()
    metrics = RunMetrics(facts)
    tokens = {"provider": "openai", "model": "gpt-x"}
    before = (
        sample("plait_queue_wait_seconds_count"),
        sample("plait_llm_tokens_total", kind="input", **tokens),
        sample("plait_node_duration_seconds_count", type="llm-test", outcome="ok"),
        sample("plait_runs_finished_total", status="completed"),
    )
    for run_id in ("r1", "r2", "ghost"):
        for event in run_events(run_id):
            metrics.observe(event)
    assert facts.calls == []  # nothing read per run
    await metrics.flush()
    assert facts.calls == [("created_at", ["ghost", "r1", "r2"]), ("models", ["ghost", "r1", "r2"])]
    after = (
        sample("plait_queue_wait_seconds_count"),
        sample("plait_llm_tokens_total", kind="input", **tokens),
        sample("plait_node_duration_seconds_count", type="llm-test", outcome="ok"),
        sample("plait_runs_finished_total", status="completed"),
    )
    # ghost has no row: no queue wait for it; its tokens still count.
    assert [a - b for a, b in zip(after, before, strict=True)] == [2, 6, 3, 3]


async def test_a_full_buffer_flushes_in_the_background() -> None:
    facts = FakeFacts()
    metrics = RunMetrics(facts)
    metrics.FLUSH_AT = 2
    metrics.observe(run_events("b1")[0])
    assert facts.calls == []
    metrics.observe(run_events("b2")[0])
    await asyncio.sleep(0)
    await metrics.drain()
    assert facts.calls == [("created_at", ["b1", "b2"])]


def test_without_facts_tokens_are_unknown() -> None:
    metrics = RunMetrics()
    before = sample("plait_llm_tokens_total", kind="output", provider="unknown", model="unknown")
    for event in run_events("n1"):
        metrics.observe(event)
    after = sample("plait_llm_tokens_total", kind="output", provider="unknown", model="unknown")
    assert after - before == 3


def test_models_of_a_document_with_bodies_and_a_decider() -> None:
    doc = FlowDocument.model_validate(
        {
            "schema": "plait/flow@1",
            "id": "m",
            "settings": {"policy": "edge_llm", "decider": {"provider": "scripted", "script": []}},
            "nodes": [
                {"id": "Ask", "type": "llm", "config": {"provider": "anthropic", "model": "claude-x"}},
                {"id": "plain", "type": "llm", "config": {"prompt": "hi", "model": "gpt-y"}},
                {
                    "id": "each",
                    "type": "map",
                    "config": {
                        "items": [],
                        "body": {
                            "nodes": [{"id": "inner", "type": "llm", "config": {"provider": "scripted"}}]
                        },
                    },
                },
                {"id": "wait", "type": "delay", "config": {"seconds": 0}},
            ],
        }
    )
    models = models_of(doc)
    assert models["ask"] == ModelName("anthropic", "claude-x")
    assert models["plain"] == ModelName("openai", "gpt-y")  # the default provider
    assert models["inner"] == ModelName("scripted", "scripted")
    assert models[DECIDER] == ModelName("scripted", "scripted")
    assert "wait" not in models
    assert model_name(models, "each/inner") == ModelName("scripted", "scripted")
    assert model_name(models, "nobody") == UNKNOWN_MODEL
