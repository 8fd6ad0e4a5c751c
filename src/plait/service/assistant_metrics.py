"""Prometheus counters of the assistant (spec B90, B92), in plait's registry (`GET /metrics`).

`AssistantMetrics` is the `plait.assistant.ports.Telemetry` the server gives the assistant, plus
the counts only the service sees (session resets, refused component registrations). Labels are
bounded: intents, phases, providers (the preset names), outcomes and refusal reasons.
"""

from __future__ import annotations

from typing import Literal

from prometheus_client import Counter, Histogram

from plait.service.metrics import REGISTRY

_SECONDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

REQUESTS = Counter("assistant_requests", "Assistant turns started.", registry=REGISTRY)
REQUESTS_BY_INTENT = Counter(
    "assistant_requests_by_intent", "Assistant turns by classified intent.", ["intent"], registry=REGISTRY
)
PROVIDER_USAGE = Counter(
    "assistant_provider_usage", "Assistant turns by model provider.", ["provider"], registry=REGISTRY
)
TOKENS = Counter(
    "assistant_tokens",
    "Model tokens the assistant used, by phase (intent, main) and direction (input, output).",
    ["phase", "provider", "direction"],
    registry=REGISTRY,
)
DURATION = Histogram(
    "assistant_generation_duration_seconds",
    "Duration of assistant turns, request to the last event.",
    buckets=_SECONDS,
    registry=REGISTRY,
)
VALIDATION_ATTEMPTS = Histogram(
    "assistant_validation_attempts",
    "Attempts a component generation took.",
    buckets=(1, 2, 3, 4, 5, 10),
    registry=REGISTRY,
)
VALIDATIONS = Counter(
    "assistant_validations",
    "Component generations by result (validated true/false): the success rate is their ratio.",
    ["validated"],
    registry=REGISTRY,
)
ERRORS = Counter("assistant_errors", "Assistant turns that ended in an error.", registry=REGISTRY)
CANCELLATIONS = Counter(
    "assistant_cancellations", "Assistant turns stopped or disconnected by the client.", registry=REGISTRY
)
COMPONENTS_REFUSED = Counter(
    "assistant_user_component_register_refused",
    "Validated components the assistant did not register, by reason.",
    ["reason"],
    registry=REGISTRY,
)
FLOW_UPDATES = Counter(
    "assistant_flow_update_events",
    "flow_update events sent to clients, by action.",
    ["action"],
    registry=REGISTRY,
)
PROPOSALS_READY = Counter(
    "assistant_flow_proposal_ready", "Whole-flow proposals shown for review.", registry=REGISTRY
)
ORPHAN_REJECTIONS = Counter(
    "assistant_flow_orphan_rejection", "build_flow specs refused for nodes without edges.", registry=REGISTRY
)
TOOL_FAILURES = Counter(
    "assistant_flow_tool_failures",
    "Flow-builder tool calls that returned an error, by tool.",
    ["tool"],
    registry=REGISTRY,
)
SESSION_RESETS = Counter("assistant_session_reset", "Assistant session resets.", registry=REGISTRY)
RESET_COMPONENTS = Counter(
    "assistant_session_reset_components_cleared",
    "Assistant-registered components removed by session resets.",
    registry=REGISTRY,
)


class AssistantMetrics:
    """The server's `Telemetry` for the assistant (see the module docstring)."""

    def request(self, intent: str, provider: str) -> None:
        REQUESTS.inc()
        REQUESTS_BY_INTENT.labels(intent=intent).inc()
        PROVIDER_USAGE.labels(provider=provider).inc()

    def tokens(self, phase: str, provider: str, input_tokens: int, output_tokens: int) -> None:
        TOKENS.labels(phase=phase, provider=provider, direction="input").inc(input_tokens)
        TOKENS.labels(phase=phase, provider=provider, direction="output").inc(output_tokens)

    def attempts(self, count: int, validated: bool) -> None:
        VALIDATION_ATTEMPTS.observe(count)
        VALIDATIONS.labels(validated=str(validated).lower()).inc()

    def finished(self, outcome: Literal["complete", "error", "cancelled"], seconds: float) -> None:
        DURATION.observe(seconds)
        if outcome == "error":
            ERRORS.inc()
        elif outcome == "cancelled":
            CANCELLATIONS.inc()

    def flow_builder(self, what: str, action: str = "") -> None:
        if what == "update":
            FLOW_UPDATES.labels(action=action).inc()
        elif what == "proposal_ready":
            PROPOSALS_READY.inc()
        elif what == "orphan_rejection":
            ORPHAN_REJECTIONS.inc()
        elif what == "tool_failed":
            TOOL_FAILURES.labels(tool=action).inc()

    def component_refused(self, reason: str) -> None:
        COMPONENTS_REFUSED.labels(reason=reason).inc()

    def session_reset(self, components_cleared: int) -> None:
        SESSION_RESETS.inc()
        RESET_COMPONENTS.inc(components_cleared)
