"""HTTP API overhead: sync runs through the full server stack (FastAPI, auth, SQLite checkpoints,
event log), in-process over httpx's ASGI transport, on a temporary database.

    python bench/api.py                     # table
    python bench/api.py --json              # {"sequential": {...}, "concurrent": {...}}
    python bench/api.py --runs 200 --nodes 10 --concurrency 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from typing import Any

import httpx

from plait.api import create_app
from plait.service import Settings

KEY = "bench-key"


def chain(n: int) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "start"}]
    edges = []
    prev = "start"
    for i in range(n):
        nodes.append({"id": f"n{i}", "type": "delay", "config": {"seconds": 0}})
        edges.append({"source": prev, "target": f"n{i}"})
        prev = f"n{i}"
    nodes.append({"id": "out", "type": "output", "config": {"name": "q", "value": "{{inputs.q}}"}})
    edges.append({"source": prev, "target": "out"})
    return {"schema": "plait/flow@1", "id": "bench", "nodes": nodes, "edges": edges}


async def one(client: httpx.AsyncClient, i: int) -> float:
    t0 = time.perf_counter()
    r = await client.post("/api/v1/flows/bench/runs", json={"inputs": {"q": i}})
    body = r.json()
    assert r.status_code == 200 and body["status"] == "completed", body
    return time.perf_counter() - t0


async def main(runs: int, nodes: int, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp}/bench.db", api_key=KEY)
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://bench", headers={"x-api-key": KEY}, timeout=120
            ) as client:
                assert (
                    await client.post("/api/v1/flows", json={"document": chain(nodes)})
                ).status_code == 201
                assert (await client.post("/api/v1/flows/bench/versions")).status_code == 201
                await one(client, -1)  # warm-up
                out: dict[str, Any] = {}
                t0 = time.perf_counter()
                latencies = [await one(client, i) for i in range(runs)]
                wall = time.perf_counter() - t0
                out["sequential"] = _stats(latencies, wall, runs, nodes)
                sem = asyncio.Semaphore(concurrency)

                async def limited(i: int) -> float:
                    async with sem:
                        return await one(client, i)

                t0 = time.perf_counter()
                latencies = await asyncio.gather(*(limited(i) for i in range(runs)))
                wall = time.perf_counter() - t0
                out["concurrent"] = _stats(list(latencies), wall, runs, nodes)
                out["concurrent"]["concurrency"] = concurrency
                return out


def _stats(latencies: list[float], wall: float, runs: int, nodes: int) -> dict[str, Any]:
    latencies.sort()
    return {
        "runs": runs,
        "nodes_per_run": nodes + 2,
        "runs_per_s": round(runs / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p95_ms": round(latencies[int(len(latencies) * 0.95) - 1] * 1000, 2),
        "ms_per_node": round(statistics.median(latencies) * 1000 / (nodes + 2), 3),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main(args.runs, args.nodes, args.concurrency))
    if args.json:
        print(json.dumps(result))
    else:
        for name, row in result.items():
            print(f"{name:11s} " + "  ".join(f"{k}={v}" for k, v in row.items()))
