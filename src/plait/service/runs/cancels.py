"""`RunCancels`: how a cancel request reaches a run executing in this process.

The engine's `CancelSource` protocol, backed by a `LocalCancels`. The service launches a run and
announces it (`expect`) before the engine starts watching for a cancel; a request that arrives
in between is remembered and delivered when the run watches, as the protocol asks. Requests made
in another process reach this one through the cancel broadcast (Redis or PostgreSQL notifications,
`broadcast.py`) and, as a safety net, the database (`cancel_requested`, read by `Recovery`); both
call `cancel` here, perhaps more than once for one run: a run is called back once.
"""

from __future__ import annotations

from collections.abc import Callable

from plait.engine.cancel import LocalCancels, Unwatch


class RunCancels:
    """Cancel requests for the runs executing in this process."""

    def __init__(self) -> None:
        self.local = LocalCancels()
        self._expected: set[str] = set()  # launched here, until they end
        self._requested: set[str] = set()  # asked to cancel before (or while) watching

    def expect(self, run_id: str) -> None:
        """The run is about to execute here: a cancel request for it is kept until it watches."""
        self._expected.add(run_id)

    def forget(self, run_id: str) -> None:
        """The run stopped executing here."""
        self._expected.discard(run_id)
        self._requested.discard(run_id)

    def watch(self, run_id: str, on_cancel: Callable[[], None]) -> Unwatch:
        unwatch = self.local.watch(run_id, on_cancel)
        if run_id in self._requested:
            on_cancel()
        return unwatch

    def cancel(self, run_id: str) -> bool:
        """Cancel a run executing here (now, or as soon as it watches); False when none is.
        Asking again for a run already asked for does nothing more."""
        if run_id in self._expected:
            if run_id in self._requested:
                return True
            self._requested.add(run_id)
        delivered = self.local.cancel(run_id)
        return delivered or run_id in self._expected


__all__ = ["RunCancels"]
