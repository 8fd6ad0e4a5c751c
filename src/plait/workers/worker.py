"""`QueueWorker`: the consuming side of queue mode (`plait worker`).

A worker process has ONE long-lived asyncio loop (`LoopThread`) that executes every run the
process holds, as the API server's loop does: a run waiting 200 ms on a model costs a coroutine,
not a thread or a process. Celery consumes in the main thread with a thread pool; each pool thread
takes one message (prefetch 1), hands the run to the loop and blocks until the run stops, and
only then is the message acknowledged (`acks_late`). The number of threads is therefore the number
of queued runs a worker executes at once (PLAIT_WORKER_CONCURRENCY); a blocked thread costs a
stack, not CPU.

What executes a message is passed in (`Handler`): this layer does not know the service.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from celery.signals import worker_shutting_down

from plait.workers.app import QUEUE_NAME, TASK_NAME, celery_app
from plait.workers.messages import BadMessage, QueuedRun

log = logging.getLogger("plait.workers")

Handler = Callable[[QueuedRun], Awaitable[None]]
T = TypeVar("T")
DEFAULT_CONCURRENCY = 256
RESTART_DELAY_S = 1.0  # before consuming again after Celery gave up on its broker connection


class LoopThread:
    """One asyncio event loop running in a daemon thread; other threads submit coroutines."""

    def __init__(self, name: str = "plait-worker-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and wait (from another thread) for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


class QueueWorker:
    def __init__(
        self,
        redis_url: str,
        handler: Handler,
        loop: LoopThread,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        name: str = "plait",
        log_level: str = "WARNING",
    ) -> None:
        self.redis_url = redis_url
        self.handler = handler
        self.loop = loop
        self.concurrency = max(1, concurrency)
        self.name = name
        self.log_level = log_level
        self.app = self._make_app()

    def _make_app(self) -> Any:
        app = celery_app(self.redis_url)
        app.task(name=TASK_NAME)(self._execute)
        return app

    def _execute(self, payload: Any) -> None:
        """The Celery task (in a pool thread): execute the run on the loop, return when it stops."""
        try:
            message = QueuedRun.from_json(payload)
        except BadMessage as exc:
            log.error("dropping a message: %s", exc)
            return
        self.loop.call(self._handle(message))

    async def _handle(self, message: QueuedRun) -> None:
        try:
            await self.handler(message)
        except Exception:  # noqa: BLE001 - the message is acknowledged; recovery owns the run now
            log.exception("queued %s of run %s failed", message.kind, message.run_id)

    def run(self) -> None:
        """Consume until stopped (SIGTERM: stop taking messages, finish what executes). Celery
        gives up when its broker connection breaks in a way it cannot recover from (a Redis
        restart while messages await their late acknowledgement: kombu fails to acknowledge on
        the dead connection); the runs in hand finish, and the worker then consumes again on a
        new Celery application, unless a shutdown signal was what stopped it."""
        stopping = threading.Event()

        def on_shutdown(**_: Any) -> None:
            stopping.set()

        worker_shutting_down.connect(on_shutdown, weak=False)
        try:
            while True:
                code = self.app.start(self._argv())
                if stopping.is_set():
                    return
                log.warning("the Celery worker stopped (exit code %s); consuming again", code)
                time.sleep(RESTART_DELAY_S)
                self.app = self._make_app()
        finally:
            worker_shutting_down.disconnect(on_shutdown)

    def _argv(self) -> list[str]:
        return [
            "worker",
            "--pool=threads",
            f"--concurrency={self.concurrency}",
            f"--loglevel={self.log_level}",
            f"--hostname={self.name}@%h",
            f"--queues={QUEUE_NAME}",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]


__all__ = ["DEFAULT_CONCURRENCY", "Handler", "LoopThread", "QueueWorker"]
