"""The statuses of runs and nodes: one definition, string-valued so the wire and the database are
unchanged (`RunStatus.COMPLETED == "completed"`, and it serialises as `"completed"`).

A run goes `queued -> running -> (waiting <-> running) -> completed | failed | cancelled`; a node
`pending -> running -> ok | error | skipped | waiting | cancelled` (a waiting node, once answered,
is `pending` again until it runs).
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Whether the run has ended for good (nothing resumes it)."""
        return self in TERMINAL_RUN_STATUSES


class NodeStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"
    WAITING = "waiting"
    CANCELLED = "cancelled"
    # A checkpoint delta only: the answer to a waiting node was delivered (`NodeDelta.status`).
    RESUMED = "resumed"


class TaskStatus(StrEnum):
    """A person's task (a waiting node's interrupt, as the server keeps it): `pending` until it is
    answered (`submitted`), times out (`expired`) or its run ends first (`cancelled`)."""

    PENDING = "pending"
    SUBMITTED = "submitted"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


TERMINAL_RUN_STATUSES: frozenset[RunStatus] = frozenset(
    {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED}
)
# The statuses a run can end an execution with (waiting included: the run is parked, not over).
RESULT_STATUSES: frozenset[RunStatus] = TERMINAL_RUN_STATUSES | {RunStatus.WAITING}

__all__ = ["RESULT_STATUSES", "TERMINAL_RUN_STATUSES", "NodeStatus", "RunStatus", "TaskStatus"]
