"""A process with a cap on the runs it executes at once (`Settings.max_active_runs`, what
`plait worker --concurrency N` sets): the runs its crash recovery takes count against the cap
(recovery takes only as many as there are free slots, the rest later), and runs past the cap wait
for a slot, so no more than N execute at once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from plait.engine import events as ev
from plait.engine.status import RunStatus
from plait.service import Services, Settings

CAP = 2


def _flow() -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "slow",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "pause", "type": "delay", "config": {"seconds": 0.4}},
            {"id": "out", "type": "output", "config": {"value": "done"}},
        ],
        "edges": [{"source": "start", "target": "pause"}, {"source": "pause", "target": "out"}],
    }


def _settings(url: str, **more: Any) -> Settings:
    return Settings(database_url=url, api_key="k", lease_ttl_s=1.0, sweep_interval_s=0.05, **more)


async def _most_at_once(svc: Services, run_ids: list[str], since: float) -> int:
    """The most `pause` nodes that ran at the same time (from their events after `since`)."""
    marks: list[tuple[float, int]] = []
    for run_id in run_ids:
        for e in await svc.runs.events_after(run_id, 0):
            if e.node_id == "pause" and e.ts >= since:
                if e.type == ev.NODE_STARTED:
                    marks.append((e.ts, 1))
                elif e.type == ev.NODE_FINISHED:
                    marks.append((e.ts, -1))
    most = now = 0
    for _, step in sorted(marks):
        now += step
        most = max(most, now)
    return most


async def _all_completed(svc: Services, run_ids: list[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        rows = [await svc.store.runs.get(r) for r in run_ids]
        if all(row is not None and row.status == RunStatus.COMPLETED for row in rows):
            return
        assert time.monotonic() < deadline, [row.status if row else None for row in rows]
        await asyncio.sleep(0.05)


async def test_recovery_takes_only_free_slots_and_the_rest_later(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/cap.db"
    crashed = await Services.open(_settings(url))
    await crashed.flows.create(_flow())
    await crashed.flows.publish("slow")
    run_ids = [(await crashed.runs.start("slow", {}))[0] for _ in range(5)]
    await asyncio.sleep(0.1)  # all five in `pause`
    await crashed.close()  # interrupted: running, no lease (what a dead worker leaves, sooner)

    since = time.time()
    capped = await Services.open(_settings(url, max_active_runs=CAP))  # recovers at start
    try:
        assert len(capped.runs.active) == CAP  # the others wait in the database for a slot
        await _all_completed(capped, run_ids)
        assert await _most_at_once(capped, run_ids, since) == CAP
    finally:
        await capped.close()


async def test_runs_past_the_cap_wait_for_a_slot(tmp_path: Path) -> None:
    capped = await Services.open(_settings(f"sqlite+aiosqlite:///{tmp_path}/cap.db", max_active_runs=CAP))
    try:
        await capped.flows.create(_flow())
        await capped.flows.publish("slow")
        since = time.time()
        run_ids = [(await capped.runs.start("slow", {}))[0] for _ in range(4)]
        await _all_completed(capped, run_ids)
        assert await _most_at_once(capped, run_ids, since) == CAP
    finally:
        await capped.close()
