"""What two of the toolkit's tools need from outside the assistant layer, as protocols.

`generate_component` runs part 1's generation pipeline (with the turn's model and budgets, and
the service's component registry), and `run_flow` runs the working flow through the normal run
service (persisted, listed in the run history, streamed to the canvas). Both live above this
layer, so the agent loop's owner passes implementations in; unit tests pass fakes.
"""

from __future__ import annotations

from typing import Any, Protocol, TypedDict


class GeneratedComponent(TypedDict, total=False):
    """What `ComponentGenerator.generate` returns.

    `validated` and `attempts` always; on success `class_name`, `source` (the code) and `spec`
    (the validation spec: inputs, outputs, display_name, description), which the toolkit adds to
    its catalog so the next `search_components` lists the new component; on failure `error`."""

    validated: bool
    attempts: int
    class_name: str | None
    source: str | None
    spec: dict[str, Any]
    registered: bool
    error: str | None


class ComponentGenerator(Protocol):
    async def generate(self, description: str) -> GeneratedComponent:
        """Generate, validate (with retries) and register a component for the user and session,
        inheriting the turn's model, attempt and step budgets. Provider errors propagate (the turn
        reports them); a component that never validates is a result with `validated: False`."""
        ...


class RunOutcome(TypedDict, total=False):
    """What `FlowRunner.run` returns: `status` ("succeeded", "failed", "waiting", "cancelled"...),
    `result` (the run's outputs), `error` (a message a person can act on, for a failed run),
    `run_id`, and the metrics `duration_seconds`, `input_tokens`, `output_tokens`, `total_tokens`
    (summed over the run's nodes; nodes without usage add 0)."""

    status: str
    result: Any
    error: str | None
    run_id: str | None
    duration_seconds: float
    input_tokens: int
    output_tokens: int
    total_tokens: int


class FlowRunner(Protocol):
    async def run(self, flow: dict[str, Any], inputs: dict[str, Any]) -> RunOutcome:
        """Run `flow` (the working flow, already validated and scanned) with `inputs` as a real
        run of the user's flow, and wait for it to end. A failed run is an outcome with
        `status: "failed"` and `error`; infrastructure errors propagate."""
        ...


__all__ = ["ComponentGenerator", "FlowRunner", "GeneratedComponent", "RunOutcome"]
