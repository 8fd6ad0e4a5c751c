"""What a run hands back: `RunResult`, with one `NodeRun` per node that did anything.

These are the public records of `plait.run` / `resume` / `retry`; `to_dict()` is their JSON form
(the CLI's `--json`, the service's views). Statuses are the enums of `plait.engine.status`, which
are strings, so the JSON is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.engine.events import Event
from plait.engine.status import NodeStatus, RunStatus


@dataclass(slots=True)
class NodeRun:
    """The public per-node record of a run."""

    id: str
    status: NodeStatus = NodeStatus.PENDING
    output: Any = None
    error: str | None = None
    attempts: int = 0
    ports: tuple[str, ...] | None = None
    started_at: float | None = None
    duration_ms: float | None = None
    usage: dict[str, int] | None = None
    reused: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}


@dataclass(slots=True)
class RunResult:
    run_id: str
    status: RunStatus  # completed | failed | cancelled | waiting
    outputs: dict[str, Any]
    nodes: dict[str, NodeRun]
    events: list[Event]
    error: str | None = None
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0
    # The edge-LLM decisions of the run (DecisionLog, see plait.engine.policy_edge); empty for dataflow.
    decisions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def interrupt(self) -> dict[str, Any] | None:
        """The first pending interrupt (what a caller must answer to continue), if any."""
        return self.interrupts[0] if self.interrupts else None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "run_id": self.run_id,
            "status": self.status,
            "outputs": self.outputs,
            "error": self.error,
            "interrupts": self.interrupts,
            "usage": self.usage,
            "duration_ms": self.duration_ms,
            "nodes": {k: v.to_dict() for k, v in self.nodes.items()},
        }
        if self.decisions:
            out["decisions"] = self.decisions
        return out


__all__ = ["NodeRun", "RunResult"]
