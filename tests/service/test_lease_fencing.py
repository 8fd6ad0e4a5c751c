"""A run is never executed by two processes at once, even when its owner stalls past the lease.

Two services (two servers or workers) over one database, SQLite and PostgreSQL (a database of
the test's own, when PLAIT_TEST_POSTGRES_URL is set). The first, A, starts a run; its lease keeper
and crash recovery then stall (what a starved event loop or a hung database connection does to
them) while the run's nodes go on. Past the lease TTL the second, B, takes the run over and
continues it from its checkpoint. Then:

- A's lease keeper comes back, finds the lease taken and stops A's execution of the run at once
  (no node starts there, nothing is written); or
- A's lease keeper stays stalled: A's next checkpoint is refused (every checkpoint write is
  conditional on holding the lease) and its execution stops there.

Either way every side-effect node runs once, the log has one `node_finished` per node and one
`run_finished`, and the run completes with B's outputs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from cryptography.fernet import Fernet

from plait.engine import events as ev
from plait.engine.status import RunStatus
from plait.service import Services, Settings
from plait_testing import CALLS

TTL_S = 1.0
WAIT_S = 4.0  # the node A is in when it loses the run: longer than the TTL and the take-over


def _flow() -> dict[str, Any]:
    """start -> fence_e1 -> wait (WAIT_S) -> fence_e2 -> out: the echo nodes count their calls."""
    return {
        "schema": "plait/flow@1",
        "id": "fenced",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "fence_e1", "type": "test_echo", "config": {"value": "one"}},
            {"id": "wait", "type": "delay", "config": {"seconds": WAIT_S}},
            {"id": "fence_e2", "type": "test_echo", "config": {"value": "two"}},
            {"id": "out", "type": "output", "config": {"name": "v", "value": "{{fence_e2}}"}},
        ],
        "edges": [
            {"source": "start", "target": "fence_e1"},
            {"source": "fence_e1", "target": "wait"},
            {"source": "wait", "target": "fence_e2"},
            {"source": "fence_e2", "target": "out"},
        ],
    }


class Stall:
    """Holds the wrapped calls until `release()` (then lets them through)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    def wrap(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def stalled(*args: Any, **kwargs: Any) -> Any:
            await self.gate.wait()
            return await fn(*args, **kwargs)

        return stalled

    def release(self) -> None:
        self.gate.set()


async def _until(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("keeper", ["comes-back", "stays-stalled"])
async def test_a_stalled_owner_loses_the_run_and_never_executes_it_again(
    db_url: str, keeper: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIT_SECRET_KEY", Fernet.generate_key().decode())
    for node in ("fence_e1", "fence_e2"):
        CALLS.pop(node, None)

    def settings() -> Settings:
        return Settings(database_url=db_url, api_key="k", lease_ttl_s=TTL_S, sweep_interval_s=0.05)

    a = await Services.open(settings())
    b: Services | None = None
    stall = Stall()
    try:
        await a.flows.create(_flow())
        await a.flows.publish("fenced")
        # A's lease keeper and recovery stall (recovery would re-take A's own expired lease).
        monkeypatch.setattr(a.store.runs, "heartbeat", stall.wrap(a.store.runs.heartbeat))
        monkeypatch.setattr(
            a.store.runs, "find_expired_running", stall.wrap(a.store.runs.find_expired_running)
        )
        run_id, _ = await a.runs.start("fenced", {})

        async def in_wait() -> bool:
            return any(r.node_id == "wait" for r in await a.store.runs.node_runs(run_id))

        await _until(in_wait, 10, "A never reached the wait node")
        b = await Services.open(settings())
        b_owner = b.runs.launcher.owner

        async def taken_by_b() -> bool:
            row = await a.store.runs.get(run_id)
            return row is not None and row.lease_owner == b_owner and run_id in b.runs.active

        await _until(taken_by_b, 10, "B did not take the run over")
        taken_at = time.monotonic()
        assert run_id in a.runs.active  # A does not know yet: its `wait` goes on
        if keeper == "comes-back":
            stall.release()

            async def a_stopped() -> bool:
                return run_id not in a.runs.active

            # At once: the next renewal (every TTL/3) finds the lease taken, well before A's
            # `wait` would end (WAIT_S after it began).
            await _until(a_stopped, 2.0, "A's lease keeper did not stop A's execution")
            assert time.monotonic() - taken_at < WAIT_S - TTL_S - 0.5

        async def ended() -> bool:
            return run_id not in a.runs.active and run_id not in b.runs.active

        await _until(ended, 20, "the run did not end")

        row = await b.store.runs.get(run_id)
        assert row is not None
        assert (row.status, row.outputs, row.error) == (RunStatus.COMPLETED, {"v": "two"}, None)
        assert row.lease_owner is None  # B finished it and let it go; A wrote nothing after
        assert CALLS.get("fence_e1") == 1 and CALLS.get("fence_e2") == 1  # each side effect once

        events = await b.runs.events_after(run_id, 0)
        assert [e.seq for e in events] == sorted({e.seq for e in events})
        finished = [e.node_id for e in events if e.type == ev.NODE_FINISHED]
        assert (
            sorted(finished)
            == sorted(set(finished))
            == sorted(["start", "fence_e1", "wait", "fence_e2", "out"])
        )
        ends = [e for e in events if e.type == ev.RUN_FINISHED]
        assert [e.data.status for e in ends] == [RunStatus.COMPLETED]
        # The rerun of `wait` (cut short on A) is B's: a node A had finished is not run again.
        oks = [r.node_id for r in await b.store.runs.node_runs(run_id) if r.status == "ok"]
        assert sorted(oks) == sorted(set(oks))
    finally:
        stall.release()
        if b is not None:
            await b.close()
        await a.close()
