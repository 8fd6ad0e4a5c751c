"""How the assistant runs a flow: a real run through the run service.

The flow-builder's `run_flow` tool runs the *working flow*: the document the assistant is
changing, which the user may not have applied to the canvas yet. It runs as a draft run of the
canvas's flow, so it is persisted, listed in the flow's run history and streamed to the canvas
like any run. It acts as the user who asked, reading their variables and none of another
user's. The tool gets the outcome with the run's metrics (spec B58): the duration from start to
finish and the tokens summed over every model call of the run.

A run that takes longer than the assistant waits (`timeout_s`) goes on: the tool answers with
its id and status, and the canvas keeps showing it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from plait.assistant.tool_ports import RunOutcome
from plait.service.errors import ServiceError
from plait.service.runs import RunService

DEFAULT_RUN_TIMEOUT_S = 120.0


class AssistantFlowRunner:
    """A `FlowRunner` bound to one request: the flow on the canvas and the user who asked."""

    def __init__(
        self,
        runs: RunService,
        *,
        flow_id: str,
        owner_id: str | None,
        timeout_s: float = DEFAULT_RUN_TIMEOUT_S,
        on_started: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.runs = runs
        self.flow_id = flow_id
        self.owner_id = owner_id
        self.timeout_s = timeout_s
        self.run_ids: list[str] = []  # every run this request started, in order
        self.on_started = on_started  # tells the client the run's id, so the canvas follows it

    async def run(self, flow: dict[str, Any], inputs: dict[str, Any]) -> RunOutcome:
        return cast(RunOutcome, await self._run(flow, inputs))

    async def _run(self, flow: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            run_id, _task = await self.runs.start_document(self.flow_id, flow, inputs, owner_id=self.owner_id)
        except ServiceError as exc:  # an invalid flow or inputs: what to fix, for the agent
            problems = (exc.details or {}).get("problems") if isinstance(exc.details, dict) else None
            refused: dict[str, Any] = {"status": "not_started", "error": exc.message}
            if problems:
                refused["problems"] = problems
            return refused
        self.run_ids.append(run_id)
        if self.on_started is not None:
            await self.on_started(run_id)
        try:
            await self.runs.wait(run_id, timeout=self.timeout_s)
        except TimeoutError:
            return {
                "run_id": run_id,
                "status": "running",
                "error": f"the run is still going after {self.timeout_s:.0f} s; it continues on the canvas",
                "duration_seconds": round(time.perf_counter() - started, 4),
                "input_tokens": 0,
                "output_tokens": 0,
                "total_tokens": 0,
            }
        view = await self.runs.result_view(run_id)
        usage = view.get("usage") or {}
        tokens_in = int(usage.get("input_tokens") or 0)
        tokens_out = int(usage.get("output_tokens") or 0)
        out: dict[str, Any] = {
            "run_id": run_id,
            "status": view["status"],
            "result": view.get("outputs") or {},
            "duration_seconds": round(time.perf_counter() - started, 4),
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "total_tokens": int(usage.get("total_tokens") or tokens_in + tokens_out),
        }
        if view.get("error"):
            out["error"] = view["error"]
        if view.get("tasks"):
            out["tasks"] = view["tasks"]  # the run waits for a person (a human node)
        return out
