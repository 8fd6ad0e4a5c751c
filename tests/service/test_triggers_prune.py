"""Old trigger firings are pruned (TriggerService.prune_fires, the scheduler loop), in batches,
without giving up "exactly once": a trigger's newest firing stays (its tick's window may still be
open) and so does a firing whose run has not finished (the overlap policy looks for it).
SQLite, and PostgreSQL when PLAIT_TEST_POSTGRES_URL is set."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import func, select

import plait.service.triggers as triggers_module
from plait.service import Services, Settings
from plait.service.triggers import DAY_S
from plait.store.models import TriggerFire

T0 = 1_893_974_405.0  # 2030-01-07 10:00:05 UTC, 5 s past a minute


@pytest.fixture(autouse=True)
def _secret_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets a fresh PLAIT_SECRET_KEY, so none depends on the environment's."""
    monkeypatch.setenv("PLAIT_SECRET_KEY", Fernet.generate_key().decode())


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _flow(flow_id: str, *, waits: bool) -> dict[str, Any]:
    last: dict[str, Any] = (
        {"id": "ask", "type": "human", "config": {"fields": [{"name": "a"}]}}
        if waits
        else {"id": "out", "type": "output", "config": {"name": "n", "value": "1"}}
    )
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "nodes": [{"id": "start", "type": "start"}, last],
        "edges": [{"source": "start", "target": last["id"]}],
    }


async def _open(db_url: str, **settings: Any) -> Services:
    svc = await Services.open(Settings(database_url=db_url, api_key="k", **settings))
    await svc.triggers.close()  # the test drives the scheduler
    return svc


async def _fires(svc: Services, trigger_id: str) -> list[TriggerFire]:
    async with svc.store.sessionmaker() as session:
        rows = await session.execute(select(TriggerFire).where(TriggerFire.trigger_id == trigger_id))
        return list(rows.scalars().all())


async def test_prune_keeps_the_newest_firing_and_those_of_unfinished_runs(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(triggers_module, "PRUNE_BATCH", 40)  # several batches
    svc = await _open(db_url)
    try:
        clock = Clock(T0)
        svc.triggers.clock = clock
        for doc in (_flow("tick", waits=False), _flow("wait", waits=True)):
            await svc.flows.create(doc)
            await svc.flows.publish(doc["id"])
        tick = await svc.triggers.create("tick", "schedule", {"cron": "* * * * *", "overlap": "allow"})
        wait = await svc.triggers.create("wait", "schedule", {"cron": "* * * * *", "overlap": "allow"})
        fires = svc.store.trigger_fires
        for i in range(100):  # old deliveries of the same trigger
            assert await fires.claim(tick["id"], f"key:{i}", T0 - 2 * DAY_S + i) is not None
        waiting: list[str] = []
        for minute in (1, 2, 3):
            clock.now = T0 - 5 + 60 * minute + 1
            for run_id in await svc.triggers.tick():
                await svc.runs.wait(run_id, 10)
                row = await svc.store.runs.get(run_id)
                assert row is not None
                if row.trigger_id == wait["id"]:
                    waiting.append(run_id)
        assert len(waiting) == 3
        await svc.runs.cancel(waiting[1])  # finished: its firing may go (not the newest)
        newest = T0 - 5 + 180

        # Within the retention nothing goes.
        assert await svc.triggers.prune_fires(T0 + 20 * DAY_S) == 0
        assert len(await _fires(svc, tick["id"])) == 103

        deleted = await svc.triggers.prune_fires(T0 + 40 * DAY_S)
        assert deleted == 102 + 1
        kept = await _fires(svc, tick["id"])
        assert [(f.fire_key, f.fire_at) for f in kept] == [(f"at:{newest:.0f}", newest)]
        kept_wait = sorted(await _fires(svc, wait["id"]), key=lambda f: f.fire_at)
        assert [f.run_id for f in kept_wait] == [waiting[0], waiting[2]]  # unfinished; the newest

        # Exactly once still holds for the newest tick: a lagging scheduler's claim conflicts.
        assert await fires.claim(tick["id"], f"at:{newest:.0f}", newest) is None

        # Its run finished: the older firing of the wait trigger goes too, the newest stays.
        await svc.runs.cancel(waiting[0])
        assert await svc.triggers.prune_fires(T0 + 40 * DAY_S) == 1
        assert [f.run_id for f in await _fires(svc, wait["id"])] == [waiting[2]]
    finally:
        await svc.close()


async def test_retention_zero_keeps_everything_and_the_scheduler_loop_prunes(db_url: str) -> None:
    svc = await _open(db_url, trigger_fires_retention_days=0)
    try:
        await svc.flows.create(_flow("tick", waits=False))
        await svc.flows.publish("tick")
        trig = await svc.triggers.create("tick", "schedule", {"cron": "0 0 1 1 *"})
        old = time.time() - 40 * DAY_S
        for i in range(5):
            await svc.store.trigger_fires.claim(trig["id"], f"key:{i}", old + i)
        assert await svc.triggers.prune_fires() == 0
        assert len(await _fires(svc, trig["id"])) == 5
    finally:
        await svc.close()
    # A server with the default retention prunes when its scheduler starts.
    svc = await Services.open(Settings(database_url=db_url, api_key="k"))
    try:
        deadline = time.monotonic() + 10
        while len(await _fires(svc, trig["id"])) != 1:
            assert time.monotonic() < deadline, "the scheduler loop did not prune"
            await asyncio.sleep(0.1)
        async with svc.store.sessionmaker() as session:
            left = await session.execute(select(func.max(TriggerFire.fire_at)))
            assert left.scalar_one() == old + 4
    finally:
        await svc.close()
