"""The store's side of a queued run's hand-over and the round trips it saves: the queue's lease
taken over in one statement (`RunRepo.take_over`), and pooled PostgreSQL connections checked for
liveness without a ping per checkout (`plait.store.db.install_liveness_check`)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from plait.store import Store
from plait.store.db import PING_AFTER_IDLE_S


async def test_take_over_takes_the_queues_lease_and_returns_the_row(store: Store) -> None:
    runs = store.runs
    await runs.create("r1", "f1", inputs={"n": 1}, lease_owner="queue", lease_until=2000.0, now=1.0)
    row = await runs.take_over("r1", "w1", 30, from_owner="queue", now=1000.0)
    assert row is not None
    assert (row.id, row.status, row.inputs) == ("r1", "queued", {"n": 1})
    assert (row.lease_owner, row.lease_until) == ("w1", 1030.0)
    stored = await runs.get("r1")
    assert (stored.lease_owner, stored.lease_until) == ("w1", 1030.0)
    # Held by w1 now: another worker (a second delivery) does not get it, w1 again does.
    assert await runs.take_over("r1", "w2", 30, from_owner="queue", now=1001.0) is None
    assert (await runs.take_over("r1", "w1", 30, from_owner="queue", now=1001.0)).lease_until == 1031.0
    # Expired: as acquire_lease, anyone takes it.
    assert (await runs.take_over("r1", "w2", 30, from_owner="queue", now=1100.0)).lease_owner == "w2"


async def test_take_over_leaves_ended_and_unknown_runs_alone(store: Store) -> None:
    runs = store.runs
    await runs.create("done", "f1", status="completed", lease_owner="queue", lease_until=2000.0)
    assert await runs.take_over("done", "w1", 30, from_owner="queue", now=1000.0) is None
    assert (await runs.get("done")).lease_owner == "queue"
    assert await runs.take_over("nope", "w1", 30, from_owner="queue") is None


async def test_take_over_is_atomic(store: Store) -> None:
    await store.runs.create("r1", "f1", lease_owner="queue", lease_until=9e12)
    taken = await asyncio.gather(
        *(store.runs.take_over("r1", f"w{i}", 30, from_owner="queue") for i in range(10))
    )
    assert sum(row is not None for row in taken) == 1


async def test_a_closed_postgresql_connection_is_replaced_without_a_ping(
    store: Store, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend != "postgresql":
        pytest.skip("the liveness check is PostgreSQL's")
    engine = store.engine
    async with engine.connect() as admin:
        async with engine.connect() as conn:
            pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        # The server ends that pooled connection (as a restart would): the next checkouts get
        # another one instead of failing.
        await admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        await admin.commit()
    await asyncio.sleep(0.2)  # the client reads the end of the connection
    for _ in range(3):
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
    # A connection unused for a while is pinged; a busy one is not.
    pings: list[object] = []
    ping = engine.dialect.do_ping
    monkeypatch.setattr(engine.dialect, "do_ping", lambda c: pings.append(c) or ping(c))
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
    assert pings == []
    monkeypatch.setattr("plait.store.db.PING_AFTER_IDLE_S", 0.0)
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
    assert len(pings) == 1
    assert PING_AFTER_IDLE_S > 0
