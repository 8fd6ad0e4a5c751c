"""`RunStream`: a run's event log as one stream (SSE, the flow channel): the stored events after
a seq, then the live ones, with heartbeats, until the run's `run_finished`.

Live events of a run executing here come from the bus. Those of a run executing elsewhere:
- in queue mode (PLAIT_EXECUTOR=celery), from Redis: the worker publishes each batch of events
  once it is committed to the log, and the stream subscribes to the run's channel
  (plait.workers.events). It replays the log, subscribes, reads the log once more (what was
  committed meanwhile), then takes the messages, dropping seqs it has and reading the log when it
  sees a gap (a seq jump, an announcement too large to carry its events, a reconnection). The log
  is still read every `FEED_CHECK_S` (2 s) while the run executes elsewhere (events written
  outside a worker's checkpointer: a run ended while idle), and every `REMOTE_POLL_S` while the
  feed is not connected (Redis away);
- otherwise, by reading the log every `REMOTE_POLL_S` (0.25 s) while the run is running or queued
  in another process.
A run waiting for people is read at each heartbeat. The store is the source of truth either way:
nothing is lost or repeated, whichever process wrote the events.

Events are masked with the secrets of the run's owner (see plait.service.runs.views) before they
are yielded; the run's own events are masked already, so that costs a walk and no copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from plait.engine import events as ev
from plait.engine.events import Event
from plait.engine.journal import masked_event
from plait.engine.status import TERMINAL_RUN_STATUSES, RunStatus
from plait.service.bus import EventBus
from plait.service.runs.launcher import RunLauncher
from plait.service.runs.views import RunViews
from plait.service.settings import Settings
from plait.store import Store
from plait.workers.events import EventFeed, FeedMessage, FeedSubscription

# How often a stream reads the store while its run executes in another process: without the
# Redis feed (or while it is away), and with it (a safety net: the messages carry the events).
REMOTE_POLL_S = 0.25
FEED_CHECK_S = 2.0

# Put in a stream's inbox by the feed: messages were missed (or only announced); read the log.
GAP = Event(0, "plait.stream.gap", "", 0.0)


def feed_inbox(inbox: asyncio.Queue[Event]) -> Callable[[FeedMessage | None], None]:
    """What the feed calls with a run's messages: their events go to the stream's inbox (the
    bus queue it reads), an announcement or a missed message as GAP."""

    def deliver(message: FeedMessage | None) -> None:
        if message is None or message.events is None:
            inbox.put_nowait(GAP)
        else:
            for event in message.events:
                inbox.put_nowait(event)

    return deliver


def ends_stream(event: Event, until: str) -> bool:
    """Whether `event` is the last of a stream: a `run_finished` (with until="terminal": only of
    a completed, failed or cancelled run; a waiting run goes on once answered)."""
    if event.type != ev.RUN_FINISHED:
        return False
    data = event.data
    return until == "finished" or (isinstance(data, ev.RunFinished) and data.status in TERMINAL_RUN_STATUSES)


class RunStream:
    def __init__(
        self,
        store: Store,
        bus: EventBus,
        settings: Settings,
        views: RunViews,
        launcher: RunLauncher,
        feed: EventFeed | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.settings = settings
        self.views = views
        self.launcher = launcher
        # Queue mode: the workers publish run events to Redis; streams subscribe (one connection
        # per process, opened while some stream watches a run executing elsewhere).
        if feed is None and settings.executor == "celery" and settings.redis_url:
            feed = EventFeed(settings.redis_url)
        self.feed = feed

    async def stream(
        self, run_id: str, after: int = 0, *, until: str = "terminal", heartbeat_s: float | None = None
    ) -> AsyncIterator[Event | None]:
        """The run's events with seq > `after`: stored ones, then live. Yields None as a heartbeat.
        Ends after `run_finished` (with until="terminal": only a completed/failed/cancelled one)."""
        mask = await self.views.mask_of(await self.views.require(run_id))
        hb = heartbeat_s or self.settings.sse_heartbeat_s
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + hb
        q = self.bus.subscribe(run_id)
        sub: FeedSubscription | None = None
        last = after
        try:
            for e in await self.views.events_after(run_id, last):
                if e.seq <= last:
                    continue
                yield masked_event(mask, e)
                last = e.seq
                if ends_stream(e, until):
                    return
            if self.feed is not None and self.launcher.executing(run_id) is None:
                sub = await self.feed.subscribe(run_id, feed_inbox(q))
                for e in await self.views.events_after(run_id, last):  # committed meanwhile
                    if e.seq <= last:
                        continue
                    yield masked_event(mask, e)
                    last = e.seq
                    if ends_stream(e, until):
                        return
            elsewhere = True  # whether the run may be executing in another process (as last read)
            while True:
                to_beat = max(0.0, next_beat - loop.time())
                fast = elsewhere and self.launcher.executing(run_id) is None
                poll = min(hb, FEED_CHECK_S if sub is not None and sub.live else REMOTE_POLL_S)
                wait = min(poll, to_beat) if fast else to_beat
                try:
                    e = await asyncio.wait_for(q.get(), wait)
                except TimeoutError:
                    if loop.time() >= next_beat:
                        next_beat = loop.time() + hb
                        yield None
                    fresh = await self.store.events.list_events(run_id, after_seq=last)
                    for x in fresh:
                        yield masked_event(mask, x)
                        last = x.seq
                        if ends_stream(x, until):
                            return
                    row = await self.store.runs.get(run_id)
                    elsewhere = row is not None and row.status in (RunStatus.RUNNING, RunStatus.QUEUED)
                    if row is None or (
                        row.status in TERMINAL_RUN_STATUSES
                        and self.launcher.executing(run_id) is None
                        and not fresh
                    ):
                        return
                    continue
                if e is GAP or e.seq > last + 1:  # the feed missed (or only announced) events
                    for x in await self.views.events_after(run_id, last):
                        if x.seq <= last:
                            continue
                        yield masked_event(mask, x)
                        last = x.seq
                        if ends_stream(x, until):
                            return
                    elsewhere = True
                    if e is GAP:
                        continue
                if e.seq <= last:
                    continue
                yield masked_event(mask, e)
                last = e.seq
                if ends_stream(e, until):
                    return
                elsewhere = True  # it moves (a waiting run answered elsewhere): read it often again
        finally:
            if sub is not None:
                sub.close()
            self.bus.unsubscribe(run_id, q)


__all__ = ["FEED_CHECK_S", "GAP", "REMOTE_POLL_S", "RunStream", "ends_stream", "feed_inbox"]
