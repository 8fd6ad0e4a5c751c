"""What the checkpointer tests write and count: a token event, and a run's stored rows."""

from __future__ import annotations

import time

from sqlalchemy import func, select

from plait.engine.events import Event
from plait.store import Store
from plait.store.models import NodeRunRow, RunEvent


def token_event(run_id: str, seq: int, node: str | None = None) -> Event:
    """A `node_token` event with sequence number `seq`."""
    return Event(seq, "node_token", run_id, time.time(), node, {"delta": str(seq)})


async def stored_counts(store: Store, run_id: str) -> tuple[int, int]:
    """(node_runs rows, events) stored for the run."""
    async with store.sessionmaker() as session:
        nodes = await session.scalar(select(func.count()).where(NodeRunRow.run_id == run_id))
        events = await session.scalar(select(func.count()).where(RunEvent.run_id == run_id))
    return int(nodes or 0), int(events or 0)
