"""The assistant's own cost per turn, with the model and the sandbox taken out.

A server's services (SQLite in a temporary directory, the local admin, one flow) answer turns
through `AssistantService.stream`, the use case the SSE route wraps: the caller's flow is read
with their rights, their variables are read for the model keys, the turn is classified, routed,
streamed and recorded in the conversation memory. The model is the scripted provider (through the
operator's PLAIT_ASSISTANT_SCRIPT), timed call by call; component validation runs in the real
sandbox and is timed too. What is left is the assistant's overhead.

Scenarios, --turns each (after --warmup turns):
- `off_topic`: classify, refuse (one model call);
- `question`: classify, stream a 200-word answer token by token (two calls);
- `component`: classify, generate, validate in the sandbox, register (two calls, one validation).

Per scenario: `first_event_ms` (request to the first event; for `component` the first `progress`)
and `overhead_ms` (the turn minus model and sandbox time), p50 and p95. Target: overhead p50 <
20 ms in every scenario.

`toolkit`: the flow builder's tools on a 50-node working flow (no model involved), --tool-calls
calls each: searches (search_components, describe_component, get_field_value) and edits
(add_component, connect_components, configure_component, remove_component), p50 and p95 per
tool. Target: p50 < 5 ms for edits and searches.

    python bench/assistant.py            # summary
    python bench/assistant.py --json     # {"off_topic": {...}, "question": {...}, "component": {...},
                                         #  "toolkit": {tool: {"p50_ms", "p95_ms"}}, "target_met"}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from plait.assistant.events import Progress
from plait.llm.scripted import ScriptedProvider
from plait.sandbox.components import validate_component
from plait.service import Services, Settings
from plait.service.assistant import TurnInput

SUM = """\
from plait.sdk import Component, Input, Output


class SumNumbers(Component):
    display_name = "Sum numbers"
    description = "Adds two numbers."
    inputs = [Input("a", "number", "First number"), Input("b", "number", "Second number")]
    outputs = [Output("total", "number")]

    def run(self, a, b):
        return {"total": a + b}
"""
ANSWER = " ".join(f"word{i}" for i in range(200))
# Each turn has a session of its own, so each starts a fresh copy of the script: the first
# matching step classifies, the second answers (or writes the component).
SCRIPT = [
    {"match": "weather", "json": {"translation": "weather", "intent": "off_topic"}},
    {"match": "question", "json": {"translation": "question", "intent": "question"}},
    {"match": "question", "content": ANSWER},
    {"match": "component", "json": {"translation": "component", "intent": "generate_component"}},
    {"match": "component", "content": f"```python\n{SUM}```"},
]
FLOW = {
    "schema": "plait/flow@1",
    "id": "bench-canvas",
    "nodes": [
        {"id": "start", "type": "start"},
        {"id": "out", "type": "output", "config": {"value": "{{start}}"}},
    ],
    "edges": [{"source": "start", "target": "out"}],
}
MESSAGES = {
    "off_topic": "what is the weather",
    "question": "a question about flows",
    "component": "make a component",
}


class Timer:
    """Model and sandbox time of the current turn."""

    def __init__(self) -> None:
        self.outside = 0.0

    def reset(self) -> None:
        self.outside = 0.0


def timed_scripted(timer: Timer) -> type[ScriptedProvider]:
    class TimedScripted(ScriptedProvider):
        async def chat(self, request: Any, *, on_delta: Any = None) -> Any:
            start = time.perf_counter()
            try:
                return await super().chat(request, on_delta=on_delta)
            finally:
                # Streamed deltas are the assistant's work (tokens become events); the rest is the model's.
                self_time = time.perf_counter() - start
                timer.outside += self_time if on_delta is None else 0.0

    return TimedScripted


async def run(turns: int, warmup: int) -> dict[str, Any]:
    timer = Timer()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps(SCRIPT))
        os.environ["PLAIT_ASSISTANT_SCRIPT"] = str(script)
        settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp}/plait.db", require_auth=False)
        services = await Services.open(settings)
        try:
            who = await services.users.local_admin()
            await services.flows.create(FLOW, owner_id=who.user_id)
            assistant = services.assistant

            async def timed_validate(source: str) -> Any:
                start = time.perf_counter()
                try:
                    return await validate_component(source)
                finally:
                    timer.outside += time.perf_counter() - start

            assistant.assistant.validate = timed_validate
            import plait.assistant.models as models_module

            models_module.ScriptedProvider = timed_scripted(timer)  # type: ignore[attr-defined,misc]
            results: dict[str, Any] = {}
            for name, message in MESSAGES.items():
                first: list[float] = []
                overhead: list[float] = []
                for i in range(warmup + turns):
                    timer.reset()
                    body = TurnInput(
                        flow_id=FLOW["id"], input_value=message, session_id=f"{name}-{i}", provider="scripted"
                    )
                    start = time.perf_counter()
                    first_at = None
                    last = None
                    async for event in await assistant.stream(who, body):
                        if first_at is None and (name != "component" or isinstance(event, Progress)):
                            first_at = time.perf_counter()
                        last = event
                    total = time.perf_counter() - start
                    assert last is not None and last.kind == "complete", last
                    assert name != "component" or last.data["validated"], last.data
                    assert name != "question" or last.data["result"] == ANSWER, last.data
                    if i >= warmup:
                        first.append(((first_at or start) - start) * 1000)
                        overhead.append((total - timer.outside) * 1000)
                results[name] = {
                    "turns": turns,
                    "first_event_ms": {"p50": _pct(first, 50), "p95": _pct(first, 95)},
                    "overhead_ms": {"p50": _pct(overhead, 50), "p95": _pct(overhead, 95)},
                }
            results["target_met"] = all(r["overhead_ms"]["p50"] < 20 for r in results.values())
            return results
        finally:
            await services.close()


def fifty_node_flow() -> dict[str, Any]:
    """start -> 48 delay nodes in a chain -> output: a working flow of 50 nodes."""
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "start"}]
    edges = []
    previous = "start"
    for i in range(48):
        nodes.append({"id": f"wait{i}", "type": "delay", "config": {"seconds": 0}})
        edges.append({"source": previous, "target": f"wait{i}"})
        previous = f"wait{i}"
    nodes.append({"id": "out", "type": "output", "config": {"name": "done", "value": "ok"}})
    edges.append({"source": previous, "target": "out"})
    return {"schema": "plait/flow@1", "id": "fifty", "nodes": nodes, "edges": edges}


async def toolkit_bench(calls: int) -> dict[str, Any]:
    """Per-tool overhead of the flow builder's toolkit on a 50-node working flow."""
    from plait.assistant.catalog import RegistryCatalog
    from plait.assistant.toolkit import Toolkit
    from plait.assistant.working_flow import WorkingFlow

    catalog = RegistryCatalog()
    timings: dict[str, list[float]] = {}

    async def timed(toolkit: Toolkit, name: str, args: dict[str, Any]) -> dict[str, Any]:
        start = time.perf_counter()
        result = await toolkit.call(name, args)
        timings.setdefault(name, []).append((time.perf_counter() - start) * 1000)
        toolkit.drain()
        assert "error" not in result, (name, result)
        return result

    for i in range(calls):
        toolkit = Toolkit(WorkingFlow(fifty_node_flow(), catalog), catalog)  # a fresh request: cold cache
        await timed(toolkit, "search_components", {"query": "delay wait"})
        await timed(toolkit, "describe_component", {"component_type": "delay"})
        await timed(toolkit, "get_field_value", {"component_id": "wait7", "field_name": "seconds"})
        added = await timed(toolkit, "add_component", {"component_type": "delay"})
        new_id = added.get("component_id") or added.get("node", {}).get("id")
        await timed(
            toolkit,
            "connect_components",
            {"source_id": "wait47", "source_output": "out", "target_id": new_id, "target_input": "in"},
        )
        await timed(toolkit, "configure_component", {"component_id": new_id, "params": {"seconds": i % 3}})
        await timed(toolkit, "remove_component", {"component_id": new_id})
    return {name: {"p50_ms": _pct(v, 50), "p95_ms": _pct(v, 95)} for name, v in timings.items()}


def _pct(values: list[float], pct: int) -> float:
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[pct - 1], 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--tool-calls", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(run(args.turns, args.warmup))
    tools = asyncio.run(toolkit_bench(args.tool_calls))
    result["toolkit"] = tools
    result["target_met"] = result["target_met"] and all(t["p50_ms"] < 5 for t in tools.values())
    if args.json:
        print(json.dumps(result))
        return
    for name, r in result.items():
        if name in ("target_met", "toolkit"):
            continue
        print(
            f"{name:10s} first event p50 {r['first_event_ms']['p50']:7.2f} ms  p95 {r['first_event_ms']['p95']:7.2f} ms"
            f"   overhead p50 {r['overhead_ms']['p50']:7.2f} ms  p95 {r['overhead_ms']['p95']:7.2f} ms"
        )
    for tool, t in result["toolkit"].items():
        print(f"tool {tool:20s} p50 {t['p50_ms']:6.2f} ms  p95 {t['p95_ms']:6.2f} ms")
    print(
        "targets (turn overhead p50 < 20 ms, tool p50 < 5 ms):", "met" if result["target_met"] else "NOT met"
    )
    sys.exit(0 if result["target_met"] else 1)


if __name__ == "__main__":
    main()
