"""HTTP API throughput and SQL checkpoint cost.

1. `plait serve` is started as a subprocess on 127.0.0.1 with a temporary SQLite database and
   PLAIT_API_KEY set; this process drives it with one keep-alive HTTP/1.1 connection per
   concurrent client (a minimal client, as `wrk` uses: httpx's pool cost more CPU than the server
   on this 2-core machine): sync runs (`POST /api/v1/flows/bench/runs?mode=sync`) of a 3-node
   flow (start -> message -> output) at concurrency 1, 16 and 64: runs/s, p50/p99 latency.
2. A 100-node chain checkpointed to a SQLite file: plait's `SqlCheckpointer` vs LangGraph's
   `SqliteSaver` (durability "sync"), µs per node and their ratio, in the same process; both in
   WAL mode with synchronous=FULL (the defaults: every commit fsynced), then both at NORMAL.

    python bench/api.py                     # table
    python bench/api.py --json              # one JSON object
    python bench/api.py --runs 2000 --concurrency 1 16 64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plait  # noqa: E402
from engine import lg_chain, plait_chain  # noqa: E402
from engine import time_async as _time_async  # noqa: E402
from engine import time_sync as _time_sync  # noqa: E402

KEY = "bench-key"

FLOW: dict[str, Any] = {
    "schema": "plait/flow@1",
    "id": "bench",
    "nodes": [
        {"id": "start", "type": "start"},
        {"id": "greet", "type": "message", "config": {"text": "hello {{inputs.q}}"}},
        {"id": "out", "type": "output", "config": {"name": "q", "value": "{{inputs.q}}"}},
    ],
    "edges": [{"source": "start", "target": "greet"}, {"source": "greet", "target": "out"}],
}


# ---------------------------------------------------------------- 1. the real server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(tmp: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {
        **os.environ,
        "PLAIT_DATABASE_URL": f"sqlite:///{tmp}/api.db",
        "PLAIT_API_KEY": KEY,
    }
    cmd = [
        sys.executable,
        "-m",
        "plait.cli.main",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--no-access-log",
        "--examples",
        str(Path(tmp) / "no-examples"),
    ]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"plait serve exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code < 500:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("plait serve did not start")


class _Connection:
    """A minimal HTTP/1.1 keep-alive client, one connection per worker (as `wrk` does): the load
    generator shares the machine with the server, so it must cost little. httpx's pool costs
    ~2.5 ms of CPU per request at 16 connections and ~9 ms at 64, which measured the client."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nx-api-key: {KEY}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        try:
            self.writer.write(head.encode() + body)
            status_line = await self.reader.readuntil(b"\r\n")
            length = 0
            while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            return int(status_line.split()[1]), await self.reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError):
            self.close()
            raise

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def _one(conn: _Connection, i: int) -> float:
    t0 = time.perf_counter()
    status, raw = await conn.post(
        "/api/v1/flows/bench/runs?mode=sync", json.dumps({"inputs": {"q": i}}).encode()
    )
    body = json.loads(raw)
    assert status == 200 and body["status"] == "completed" and body["outputs"]["q"] == i, body
    return time.perf_counter() - t0


async def _level(host: str, port: int, runs: int, concurrency: int) -> dict[str, Any]:
    counter = iter(range(runs))
    latencies: list[float] = []
    errors = 0

    async def worker() -> None:
        nonlocal errors
        conn = _Connection(host, port)
        try:
            for i in counter:
                try:
                    latencies.append(await _one(conn, i))
                except (OSError, asyncio.IncompleteReadError):  # counted and reported, not timed
                    errors += 1
        finally:
            conn.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - t0
    latencies.sort()
    return {
        "concurrency": concurrency,
        "runs": runs,
        "transport_errors": errors,
        "runs_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000, 2),
    }


async def api(runs: int, levels: list[int]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_server(tmp)
        try:
            async with httpx.AsyncClient(base_url=base, headers={"x-api-key": KEY}, timeout=120) as c:
                r = await c.post("/api/v1/flows", json={"document": FLOW})
                assert r.status_code == 201, r.text
                assert (await c.post("/api/v1/flows/bench/versions")).status_code == 201
            url = httpx.URL(base)
            host, port = url.host, int(url.port or 80)
            out: dict[str, Any] = {}
            for n in levels:
                await _level(host, port, min(100, runs), n)  # warm-up: caches, the server's pools
                out[f"c{n}"] = await _level(host, port, runs, n)
            return out
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


# ---------------------------------------------------------------- 2. SQL checkpoints
async def _plait_chain_us(tmp: str, nodes: int, repeat: int, synchronous: str) -> float:
    from plait.store import Store
    from plait.store.db import ENV_SQLITE_SYNCHRONOUS

    os.environ[ENV_SQLITE_SYNCHRONOUS] = synchronous  # read when the store opens its connections
    store = await Store.open(f"sqlite:///{tmp}/plait-{synchronous.lower()}.db")
    try:
        flow = plait_chain(nodes)

        async def once() -> None:
            result = await plait.run(flow, checkpointer=store.checkpointer)
            assert result.status == "completed", result.error

        return statistics.median(await _time_async(once, repeat)) / nodes * 1e6
    finally:
        await store.close()
        os.environ.pop(ENV_SQLITE_SYNCHRONOUS, None)


def _langgraph_chain_us(tmp: str, nodes: int, repeat: int, synchronous: str | None) -> float:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(f"{tmp}/langgraph-{synchronous or 'default'}.db", check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()  # WAL; sqlite3's default synchronous is FULL
        if synchronous:
            conn.execute(f"PRAGMA synchronous={synchronous}")
        graph = lg_chain(nodes, saver)
        counter = iter(range(10**9))

        def lg_once() -> None:
            config = {"recursion_limit": nodes + 10, "configurable": {"thread_id": f"t{next(counter)}"}}
            graph.invoke({"x": 0}, config, durability="sync")

        return statistics.median(_time_sync(lg_once, repeat)) / nodes * 1e6
    finally:
        conn.close()


async def checkpoints(nodes: int, repeat: int) -> dict[str, Any]:
    """Both sides in WAL mode at the same `synchronous` level: FULL (each commit fsynced: plait's
    default and LangGraph's) and NORMAL (durable across process crashes, not power loss)."""
    out: dict[str, Any] = {"nodes": nodes}
    with tempfile.TemporaryDirectory() as tmp:
        for level in ("FULL", "NORMAL"):
            plait_us = await _plait_chain_us(tmp, nodes, repeat, level)
            lg_us = await asyncio.to_thread(
                _langgraph_chain_us, tmp, nodes, repeat, None if level == "FULL" else level
            )
            suffix = "" if level == "FULL" else "_normal"
            out[f"plait_sql_us_per_node{suffix}"] = round(plait_us, 1)
            out[f"langgraph_sqlite_us_per_node{suffix}"] = round(lg_us, 1)
            out[f"ratio{suffix}"] = round(lg_us / plait_us, 2)
    return out


async def main(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"api": await api(args.runs, args.concurrency)}
    out[f"checkpointed_{args.nodes}"] = await checkpoints(args.nodes, args.repeat)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs per concurrency level")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--nodes", type=int, default=100, help="length of the checkpointed chain")
    parser.add_argument("--repeat", type=int, default=10, help="timed runs of the checkpointed chain")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main(args))
    if args.json:
        print(json.dumps(result))
    else:
        for name, row in result["api"].items():
            print(f"api {name:4s} " + "  ".join(f"{k}={v}" for k, v in row.items()))
        for name, row in result.items():
            if name != "api":
                print(f"{name} " + "  ".join(f"{k}={v}" for k, v in row.items()))
