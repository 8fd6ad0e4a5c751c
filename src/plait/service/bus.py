"""In-process fan-out of run events to live subscribers (SSE streams)."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable

from plait.engine.events import Event

log = logging.getLogger("plait.service")

EventTap = Callable[[Event], None]

HISTORY_GRACE_S = 60.0


class EventBus:
    """Every event of the runs executing in this process goes to the subscribers of its run and
    to a per-run history (events are persisted in batches, at the node's next checkpoint, so
    the history fills the gap between what is stored and what is live).

    `taps` see every event too, after the subscribers (metrics, traces, log context: see
    plait.service.observability); a tap that raises is logged and never breaks the run."""

    def __init__(self) -> None:
        self._subs: dict[str, set[asyncio.Queue[Event]]] = defaultdict(set)
        self._history: dict[str, list[Event]] = {}
        self._drop: dict[str, asyncio.TimerHandle] = {}
        self.taps: list[EventTap] = []

    def publish(self, event: Event) -> None:
        self._history.setdefault(event.run_id, []).append(event)
        handle = self._drop.pop(event.run_id, None)
        if handle is not None:
            handle.cancel()
        for q in self._subs.get(event.run_id, ()):
            q.put_nowait(event)
        for tap in self.taps:
            try:
                tap(event)
            except Exception:  # noqa: BLE001 - observing a run never breaks it
                log.exception("an event tap failed on a %s event", event.type)

    def subscribe(self, run_id: str) -> asyncio.Queue[Event]:
        q: asyncio.Queue[Event] = asyncio.Queue()
        self._subs[run_id].add(q)
        return q

    def unsubscribe(self, run_id: str, q: asyncio.Queue[Event]) -> None:
        subs = self._subs.get(run_id)
        if subs is not None:
            subs.discard(q)
            if not subs:
                self._subs.pop(run_id, None)

    def history(self, run_id: str) -> list[Event]:
        return list(self._history.get(run_id, ()))

    def release(self, run_id: str) -> None:
        """The run stopped executing here (its events are stored): drop its history soon."""
        if run_id not in self._history:
            return
        loop = asyncio.get_running_loop()
        old = self._drop.pop(run_id, None)
        if old is not None:
            old.cancel()
        self._drop[run_id] = loop.call_later(HISTORY_GRACE_S, self._forget, run_id)

    def _forget(self, run_id: str) -> None:
        self._drop.pop(run_id, None)
        self._history.pop(run_id, None)
