"""A node's error handling (`on_error` in the flow document): what its failure becomes.

By default a node's failure (after its retries) fails the run. With `on_error.mode: default` the
node ends ok with `on_error.default` as its output and the run goes on as if it had produced it;
with `mode: route` it ends ok with `{"error": message}` and only its `error` output port fires
(the normal ports are pruned, so what follows them is skipped). Either way the message stays on
the node's record (`error`) for people to read, and the node's checkpoint holds the handled
outcome, so a restored run does not execute the node again.

Failures that are the run's, not the node's, are never handled: the run tree out of node
executions (`fatal`), cancellation, and a human task that expired.
"""

from __future__ import annotations

from plait.engine.invoke import NodeOutcome, OutcomeKind
from plait.engine.plan import PlanNode
from plait.spec.models import ERROR_PORT

ROUTED: tuple[str, ...] = (ERROR_PORT,)


def handled(pn: PlanNode, outcome: NodeOutcome) -> NodeOutcome:
    """The outcome after `pn`'s `on_error`: a failure turned into an ok result, or as it was."""
    on_error = pn.spec.on_error
    if outcome.kind is not OutcomeKind.ERROR or outcome.fatal or on_error is None or on_error.mode == "fail":
        return outcome
    message = outcome.error or "the node failed"
    if on_error.mode == "route":
        output, ports = {"error": message}, ROUTED
    else:
        output, ports = on_error.default, None
    return NodeOutcome(
        OutcomeKind.OK,
        output,
        ports,
        error=message,
        attempt=outcome.attempt,
        duration_ms=outcome.duration_ms,
    )


__all__ = ["ROUTED", "handled"]
