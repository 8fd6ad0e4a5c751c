"""`RunQueue`: the API side of queue mode, which sends a `QueuedRun` to the workers.

Celery's send is blocking network I/O (kombu), so it runs in a thread and the event loop of the
API server keeps serving. The run's row is written before the message is sent: a worker that
receives the message always finds the row.
"""

from __future__ import annotations

import asyncio
import time

from plait.errors import PlaitError
from plait.workers.app import QUEUE_NAME, TASK_NAME, celery_app
from plait.workers.messages import QueuedRun


class QueueUnavailable(PlaitError, RuntimeError):
    """The message could not be sent (the broker is unreachable)."""


class RunQueue:
    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self.app = celery_app(redis_url)

    def send(self, message: QueuedRun) -> None:
        """Send `message` (blocking)."""
        if message.queued_at is None:
            message = QueuedRun(**{**message.to_json(), "queued_at": time.time()})
        try:
            self.app.send_task(TASK_NAME, args=[message.to_json()], queue=QUEUE_NAME)
        except Exception as exc:  # noqa: BLE001 - kombu and redis raise many kinds
            raise QueueUnavailable(
                f"cannot queue run {message.run_id}: {type(exc).__name__}: {exc}",
                hint="check that Redis answers at PLAIT_REDIS_URL",
                code="queue_unavailable",
            ) from exc

    async def enqueue(self, message: QueuedRun) -> None:
        """Send `message` without blocking the event loop."""
        await asyncio.to_thread(self.send, message)

    def close(self) -> None:
        self.app.close()


__all__ = ["QueueUnavailable", "RunQueue"]
