"""Run events between processes in queue mode, through Redis pub/sub.

A worker writes a run's events to the database log (the source of truth), and once they are
committed it publishes them on the run's channel, `plait:events:<run id>` (`EventRelay`, told by
the store's checkpointer after each commit). An API server's stream of a run that executes on a
worker subscribes to that channel (`EventFeed`: one Redis connection per process, one channel per
run some stream watches) instead of reading the log over and over.

Redis is only the fast path; nothing depends on it. A stream replays the log first and subscribes
before it reads the log once more, takes events in seq order and drops the ones it has, and reads
the log whenever it sees a gap: a seq jump (a message lost while a worker could not reach Redis),
a message too large to carry its events (`FeedMessage.events` None: read them from the log), a
reconnection (`on_message(None)`). While the feed is not connected, streams read the log on a
timer as before. A message is never published before its events are committed, so a stream never
shows an event that the log could later contradict (a worker that dies before the commit).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from plait.engine.events import Event

log = logging.getLogger("plait.workers")

CHANNEL_PREFIX = "plait:events:"
MAX_MESSAGE_BYTES = 256 * 1024  # larger batches are announced, not carried (the log has them)
RELAY_QUEUE_LIMIT = 10_000  # batches waiting to be published; past it they are dropped (gaps)
RELAY_PAUSE_S = 1.0  # after a failed publish, batches are dropped this long (Redis is away)
CONNECT_TIMEOUT_S = 2.0
HEALTH_CHECK_S = 10.0  # an idle subscribed connection is pinged this often
CONFIRM_TIMEOUT_S = 2.0  # how long a new stream waits for Redis to confirm its subscription
BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 5.0


def channel_of(run_id: str) -> str:
    return CHANNEL_PREFIX + run_id


@dataclass(frozen=True, slots=True)
class FeedMessage:
    """Events `first`..`last` of a run were committed: here they are (`events`), or, when they
    were too large to carry, only announced (`events` None: read them from the log)."""

    run_id: str
    first: int
    last: int
    events: list[Event] | None


def encode(run_id: str, events: Sequence[Event]) -> bytes:
    """The message of one committed batch of a run's events (their wire form, as SSE sends it)."""
    head: dict[str, Any] = {"run_id": run_id, "first": events[0].seq, "last": events[-1].seq}
    raw = json.dumps(
        {**head, "events": [e.to_dict() for e in events]},
        ensure_ascii=False,
        default=str,
        separators=(",", ":"),
    ).encode()
    if len(raw) > MAX_MESSAGE_BYTES:
        raw = json.dumps(head, separators=(",", ":")).encode()
    return raw


def decode(raw: bytes | str) -> FeedMessage | None:
    """A message published by `encode`; None when it is not one (logged)."""
    try:
        body = json.loads(raw)
        events = body.get("events")
        return FeedMessage(
            run_id=str(body["run_id"]),
            first=int(body["first"]),
            last=int(body["last"]),
            events=None if events is None else [Event.from_dict(e) for e in events],
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        log.warning("ignoring a malformed run-event message: %s", exc)
        return None


class Backoff:
    """Waits between reconnection attempts: 0.1 s doubling up to 5 s; `reset` once connected."""

    def __init__(self) -> None:
        self.next = BACKOFF_FIRST_S

    def reset(self) -> None:
        self.next = BACKOFF_FIRST_S

    async def wait(self) -> None:
        delay, self.next = self.next, min(self.next * 2, BACKOFF_MAX_S)
        await asyncio.sleep(delay)


class EventRelay:
    """The worker's side: `stored(run_id, events)` (a listener of the store's checkpointer,
    called on the worker's loop after each commit) queues the batch; one task publishes what is
    queued, a message per run (its batches joined, in order), all of it in one pipeline. A run never waits for Redis: when Redis cannot be reached
    the batches are dropped (logged once per outage), and the streams read the log instead."""

    def __init__(self, redis_url: str) -> None:
        self.client = aioredis.Redis.from_url(
            redis_url, socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=CONNECT_TIMEOUT_S
        )
        self._queue: asyncio.Queue[tuple[str, Sequence[Event]]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._paused_until = 0.0
        self._down = False
        self.published = 0  # messages published
        self.dropped = 0  # messages (or batches, when the queue is full) not published

    async def start(self) -> None:
        """Start publishing (call on the loop the runs execute on)."""
        if self._task is None:
            self._queue = asyncio.Queue(RELAY_QUEUE_LIMIT)
            self._task = asyncio.get_running_loop().create_task(self._drain(), name="plait-event-relay")

    def stored(self, run_id: str, events: Sequence[Event]) -> None:
        """The checkpointer committed `events` of the run: publish them (soon, not here)."""
        queue = self._queue
        if queue is None or not events:
            return
        try:
            queue.put_nowait((run_id, events))
        except asyncio.QueueFull:
            self.dropped += 1

    async def _drain(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            first = await queue.get()
            merged: dict[str, list[Event]] = {first[0]: list(first[1])}
            while not queue.empty():  # everything stored meanwhile: one message per run
                run_id, events = queue.get_nowait()
                merged.setdefault(run_id, []).extend(events)
            batch = list(merged.items())
            if time.monotonic() < self._paused_until:
                self.dropped += len(batch)
                continue
            try:
                await self._publish(batch)
            except (RedisError, OSError) as exc:
                self.dropped += len(batch)
                self._paused_until = time.monotonic() + RELAY_PAUSE_S
                if not self._down:
                    self._down = True
                    log.warning(
                        "cannot publish run events to Redis (%s); streams read them from the log meanwhile",
                        exc,
                    )
                continue
            except Exception:  # noqa: BLE001 - the relay must outlive any one batch
                log.exception("publishing run events failed")
                self.dropped += len(batch)
                continue
            self.published += len(batch)
            if self._down:
                self._down = False
                log.info("publishing run events to Redis again")

    async def _publish(self, batch: list[tuple[str, list[Event]]]) -> None:
        if len(batch) == 1:
            run_id, events = batch[0]
            await self.client.publish(channel_of(run_id), encode(run_id, events))
            return
        async with self.client.pipeline(transaction=False) as pipe:
            for run_id, events in batch:
                pipe.publish(channel_of(run_id), encode(run_id, events))
            await pipe.execute()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.client.aclose()


OnMessage = Callable[[FeedMessage | None], None]  # None: the feed missed messages, read the log


class FeedSubscription:
    """One stream's interest in a run's channel. `live`: Redis confirmed the subscription and the
    connection stands (else the stream reads the log on a timer). `close` when done."""

    def __init__(self, feed: EventFeed, run_id: str, on_message: OnMessage) -> None:
        self.feed = feed
        self.run_id = run_id
        self.on_message = on_message
        self.live = False
        self.fresh = True  # not yet confirmed once: nothing missed, the stream reads the log next
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.feed.remove(self)


class EventFeed:
    """The API server's side: one pub/sub connection for the process, subscribed to the channels
    of the runs its streams watch. Connected while at least one stream watches a run; it
    reconnects with backoff, and after each reconnection tells every stream it missed messages.
    All of it runs on the server's event loop."""

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self._subs: dict[str, set[FeedSubscription]] = {}
        self._confirmed: set[str] = set()  # run ids Redis confirmed on the current connection
        self._waiting: dict[str, list[asyncio.Future[bool]]] = {}
        self._pubsub: Any = None  # the current connection's PubSub while connected
        self._task: asyncio.Task[None] | None = None

    @property
    def connected(self) -> bool:
        return self._pubsub is not None

    async def subscribe(self, run_id: str, on_message: OnMessage) -> FeedSubscription:
        """Watch the run's channel; returns once Redis confirmed the subscription (`live`), or
        after CONFIRM_TIMEOUT_S without (not live: the stream reads the log until the feed tells
        it it caught up). Messages go to `on_message`, on the loop."""
        sub = FeedSubscription(self, run_id, on_message)
        subs = self._subs.setdefault(run_id, set())
        subs.add(sub)
        if run_id in self._confirmed:
            sub.live, sub.fresh = True, False
            return sub
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(run_id, []).append(waiter)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._listen(), name="plait-event-feed")
        elif self._pubsub is not None and len(subs) == 1:
            try:
                await self._pubsub.subscribe(channel_of(run_id))
            except (RedisError, OSError):
                pass  # the listener sees the connection fail and subscribes again when back
        try:
            await asyncio.wait_for(asyncio.shield(waiter), CONFIRM_TIMEOUT_S)
        except TimeoutError:
            pass
        sub.fresh = False  # from now on, a confirmation after an outage means messages were missed
        return sub

    def remove(self, sub: FeedSubscription) -> None:
        subs = self._subs.get(sub.run_id)
        if subs is None:
            return
        subs.discard(sub)
        if subs:
            return
        del self._subs[sub.run_id]
        self._confirmed.discard(sub.run_id)
        self._waiting.pop(sub.run_id, None)
        if not self._subs:  # no stream watches anything: let go of the connection
            task, self._task = self._task, None
            self._pubsub = None
            self._confirmed.clear()
            if task is not None:
                task.cancel()
        elif self._pubsub is not None:
            self._spawn_unsubscribe(self._pubsub, channel_of(sub.run_id))

    def _spawn_unsubscribe(self, pubsub: Any, channel: str) -> None:
        async def unsubscribe() -> None:
            try:
                await pubsub.unsubscribe(channel)
            except (RedisError, OSError):
                pass  # a broken connection forgets its channels anyway

        task = asyncio.get_running_loop().create_task(unsubscribe())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def _listen(self) -> None:
        backoff = Backoff()
        while self._subs:
            client = aioredis.Redis.from_url(
                self.redis_url, socket_connect_timeout=CONNECT_TIMEOUT_S, health_check_interval=HEALTH_CHECK_S
            )
            pubsub = client.pubsub()
            try:
                asked = set(self._subs)
                await pubsub.subscribe(*[channel_of(r) for r in asked])
                self._pubsub = pubsub
                added = set(self._subs) - asked  # streams that came meanwhile
                if added:
                    await pubsub.subscribe(*[channel_of(r) for r in added])
                backoff.reset()
                while True:
                    message = await pubsub.get_message(timeout=HEALTH_CHECK_S)
                    if message is None:
                        await pubsub.ping()  # a half-open socket fails here
                        continue
                    self._handle(message)
            except (RedisError, OSError) as exc:
                log.warning("run event feed (Redis) lost its connection: %s; streams read the log", exc)
            except Exception:  # noqa: BLE001 - the feed must outlive any one failure
                log.exception("run event feed (Redis) failed; restarting")
            finally:
                if self._pubsub is pubsub:
                    self._disconnected()
                await self._close(pubsub, client)
            await backoff.wait()

    @staticmethod
    async def _close(pubsub: Any, client: Any) -> None:
        try:
            await asyncio.shield(pubsub.aclose())
            await asyncio.shield(client.aclose())
        except (RedisError, OSError, asyncio.CancelledError):
            pass

    def _disconnected(self) -> None:
        """The connection is gone: every stream reads the log until the feed is back (told now,
        so that one waiting for a message reads the log at once and then on its short timer)."""
        self._pubsub = None
        self._confirmed.clear()
        for subs in list(self._subs.values()):
            for sub in list(subs):
                if sub.live:
                    sub.live = False
                    sub.on_message(None)

    def _handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        channel = message.get("channel")
        if isinstance(channel, bytes):
            channel = channel.decode()
        if not isinstance(channel, str) or not channel.startswith(CHANNEL_PREFIX):
            return
        run_id = channel[len(CHANNEL_PREFIX) :]
        subs = self._subs.get(run_id)
        if kind == "subscribe":
            self._confirm(run_id, subs or set())
        elif kind == "message" and subs:
            decoded = decode(message["data"])
            if decoded is not None:
                for sub in list(subs):
                    sub.on_message(decoded)

    def _confirm(self, run_id: str, subs: set[FeedSubscription]) -> None:
        """Redis confirmed the run's channel: its streams are live; the ones that were not (they
        read the log while the feed was away) are told to catch up once."""
        self._confirmed.add(run_id)
        for waiter in self._waiting.pop(run_id, ()):
            if not waiter.done():
                waiter.set_result(True)
        for sub in list(subs):
            if not sub.live:
                sub.live = True
                if not sub.fresh:
                    sub.on_message(None)


__all__ = [
    "CHANNEL_PREFIX",
    "EventFeed",
    "EventRelay",
    "FeedMessage",
    "FeedSubscription",
    "channel_of",
    "decode",
    "encode",
]
