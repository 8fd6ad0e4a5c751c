"""kombu's Redis transport with one client per channel instead of one per operation.

kombu's Redis channel builds a new `redis.Redis` client for every command group it sends
(`conn_or_acquire`): a publish, the unacked bookkeeping of each delivered message (`acks_late`),
each acknowledgement. Building one copies redis-py's table of response callbacks (about 170
entries), which made up a fifth of a worker's main-thread CPU per run (cProfile, bench/workers.py).
A client holds no connection of its own (each command takes one from the channel's pool) and is
safe to share between threads, so the channel keeps one and reuses it. Everything else is kombu's.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis

TRANSPORT = "plait.workers.transport:Transport"  # Celery's `broker_transport`


class Channel(kombu_redis.Channel):
    _plait_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        client = self._plait_client
        if client is None:
            client = self._plait_client = super()._create_client(asynchronous=False)  # type: ignore[no-untyped-call]
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel


__all__ = ["TRANSPORT", "Channel", "Transport"]
