"""Run events through Redis pub/sub (plait.workers.events) against a real Redis: the relay
publishes committed batches, the feed delivers them to the streams watching the run, tells them
when it missed messages (a reconnection) and says when it is not live (Redis away); a batch too
large to carry is only announced. A relay whose Redis is away drops batches without blocking."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plait.engine import events as ev
from plait.engine.events import Event
from plait.workers.events import MAX_MESSAGE_BYTES, EventFeed, EventRelay, FeedMessage, decode, encode
from redis_fixture import RedisServer, redis_server

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


def _events(run_id: str, first: int, n: int, text: str = "x") -> list[Event]:
    return [
        Event(seq, ev.NODE_TOKEN, run_id, time.time(), "llm", ev.NodeToken(text))
        for seq in range(first, first + n)
    ]


def test_a_batch_round_trips_and_a_large_one_is_only_announced() -> None:
    batch = _events("r1", 3, 2)
    message = decode(encode("r1", batch))
    assert message is not None and message.events is not None
    assert (message.first, message.last) == (3, 4)
    assert [e.to_dict() for e in message.events] == [e.to_dict() for e in batch]
    big = _events("r1", 5, 1, "y" * (MAX_MESSAGE_BYTES + 1))
    announced = decode(encode("r1", big))
    assert announced is not None and announced.events is None and (announced.first, announced.last) == (5, 5)
    assert decode(b"not json") is None


async def _until(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_the_relay_publishes_to_the_streams_of_the_run_and_the_feed_survives_a_restart(
    redis: RedisServer,
) -> None:
    relay = EventRelay(redis.url)
    await relay.start()
    feed = EventFeed(redis.url)
    got: dict[str, list[FeedMessage | None]] = {"a": [], "b": []}
    sub_a = await feed.subscribe("a", got["a"].append)
    sub_b = await feed.subscribe("b", got["b"].append)
    try:
        assert sub_a.live and sub_b.live
        relay.stored("a", _events("a", 1, 3))
        relay.stored("b", _events("b", 1, 1))
        relay.stored("c", _events("c", 1, 1))  # nobody watches c
        await _until(lambda: len(got["a"]) == 1 and len(got["b"]) == 1)
        first = got["a"][0]
        assert first is not None and first.events is not None
        assert [e.seq for e in first.events] == [1, 2, 3]

        redis.stop()
        await _until(lambda: not sub_a.live)
        relay.stored("a", _events("a", 4, 1))  # lost: Redis is away (the stream reads the log)
        await asyncio.sleep(0.2)
        redis.start()
        await _until(lambda: sub_a.live and sub_b.live, timeout=20)
        assert got["a"][-1] is None and got["b"][-1] is None  # told: read the log to catch up
        await asyncio.sleep(RELAY_PAUSE)  # the relay tries Redis again after its pause
        relay.stored("a", _events("a", 5, 1))
        await _until(lambda: got["a"][-1] is not None)
        last = got["a"][-1]
        assert last is not None and last.events is not None and [e.seq for e in last.events] == [5]
        assert relay.dropped >= 1

        # A stream that goes stops receiving; the other keeps its channel.
        sub_b.close()
        relay.stored("b", _events("b", 2, 1))
        relay.stored("a", _events("a", 6, 1))
        await _until(lambda: got["a"][-1] is not None and got["a"][-1].last == 6)  # type: ignore[union-attr]
        assert all(m is None or m.last == 1 for m in got["b"])
    finally:
        sub_a.close()
        sub_b.close()
        await relay.close()
    assert not feed.connected  # no stream watches anything: the connection is let go


RELAY_PAUSE = 1.1


async def test_a_relay_without_redis_drops_batches_without_blocking(tmp_path: Path) -> None:
    server = RedisServer(tmp_path)  # a free port nobody listens on
    relay = EventRelay(server.url)
    await relay.start()
    try:
        t0 = time.monotonic()
        for seq in range(1, 50):
            relay.stored("r", _events("r", seq, 1))
        assert time.monotonic() - t0 < 0.1
        await _until(lambda: relay.dropped >= 1)  # joined per run, dropped while Redis is away
        await asyncio.sleep(0.2)
        assert relay.published == 0
    finally:
        await relay.close()


async def test_a_stream_subscribing_while_redis_is_away_is_not_live_then_catches_up(
    redis: RedisServer,
) -> None:
    feed = EventFeed(redis.url)
    redis.stop()
    got: list[FeedMessage | None] = []
    t0 = time.monotonic()
    sub = await feed.subscribe("a", got.append)
    try:
        assert not sub.live and time.monotonic() - t0 < 5
        redis.start()
        await _until(lambda: sub.live, timeout=20)
        assert got == [None]  # it read the log meanwhile: told once to catch up
    finally:
        sub.close()
