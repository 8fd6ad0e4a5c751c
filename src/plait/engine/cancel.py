"""How a cancel request reaches a running engine: a small protocol the engine owns.

A run asks its `CancelSource` to call it back when someone cancels it (`watch`), and stops
watching when it ends. Whoever can cancel runs implements it: `LocalCancels` within one process
(today's default: the public `plait.cancel` and the server's in-process runs), Redis pub/sub or
PostgreSQL notifications across processes later. Nothing polls: the callback cancels the run's
node tasks at once, on the run's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

Unwatch = Callable[[], None]


class CancelSource(Protocol):
    def watch(self, run_id: str, on_cancel: Callable[[], None]) -> Unwatch:
        """Call `on_cancel` (once, on the caller's event loop) when `run_id` is cancelled; the
        returned function stops watching. Whether a cancel requested before `watch` still counts is
        the source's choice: `LocalCancels` forgets it (`cancel` answers False), the server's
        `RunCancels` keeps it and calls back at once."""
        ...


class LocalCancels:
    """Cancel requests within one process: `cancel(run_id)` reaches the run watching that id."""

    def __init__(self) -> None:
        self._watchers: dict[str, tuple[asyncio.AbstractEventLoop, Callable[[], None]]] = {}

    def watch(self, run_id: str, on_cancel: Callable[[], None]) -> Unwatch:
        self._watchers[run_id] = (asyncio.get_running_loop(), on_cancel)

        def unwatch() -> None:
            current = self._watchers.get(run_id)
            if current is not None and current[1] is on_cancel:
                del self._watchers[run_id]

        return unwatch

    def cancel(self, run_id: str) -> bool:
        """Cancel a run executing in this process; False when none is watching `run_id`.

        Safe to call from any thread: the callback runs on the run's own event loop.
        """
        entry = self._watchers.get(run_id)
        if entry is None:
            return False
        loop, on_cancel = entry
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            on_cancel()
        else:
            loop.call_soon_threadsafe(on_cancel)
        return True

    def active(self) -> set[str]:
        """The runs watching for a cancel in this process (the ones executing here)."""
        return set(self._watchers)


__all__ = ["CancelSource", "LocalCancels", "Unwatch"]
