"""Run events: small immutable records, built once and handed to every sink."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

RUN_STARTED = "run_started"
NODE_STARTED = "node_started"
NODE_TOKEN = "node_token"
NODE_TOOL_CALL = "node_tool_call"
NODE_RETRYING = "node_retrying"
NODE_FINISHED = "node_finished"
NODE_SKIPPED = "node_skipped"
EDGE_FIRED = "edge_fired"
DECISION = "decision"
DECISION_REJECTED = "decision_rejected"  # edge-LLM: both replies of a step were invalid
WAITING = "waiting"
RUN_FINISHED = "run_finished"
ERROR = "error"


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    type: str
    run_id: str
    ts: float
    node_id: str | None = None
    data: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form (SSE data, the flow channel): the envelope, then the data's fields (which
        never replace the envelope's `seq`, `type`, `run_id`, `ts`, `node_id`)."""
        out: dict[str, Any] = {"seq": self.seq, "type": self.type, "run_id": self.run_id, "ts": self.ts}
        if self.node_id is not None:
            out["node_id"] = self.node_id
        if self.data:
            for key, value in self.data.items():
                out.setdefault(key, value)
        return out


EventSink = Callable[[Event], Any]
