"""`RunStream`: a run's event log as one stream (SSE, the flow channel): the stored events after
a seq, then the live ones from the bus, with heartbeats, until the run's `run_finished`.

While no live event arrives, the stream reads the store: every `REMOTE_POLL_S` (0.25 s) while the
run is running or queued in another process (a queue worker, another server), so its events arrive
within that time, else (waiting for people, or executing here) at each heartbeat. The store is the source of truth either way: nothing is lost or
repeated, whichever process wrote the events.

Events are masked with the secrets of the run's owner (see plait.service.runs.views) before they
are yielded; the run's own events are masked already, so that costs a walk and no copy.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from plait.engine import events as ev
from plait.engine.events import Event
from plait.engine.journal import masked_event
from plait.engine.status import TERMINAL_RUN_STATUSES, RunStatus
from plait.service.bus import EventBus
from plait.service.runs.launcher import RunLauncher
from plait.service.runs.views import RunViews
from plait.service.settings import Settings
from plait.store import Store

# How often a stream reads the store while its run executes in another process.
REMOTE_POLL_S = 0.25


def ends_stream(event: Event, until: str) -> bool:
    """Whether `event` is the last of a stream: a `run_finished` (with until="terminal": only of
    a completed, failed or cancelled run; a waiting run goes on once answered)."""
    if event.type != ev.RUN_FINISHED:
        return False
    data = event.data
    return until == "finished" or (isinstance(data, ev.RunFinished) and data.status in TERMINAL_RUN_STATUSES)


class RunStream:
    def __init__(
        self, store: Store, bus: EventBus, settings: Settings, views: RunViews, launcher: RunLauncher
    ) -> None:
        self.store = store
        self.bus = bus
        self.settings = settings
        self.views = views
        self.launcher = launcher

    async def stream(
        self, run_id: str, after: int = 0, *, until: str = "terminal", heartbeat_s: float | None = None
    ) -> AsyncIterator[Event | None]:
        """The run's events with seq > `after`: stored ones, then live. Yields None as a heartbeat.
        Ends after `run_finished` (with until="terminal": only a completed/failed/cancelled one)."""
        mask = await self.views.mask_of(await self.views.require(run_id))
        hb = heartbeat_s or self.settings.sse_heartbeat_s
        poll = min(hb, REMOTE_POLL_S)
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + hb
        q = self.bus.subscribe(run_id)
        try:
            last = after
            for e in await self.views.events_after(run_id, last):
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
                if e.seq <= last:
                    continue
                yield masked_event(mask, e)
                last = e.seq
                if ends_stream(e, until):
                    return
        finally:
            self.bus.unsubscribe(run_id, q)


__all__ = ["RunStream", "ends_stream"]
