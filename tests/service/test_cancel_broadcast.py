"""The cancel broadcast (service.runs.broadcast): which one start-up picks, and that a request
published by one server is heard by another's listener, on PostgreSQL (NOTIFY, with the flag in
the same transaction) and on Redis (pub/sub), also after the listener's connection was cut. Two
services sharing a SQLite file find each other's requests by polling the flags."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from plait.service import Services, Settings
from plait.service.runs import RunCancels
from plait.service.runs.broadcast import (
    Backoff,
    PollingBroadcast,
    PostgresBroadcast,
    RedisBroadcast,
    asyncpg_dsn,
    choose_broadcast,
)
from plait.store import Store
from redis_fixture import RedisServer, redis_server_binary
from scratch_db import admin_sql, needs_pg, scratch_database


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A PostgreSQL database of this test's own (created on PLAIT_TEST_POSTGRES_URL's server)."""
    async with scratch_database("plait_cancel") as url:
        yield url


class Heard:
    """A listener's callbacks: the run ids it heard and how many times it (re)connected."""

    def __init__(self) -> None:
        self.ids: asyncio.Queue[str] = asyncio.Queue()
        self.connected = 0
        self.connected_event = asyncio.Event()

    def on_cancel(self, run_id: str) -> None:
        self.ids.put_nowait(run_id)

    async def on_gap(self) -> None:
        self.connected += 1
        self.connected_event.set()

    async def wait_connected(self, times: int = 1, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while self.connected < times:
            assert time.monotonic() < deadline, f"connected {self.connected} times, not {times}"
            self.connected_event.clear()
            try:
                await asyncio.wait_for(self.connected_event.wait(), 0.2)
            except TimeoutError:
                pass


async def test_choice_at_start_up(tmp_path: Path) -> None:
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path}/p.db")
    try:
        assert isinstance(choose_broadcast(store, None), PollingBroadcast)
        redis = choose_broadcast(store, "redis://127.0.0.1:1/0")
        assert isinstance(redis, RedisBroadcast)
        await redis.close()
    finally:
        await store.close()


def test_asyncpg_dsn_drops_the_driver_name() -> None:
    assert asyncpg_dsn("postgresql+asyncpg://u:p%40ss@h:5/db") == "postgresql://u:p%40ss@h:5/db"


async def test_backoff_doubles_up_to_its_ceiling() -> None:
    b = Backoff(first=0.001, most=0.004)
    delays = []
    for _ in range(4):
        delays.append(b.next)
        await b.wait()
    assert delays == [0.001, 0.002, 0.004, 0.004]
    b.reset()
    assert b.next == 0.001


@needs_pg
async def test_postgres_notify_reaches_another_listener_with_the_flag_set(pg_url: str) -> None:
    publisher_store = await Store.open(pg_url)
    listener_store = await Store.open(pg_url)
    heard = Heard()
    publisher = choose_broadcast(publisher_store, None)
    listener = choose_broadcast(listener_store, None)
    assert isinstance(publisher, PostgresBroadcast) and isinstance(listener, PostgresBroadcast)
    task = asyncio.create_task(listener.listen(heard.on_cancel, heard.on_gap))
    try:
        await heard.wait_connected()
        run_id = await _insert_run(publisher_store)
        await publisher.publish(run_id)
        assert await asyncio.wait_for(heard.ids.get(), 5) == run_id
        # The flag was committed with the notification: the listener can read it at once.
        assert await listener_store.runs.is_cancel_requested(run_id)

        # The listening connection is cut: the listener reconnects and hears the next one.
        await admin_sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE query LIKE 'LISTEN%' AND datname = '{make_url(pg_url).database}'"
        )
        await heard.wait_connected(2)
        second = await _insert_run(publisher_store)
        await publisher.publish(second)
        assert await asyncio.wait_for(heard.ids.get(), 5) == second
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await listener.close()
        await publisher.close()
        await listener_store.close()
        await publisher_store.close()


async def test_redis_publish_reaches_a_listener_and_survives_a_restart(tmp_path: Path) -> None:
    redis_server_binary()
    server = RedisServer(tmp_path).start()
    store = await Store.open(f"sqlite+aiosqlite:///{tmp_path}/p.db")
    heard = Heard()
    publisher = choose_broadcast(store, server.url)
    listener = RedisBroadcast(store, server.url)
    task = asyncio.create_task(listener.listen(heard.on_cancel, heard.on_gap))
    try:
        await heard.wait_connected()
        run_id = await _insert_run(store)
        await publisher.publish(run_id)
        assert await asyncio.wait_for(heard.ids.get(), 5) == run_id
        assert await store.runs.is_cancel_requested(run_id)

        server.stop()
        # Redis is down: the flag is still written (the lease keeper delivers it), no error.
        down = await _insert_run(store)
        await publisher.publish(down)
        assert await store.runs.is_cancel_requested(down)
        server.start()
        await heard.wait_connected(2, timeout=15)
        again = await _insert_run(store)
        await publisher.publish(again)
        assert await asyncio.wait_for(heard.ids.get(), 5) == again
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await listener.close()
        await publisher.close()
        await store.close()
        server.stop()


async def _insert_run(store: Store) -> str:
    if await store.flows.get("f") is None:
        await _create_flow(store)
    run_id = uuid.uuid4().hex
    await store.runs.insert(run_id, "f", status="running")
    return run_id


async def _create_flow(store: Store) -> None:
    doc: dict[str, Any] = {
        "schema": "plait/flow@1",
        "id": "f",
        "nodes": [{"id": "start", "type": "start"}],
        "edges": [],
    }
    await store.flows.create("f", doc)


def _slow_flow() -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "slow",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "wait", "type": "delay", "config": {"seconds": 30}},
        ],
        "edges": [{"source": "start", "target": "wait"}],
    }


async def test_two_services_on_one_sqlite_file_find_cancels_by_polling(tmp_path: Path) -> None:
    """No broadcast on SQLite: the owner reads the flags every cancel_poll_s, well before it
    renews its leases (lease_ttl/3 = 10 s here)."""

    def settings() -> Settings:
        return Settings(
            database_url=f"sqlite+aiosqlite:///{tmp_path}/p.db",
            require_auth=False,
            lease_ttl_s=30.0,
            cancel_poll_s=0.2,
        )

    a = await Services.open(settings())
    b = await Services.open(settings())
    try:
        assert a.runs.broadcast.kind == "polling"
        await a.flows.create(_slow_flow())
        await a.flows.publish("slow")
        run_id, task = await a.runs.start("slow", {})
        while (await b.runs.get(run_id))["status"] != "running":
            await asyncio.sleep(0.02)
        started = time.monotonic()
        await b.runs.cancel(run_id)
        await asyncio.wait_for(asyncio.shield(task), 5)
        assert (await b.runs.get(run_id))["status"] == "cancelled"
        assert time.monotonic() - started < 2.0
    finally:
        await b.close()
        await a.close()


def test_settings_read_redis_url_and_cancel_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLAIT_EXECUTOR", raising=False)
    monkeypatch.setenv("PLAIT_REDIS_URL", "redis://127.0.0.1:6390/2")
    monkeypatch.setenv("PLAIT_CANCEL_POLL_S", "0.25")
    s = Settings.from_env()
    assert (s.redis_url, s.cancel_poll_s) == ("redis://127.0.0.1:6390/2", 0.25)
    monkeypatch.setenv("PLAIT_REDIS_URL", "")
    monkeypatch.delenv("PLAIT_CANCEL_POLL_S")
    s = Settings.from_env()
    assert (s.redis_url, s.cancel_poll_s) == (None, 0.5)


async def test_a_run_is_called_back_once_however_often_it_is_asked() -> None:
    """The broadcast, the poll and the lease keeper may all pass on one request."""
    cancels = RunCancels()
    calls: list[str] = []
    cancels.expect("r1")
    cancels.watch("r1", lambda: calls.append("r1"))
    assert cancels.cancel("r1") is True
    assert cancels.cancel("r1") is True
    assert calls == ["r1"]
