"""Render threads: templates whose running time depends on their data render off the event loop.

A template with loops, calls or macros can take up to its time budget (budget.py) to render. On
the event loop that is a frozen server (`/healthz` waited 2.9 s behind one nested loop), so
`arender` hands such templates to a small dedicated pool of threads (PLAIT_TEMPLATE_WORKERS,
default 2: rendering is CPU work, and more threads than cores only share the same GIL). The
event loop awaits the result; if the awaiting task is cancelled (the node timed out, the run was
cancelled) the render's budget is cancelled too, so the thread stops at its next tick instead of
finishing work nobody waits for. A render waiting for a free thread uses up its own deadline, so
a busy pool fails late renders instead of queueing them without end.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from plait.expr.budget import Budget, limits

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=limits().workers, thread_name_prefix="plait-template")
    return _pool


def _forget_pool() -> None:
    """A forked child (a Celery worker) starts without the parent's threads."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


async def run_in_render_thread(job: Callable[[], T]) -> T:
    """Run synchronous code that renders templates (a node's `execute`) on a render thread: its
    `render` calls then get the full PLAIT_TEMPLATE_TIMEOUT_S, and the event loop stays free. The
    code cannot be stopped from outside; the templates it renders stop at their own deadlines."""
    return await asyncio.get_running_loop().run_in_executor(_executor(), job)


async def run_bounded(job: Callable[[], T], budget: Budget) -> T:
    """Run `job` (a render under `budget`) on a render thread and await its result."""
    future = asyncio.get_running_loop().run_in_executor(_executor(), job)
    try:
        return await future
    except asyncio.CancelledError:
        budget.cancel()
        raise


__all__ = ["run_bounded", "run_in_render_thread"]
