"""Sub-flow children as runs of their own: their ids, and which child a subflow node continues.

In a checkpointed run a subflow node's child is a run of its own, kept by the parent's
checkpointer: its record names its parent (`RunRecord.parent_run_id`), it saves its own node
deltas and events, and it ends with its own status, outputs and duration. So a crash in the middle
of a child costs only the child's node that was running: when the parent runs the subflow node
again (after a restore, or to answer a person the child waits for), it finds the same child and
continues it from its checkpoint.

For that the child's id is derived, not drawn: `child_run_id(parent, key, n)`, where `key` is the
subflow node's id with the keys of the loop iterations / map items it runs inside in front
(plait.engine.items: `loop1@2/sub`), and `n` counts the children that node started (a node that
runs again after its child failed starts the next one). `find_child` walks n = 1, 2, ... to the
last child stored:

- none: start child 1;
- running, queued or waiting: continue it;
- completed: when the node continues an execution cut short (`continuing`: the parent stopped after
  the child finished, before the node's own delta, or its loop iteration / map item, was saved;
  the node, or the loop/map node it runs in, was restored cut short), the child's outputs stand;
  otherwise the node runs again (a policy visits it a second time) and starts the next child;
- failed or cancelled: start the next one.

A run without a checkpointer, or a body run outside a loop iteration or map item, keeps its
children in memory as before (their state travels in the subflow node's interrupt).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from plait.engine.checkpoint import Checkpoint, Checkpointer
from plait.engine.status import RunStatus

# Child ids go into URLs (`/api/v1/runs/{id}`): only these characters, and not too long.
_URL_SAFE = re.compile(r"[A-Za-z0-9_.@~-]+")
MAX_CHILD_ID = 200
_OPEN = frozenset({RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.WAITING})


def child_run_id(parent_run_id: str, key: str, n: int = 1) -> str:
    """The id of the `n`th child run of the subflow node `key` of run `parent_run_id`:
    `<parent>.<key>` (`/` in item keys as `.`; node ids have no dots), `~n` after the first; a hash
    of the three when that is not URL-safe or too long."""
    tail = key.replace("/", ".")
    child = f"{parent_run_id}.{tail}" if n == 1 else f"{parent_run_id}.{tail}~{n}"
    if len(child) <= MAX_CHILD_ID and _URL_SAFE.fullmatch(child):
        return child
    digest = hashlib.sha256(f"{parent_run_id}\x00{key}\x00{n}".encode()).hexdigest()
    return f"sub-{digest[:40]}"


@dataclass(slots=True)
class FoundChild:
    """What `find_child` found: the id to use, the checkpoint to continue (None: a new child), and
    whether that checkpoint is a completed child whose outputs stand (`done`)."""

    run_id: str
    checkpoint: Checkpoint | None = None
    done: bool = False

    @property
    def outputs(self) -> dict[str, Any]:
        assert self.checkpoint is not None
        return dict(self.checkpoint.run.outputs or {})


def let_go(checkpointer: Checkpointer, run_id: str) -> None:
    """Tell a checkpointer that keeps per-run caches (the SQL one: live variables, the SQLite
    writer's active runs) that this process no longer executes `run_id`. Optional: the
    protocol's `finish` does it for a run that ends; this is for one loaded and left, or cut short."""
    forget = getattr(checkpointer, "forget", None)
    if callable(forget):
        forget(run_id)


async def find_child(
    checkpointer: Checkpointer, parent_run_id: str, key: str, *, continuing: bool
) -> FoundChild:
    """The child the subflow node `key` of `parent_run_id` runs now (see the module docstring)."""
    n, last = 1, None
    while True:
        run_id = child_run_id(parent_run_id, key, n)
        cp = await checkpointer.load(run_id, events=False)
        if cp is None:
            break
        if last is not None:
            let_go(checkpointer, last.run.run_id)
        last, n = cp, n + 1
    if last is None:
        return FoundChild(run_id)
    status = last.run.status
    if status in _OPEN:
        return FoundChild(last.run.run_id, last)
    let_go(checkpointer, last.run.run_id)
    if status == RunStatus.COMPLETED and continuing:
        return FoundChild(last.run.run_id, last, done=True)
    return FoundChild(run_id)


__all__ = ["MAX_CHILD_ID", "FoundChild", "child_run_id", "find_child", "let_go"]
