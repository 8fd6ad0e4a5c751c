"""Sandbox overhead: wall time of a trivial call (`def main(): return 1`) through plait.sandbox.

  warm  SandboxPool(size=2): the worker interpreter is already started (the pool refills in
        the background; the benchmark waits for a ready worker between calls, so each figure
        is the per-call cost, not the refill throughput)
  cold  SandboxPool(size=0): a new interpreter is started for every call

Each call includes everything a node pays: scratch dir, request, namespaces, fork, rlimits,
Landlock, uid drop, the call itself, response, process-group kill, reaping, cleanup.

    python bench/sandbox.py                 # table
    python bench/sandbox.py --json          # {"warm": {"p50_ms", "p99_ms", ...}, "cold": {...}}
    python bench/sandbox.py --warm 200 --cold 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from plait.sandbox import SandboxPool

TRIVIAL = "def main():\n    return 1\n"


def _summary(samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(pct(99), 2),
        "min_ms": round(ordered[0], 2),
        "max_ms": round(ordered[-1], 2),
    }


async def _measure(pool: SandboxPool, n: int, wait_warm: bool) -> tuple[list[float], dict | None]:
    samples: list[float] = []
    isolation = None
    for _ in range(n):
        if wait_warm:
            await pool.warm()
        t0 = time.perf_counter()
        result = await pool.run_code(TRIVIAL)
        samples.append((time.perf_counter() - t0) * 1000)
        if not result.ok or result.value != 1:
            raise SystemExit(f"sandbox call failed: {result.error}")
        isolation = result.isolation
    return samples, isolation


async def main_async(warm_n: int, cold_n: int) -> dict[str, Any]:
    async with SandboxPool(size=2) as pool:
        await pool.warm()
        await _measure(pool, 5, True)  # warm-up
        warm, isolation = await _measure(pool, warm_n, True)
    async with SandboxPool(size=0) as cold_pool:
        await _measure(cold_pool, 2, False)
        cold, _ = await _measure(cold_pool, cold_n, False)
    return {"warm": _summary(warm), "cold": _summary(cold), "isolation": isolation}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--warm", type=int, default=200, help="warm calls (default 200)")
    parser.add_argument("--cold", type=int, default=50, help="cold calls (default 50)")
    args = parser.parse_args()
    report = asyncio.run(main_async(args.warm, args.cold))
    if args.json:
        print(json.dumps({"warm": report["warm"], "cold": report["cold"]}))
        return
    print(f"{'mode':<6} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'min ms':>8} {'max ms':>8}")
    for mode in ("warm", "cold"):
        s = report[mode]
        print(f"{mode:<6} {s['n']:>5} {s['p50_ms']:>8} {s['p99_ms']:>8} {s['min_ms']:>8} {s['max_ms']:>8}")
    print("isolation:", json.dumps(report["isolation"]))


if __name__ == "__main__":
    main()
