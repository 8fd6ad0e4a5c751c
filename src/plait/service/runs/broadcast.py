"""`CancelBroadcast`: how a cancel request made on one server reaches the server executing the run.

The database flag (`runs.cancel_requested`) is the record: every server's lease keeper reads it
when it renews its leases (every lease_ttl/3, about 5 s), so a request is never lost. That is too
slow for a person pressing Cancel, so a request is also announced to every server at once, and the
one executing the run cancels it there (within milliseconds). One way is chosen at start-up
(`choose_broadcast`):

- `RedisBroadcast` when `PLAIT_REDIS_URL` is set: Redis pub/sub (channel `plait:cancel`);
- `PostgresBroadcast` when the database is PostgreSQL: `NOTIFY plait_cancel` in the transaction
  that sets the flag (so no server hears of it before the flag is visible), `LISTEN` on a dedicated
  connection;
- `PollingBroadcast` otherwise (SQLite): the flag only; `Recovery` reads it more often than the
  lease keeper (`PLAIT_CANCEL_POLL_S`), since several processes may share one file.

A listener that loses its connection reconnects with backoff; after each (re)connection it asks
for the flags to be read once (`on_gap`), since announcements made while it was away are gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import asyncpg  # type: ignore[import-untyped]
import redis.asyncio as aioredis
from redis.exceptions import RedisError
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from plait.store import Store
from plait.store.models import Run
from plait.store.run_rows import request_cancel

log = logging.getLogger("plait.service")

PG_CHANNEL = "plait_cancel"
REDIS_CHANNEL = "plait:cancel"
BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 5.0
PUBLISH_TIMEOUT_S = 2.0  # a Redis that does not answer: the flag is set, the lease keeper delivers
HEALTH_CHECK_S = 10.0  # how often an idle listening connection is checked

OnCancel = Callable[[str], object]
OnGap = Callable[[], Awaitable[object]]


class CancelBroadcast(Protocol):
    """Record a cancel request and announce it to every server; listen for announcements."""

    kind: str  # "redis", "postgres" or "polling": what /healthz and the logs call it

    async def publish(self, run_id: str) -> None:
        """Set `runs.cancel_requested` and announce the request. The flag is written (or this
        raises); a failed announcement is only logged: the lease keeper delivers it later."""
        ...

    async def listen(self, on_cancel: OnCancel, on_gap: OnGap) -> None:
        """Until cancelled: call `on_cancel(run_id)` for every announcement (also this server's),
        reconnecting with backoff; `on_gap()` after each (re)connection."""
        ...

    async def close(self) -> None: ...


async def flagged_among(store: Store, run_ids: Iterable[str]) -> list[str]:
    """The runs among `run_ids` whose cancel was requested (one read, no lease renewal)."""
    ids = list(run_ids)
    if not ids:
        return []
    async with store.sessionmaker() as session:
        rows = await session.execute(select(Run.id).where(Run.id.in_(ids), Run.cancel_requested.is_(True)))
        return list(rows.scalars().all())


class Backoff:
    """Waits between reconnection attempts: 0.1 s doubling up to 5 s; `reset` once connected."""

    def __init__(self, first: float = BACKOFF_FIRST_S, most: float = BACKOFF_MAX_S) -> None:
        self.first = first
        self.most = most
        self.next = first

    def reset(self) -> None:
        self.next = self.first

    async def wait(self) -> None:
        delay = self.next
        self.next = min(self.next * 2, self.most)
        await asyncio.sleep(delay)


class PollingBroadcast:
    """No announcement: the flag only (SQLite; the owner's poll finds it)."""

    kind = "polling"

    def __init__(self, store: Store) -> None:
        self.store = store

    async def publish(self, run_id: str) -> None:
        await self.store.runs.request_cancel(run_id)

    async def listen(self, on_cancel: OnCancel, on_gap: OnGap) -> None:
        await asyncio.Event().wait()  # nothing to hear

    async def close(self) -> None:
        return None


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """The store's SQLAlchemy URL (`postgresql+asyncpg://...`) as a plain DSN for asyncpg."""
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresBroadcast:
    """`NOTIFY plait_cancel, '<run id>'` with the flag, in one transaction; `LISTEN` on a
    dedicated asyncpg connection (not one of the pool's: it is held for the server's life)."""

    kind = "postgres"

    def __init__(self, store: Store, *, channel: str = PG_CHANNEL) -> None:
        self.store = store
        self.channel = channel
        self.dsn = asyncpg_dsn(store.url)
        self._conn: asyncpg.Connection | None = None

    async def publish(self, run_id: str) -> None:
        async with self.store.sessionmaker.begin() as session:
            await session.execute(request_cancel(run_id), execution_options={"synchronize_session": False})
            await session.execute(select(func.pg_notify(self.channel, run_id)))

    async def listen(self, on_cancel: OnCancel, on_gap: OnGap) -> None:
        backoff = Backoff()
        while True:
            try:
                await self._listen_once(on_cancel, on_gap, backoff)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                log.warning("cancel listener (PostgreSQL) lost its connection: %s; reconnecting", exc)
            except Exception:  # noqa: BLE001 - the listener must outlive any one failure
                log.exception("cancel listener (PostgreSQL) failed; restarting")
            await backoff.wait()

    async def _listen_once(self, on_cancel: OnCancel, on_gap: OnGap, backoff: Backoff) -> None:
        lost = asyncio.Event()

        def heard(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            on_cancel(payload)

        conn: asyncpg.Connection = await asyncpg.connect(self.dsn, timeout=10)
        self._conn = conn
        try:
            conn.add_termination_listener(lambda _conn: lost.set())
            await conn.add_listener(self.channel, heard)
            backoff.reset()
            await on_gap()
            while not lost.is_set():
                try:
                    await asyncio.wait_for(lost.wait(), HEALTH_CHECK_S)
                except TimeoutError:
                    await conn.execute("SELECT 1", timeout=HEALTH_CHECK_S)  # a half-open socket
            raise OSError("the listening connection closed")
        finally:
            self._conn = None
            conn.terminate()

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.terminate()


class RedisBroadcast:
    """Redis pub/sub: `PUBLISH plait:cancel <run id>` after the flag is written; every server
    subscribes (a connection of its own, checked every 10 s when idle)."""

    kind = "redis"

    def __init__(self, store: Store, url: str, *, channel: str = REDIS_CHANNEL) -> None:
        self.store = store
        self.url = url
        self.channel = channel
        self.client = aioredis.Redis.from_url(
            url, socket_connect_timeout=PUBLISH_TIMEOUT_S, socket_timeout=PUBLISH_TIMEOUT_S
        )

    async def publish(self, run_id: str) -> None:
        await self.store.runs.request_cancel(run_id)
        try:
            await self.client.publish(self.channel, run_id)
        except (RedisError, OSError) as exc:
            log.warning(
                "cannot announce the cancel of run %s through Redis (%s); its owner will see it when it renews its lease",
                run_id,
                exc,
            )

    async def listen(self, on_cancel: OnCancel, on_gap: OnGap) -> None:
        backoff = Backoff()
        while True:
            try:
                await self._listen_once(on_cancel, on_gap, backoff)
            except (RedisError, OSError) as exc:
                log.warning("cancel listener (Redis) lost its connection: %s; reconnecting", exc)
            except Exception:  # noqa: BLE001 - the listener must outlive any one failure
                log.exception("cancel listener (Redis) failed; restarting")
            await backoff.wait()

    async def _listen_once(self, on_cancel: OnCancel, on_gap: OnGap, backoff: Backoff) -> None:
        client = aioredis.Redis.from_url(
            self.url, socket_connect_timeout=PUBLISH_TIMEOUT_S, health_check_interval=HEALTH_CHECK_S
        )
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self.channel)
            backoff.reset()
            await on_gap()
            while True:
                message = await pubsub.get_message(timeout=HEALTH_CHECK_S)
                if message is None:
                    await pubsub.ping()  # a half-open socket fails here
                    continue
                if message.get("type") == "message":
                    data = message["data"]
                    on_cancel(data.decode() if isinstance(data, bytes) else str(data))
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call]
            await client.aclose()

    async def close(self) -> None:
        await self.client.aclose()


def choose_broadcast(store: Store, redis_url: str | None) -> CancelBroadcast:
    """Redis when configured, else PostgreSQL notifications on PostgreSQL, else the flag only."""
    if redis_url:
        return RedisBroadcast(store, redis_url)
    if store.engine.dialect.name == "postgresql":
        return PostgresBroadcast(store)
    return PollingBroadcast(store)


__all__ = [
    "PG_CHANNEL",
    "REDIS_CHANNEL",
    "Backoff",
    "CancelBroadcast",
    "PollingBroadcast",
    "PostgresBroadcast",
    "RedisBroadcast",
    "asyncpg_dsn",
    "choose_broadcast",
    "flagged_among",
]
