"""`QueuedRun`: one queue message, a plain JSON object so that any worker version can read it.

The message names the run and what to do with it; everything else (the flow, the inputs, the
owner) is read from the run's row by the worker, the database being the source of truth. A
human-task answer travels in the message (`data`) because it is not stored on the run's row.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from plait.errors import PlaitError

# The lease owner a run has between being queued and being taken by a worker: crash recovery
# leaves a run alone while its lease is held, so a queued run is the queue's (a worker takes the
# lease over from this name). The lease lasts QUEUE_HOLD_S; past it, a worker's recovery starts
# the run (a lost message does not lose the run).
QUEUE_OWNER = "plait-queue"
QUEUE_HOLD_S = 600.0

Kind = Literal["start", "resume", "retry"]
KINDS: tuple[str, ...] = ("start", "resume", "retry")


class BadMessage(PlaitError, ValueError):
    """A queue message that is not a QueuedRun."""


@dataclass(frozen=True, slots=True)
class QueuedRun:
    """Start the run `run_id` (its row holds the inputs), resume it (answering `node_id` with
    `data`, or just continuing), or execute it as a retry of `source_run_id` from `from_node`."""

    run_id: str
    kind: Kind
    data: Any = None
    node_id: str | None = None
    source_run_id: str | None = None
    from_node: str | None = None
    queued_at: float | None = None  # time.time() when sent (queue-to-start latency)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Any) -> QueuedRun:
        if not isinstance(raw, dict) or not isinstance(raw.get("run_id"), str):
            raise BadMessage(f"not a queued run: {raw!r:.200}")
        kind = raw.get("kind")
        if kind not in KINDS:
            raise BadMessage(f"unknown queued run kind {kind!r}")
        return cls(
            run_id=raw["run_id"],
            kind=kind,
            data=raw.get("data"),
            node_id=raw.get("node_id"),
            source_run_id=raw.get("source_run_id"),
            from_node=raw.get("from_node"),
            queued_at=raw.get("queued_at"),
        )


__all__ = ["KINDS", "QUEUE_HOLD_S", "QUEUE_OWNER", "BadMessage", "Kind", "QueuedRun"]
