"""Every MCP tool call is tracked (spec B89): a log line, a counter and a duration histogram.

    async with track("build_flow") as call:
        result = await ...
        call.failed = result.is_error        # a refused call counts as a failure, not an exception

The metrics live in plait's own registry (`plait.service.metrics.REGISTRY`, served at `/metrics`):

- `mcp_tool_invocations_total{tool, success}`: calls, by tool and whether they succeeded;
- `mcp_tool_duration_ms{tool}`: how long each call took, in milliseconds.

A published flow's own tool counts under `tool="flow"`: a label per flow would make a series per
flow (the metrics module keeps flow ids out of labels). The log line names the flow's tool.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from prometheus_client import Counter, Histogram

from plait.service.metrics import REGISTRY

log = logging.getLogger("plait.mcp")

FLOW_TOOL_LABEL = "flow"
_DURATION_BUCKETS_MS = (1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 120_000)

TOOL_INVOCATIONS = Counter(
    "mcp_tool_invocations",
    "MCP tool calls served by this process, by tool and success.",
    ["tool", "success"],
    registry=REGISTRY,
)
TOOL_DURATION_MS = Histogram(
    "mcp_tool_duration_ms",
    "Duration of MCP tool calls in milliseconds, by tool.",
    ["tool"],
    buckets=_DURATION_BUCKETS_MS,
    registry=REGISTRY,
)


@dataclass(slots=True)
class ToolCall:
    """One call being tracked; set `failed` (or `error_type`) when the result is an error."""

    tool: str
    label: str
    user_id: str | None
    failed: bool = False
    error_type: str | None = None


@asynccontextmanager
async def track(
    tool: str, *, label: str | None = None, user_id: str | None = None
) -> AsyncIterator[ToolCall]:
    """Count and time one tool call; an exception counts as a failure and is re-raised."""
    call = ToolCall(tool, label or tool, user_id)
    started = time.perf_counter()
    try:
        yield call
    except BaseException as exc:
        call.failed = True
        call.error_type = type(exc).__name__
        raise
    finally:
        ms = (time.perf_counter() - started) * 1000
        success = "false" if call.failed else "true"
        TOOL_INVOCATIONS.labels(tool=call.label, success=success).inc()
        TOOL_DURATION_MS.labels(tool=call.label).observe(ms)
        log.info(
            "mcp.tool name=%s user_id=%s success=%s duration_ms=%.1f error_type=%s",
            call.tool,
            call.user_id,
            success,
            ms,
            call.error_type,
        )


__all__ = ["FLOW_TOOL_LABEL", "TOOL_DURATION_MS", "TOOL_INVOCATIONS", "ToolCall", "track"]
