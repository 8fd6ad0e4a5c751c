"""The warm pool: pre-started workers, one call each, dead ones replaced."""

from __future__ import annotations

import asyncio
import os
import signal
import time

from plait.sandbox import Limits, SandboxPool, default_pool, run_code

TRIVIAL = "def main():\n    return 1\n"


async def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


async def test_pool_keeps_warm_workers_and_uses_each_once():
    async with SandboxPool(size=2) as pool:
        await pool.warm()
        assert pool.idle_count() == 2
        first = set(pool.idle_pids())
        result = await pool.run_code(TRIVIAL)
        assert result.ok and result.worker_pid in first
        assert await wait_for(lambda: pool.idle_count() == 2)
        assert result.worker_pid not in pool.idle_pids()  # a worker serves one call only


async def test_pool_replaces_a_crashed_worker():
    async with SandboxPool(size=2) as pool:
        await pool.warm()
        killed = pool.idle_pids()
        for pid in killed:
            os.killpg(pid, signal.SIGKILL)
        result = await pool.run_code(TRIVIAL)  # races with the deaths: retried on a fresh worker
        assert result.ok and result.value == 1
        assert result.worker_pid not in killed
        assert await wait_for(lambda: pool.idle_count() == 2)
        assert not set(pool.idle_pids()) & set(killed)
        # and a worker found dead at acquisition is discarded without a failed call
        await pool.warm()
        os.killpg(pool.idle_pids()[0], signal.SIGKILL)
        assert await wait_for(lambda: pool.idle_count() == 1)
        assert (await pool.run_code(TRIVIAL)).ok


async def test_pool_replaces_a_worker_that_timed_out():
    async with SandboxPool(size=1) as pool:
        await pool.warm()
        hung = await pool.run_code(
            "import time\ndef main():\n    time.sleep(30)\n", limits=Limits(timeout_s=0.5)
        )
        assert hung.error_kind == "timeout"
        assert await wait_for(lambda: pool.idle_count() == 1)
        assert (await pool.run_code(TRIVIAL)).ok


async def test_cold_pool_and_concurrent_calls():
    async with SandboxPool(size=0) as cold:
        result = await cold.run_code(TRIVIAL)
        assert result.ok and cold.idle_count() == 0
    async with SandboxPool(size=2) as pool:
        results = await asyncio.gather(
            *(pool.run_code("def main(i):\n    return i * i\n", kwargs={"i": i}) for i in range(6))
        )
        assert [r.value for r in results] == [i * i for i in range(6)]


async def test_closed_pool_refuses_calls():
    pool = SandboxPool(size=1).start()
    pool.close()
    try:
        await pool.run_code(TRIVIAL)
    except RuntimeError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a closed pool ran code")


async def test_module_level_run_code():
    result = await run_code("def main(name):\n    return f'hi {name}'\n", kwargs={"name": "plait"})
    assert result.ok and result.value == "hi plait"
    assert default_pool() is default_pool()
