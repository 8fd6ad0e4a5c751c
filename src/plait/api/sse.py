"""Server-sent events of a run: the wire form of one event, and the stream routes return.

`id:` is the event's seq (so a client re-attaches with `Last-Event-ID`), `event:` its type and
`data:` its JSON; comments open the stream and keep idle connections alive.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from plait.engine.events import Event
from plait.service import Services

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse_event(e: Event) -> str:
    data = json.dumps(e.to_dict(), ensure_ascii=False, default=str, separators=(",", ":"))
    return f"id: {e.seq}\nevent: {e.type}\ndata: {data}\n\n"


async def run_stream(
    services: Services, run_id: str, after: int, until: str, heartbeat_s: float | None = None
) -> AsyncIterator[str]:
    """The run's events after `after` as SSE text, until `until` (see RunService.stream)."""
    yield ": stream opened\n\n"
    async for e in services.runs.stream(run_id, after, until=until, heartbeat_s=heartbeat_s):
        yield ": heartbeat\n\n" if e is None else sse_event(e)


def resume_after(header: str | None, after: int | None) -> int:
    """Where a stream resumes: `?after=` wins, then the `Last-Event-ID` header, else 0."""
    if after is not None:
        return after
    if header:
        try:
            return max(0, int(header.strip()))
        except ValueError:
            return 0
    return 0
