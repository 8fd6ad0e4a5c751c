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

    python bench/assistant.py            # summary
    python bench/assistant.py --json     # {"off_topic": {...}, "question": {...}, "component": {...}}
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


def _pct(values: list[float], pct: int) -> float:
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[pct - 1], 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(run(args.turns, args.warmup))
    if args.json:
        print(json.dumps(result))
        return
    for name, r in result.items():
        if name == "target_met":
            continue
        print(
            f"{name:10s} first event p50 {r['first_event_ms']['p50']:7.2f} ms  p95 {r['first_event_ms']['p95']:7.2f} ms"
            f"   overhead p50 {r['overhead_ms']['p50']:7.2f} ms  p95 {r['overhead_ms']['p95']:7.2f} ms"
        )
    print("target (overhead p50 < 20 ms):", "met" if result["target_met"] else "NOT met")
    sys.exit(0 if result["target_met"] else 1)


if __name__ == "__main__":
    main()
