"""Queue mode at scale: `plait serve` (PLAIT_EXECUTOR=celery) and `plait worker` processes on
PostgreSQL and Redis, executing a flow whose nodes wait 200 ms each (`delay` nodes standing in for
model calls: the worker waits, it does not compute). By default the flow makes one such call
(`start -> wait -> output`: the shortest runs, the hardest case for (b)); `--nodes 3` chains
three (an agent's model -> tool -> model).

This process starts its own `redis-server` (a free port on 127.0.0.1, nothing saved), makes a fresh
database (`bench_workers` by default) on the PostgreSQL server named by --postgres-url,
PLAIT_BENCH_POSTGRES_URL or PLAIT_TEST_POSTGRES_URL, starts the API server and the workers as
subprocesses, publishes the flow and sends runs in background mode over HTTP. Times come from the
runs table (created_at: the API queued the run; started_at: a worker began it; finished_at), all
written by processes on this machine, so one clock.

(a) scaling: 1, 2, then 3 workers each limited to `--concurrency 4`; --runs runs per round, twice:
    end to end (throughput = runs / (last finished_at - first send)), then pre-queued (the
    workers are SIGSTOPped while the runs are sent, throughput = runs / (last finished_at -
    SIGCONT): the workers' rate, not the one API server's accept rate). `scaling_2`, `scaling_3`
    are the pre-queued throughput ratios to one worker (targets: >= 1.8, >= 2.5);
    `end_to_end_scaling_*` the others.
(b) in flight: one worker at its default concurrency, --burst runs queued while it is stopped,
    then released; `in_flight_max` is the most runs started and not yet finished at the same
    instant (target: >= 200).
(c) queue-to-start: the same worker, --latency-runs runs sent at --rate per second, each send on
    its own task; p50 (target < 20 ms) and p99 of started_at - created_at.

The database is left in place afterwards (inspect it); the next run drops and recreates it.

    python bench/workers.py                  # summary
    python bench/workers.py --json           # one JSON object
    python bench/workers.py --runs 96 --burst 300 --latency-runs 100 --rate 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import bindparam, event, text
from sqlalchemy.engine import make_url

from plait.service import Services, Settings
from plait.store import create_engine_from_url, database_url
from plait.workers import QUEUE_OWNER, QueuedRun
from plait.workers.messages import QUEUE_HOLD_S

KEY = "bench-key"
FLOW_ID = "wait200"
TERMINAL = ("completed", "failed", "cancelled")


def flow_document(nodes: int, seconds: float) -> dict[str, Any]:
    """start -> `nodes` x delay(`seconds`) -> output."""
    ids = [f"wait{i}" for i in range(nodes)]
    chain = ["start", *ids, "out"]
    return {
        "schema": "plait/flow@1",
        "id": FLOW_ID,
        "inputs": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "nodes": [
            {"id": "start", "type": "start"},
            *({"id": i, "type": "delay", "config": {"seconds": seconds}} for i in ids),
            {"id": "out", "type": "output", "config": {"value": "{{inputs.n}}"}},
        ],
        "edges": [{"source": a, "target": b} for a, b in zip(chain, chain[1:], strict=False)],
    }


# ---------------------------------------------------------------- processes
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Any, timeout_s: float, what: str, log: Any = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not start" + (f":\n{log()[-3000:]}" if log else ""))
        time.sleep(0.1)


class Proc:
    """A subprocess whose output goes to a log file in the temporary directory."""

    def __init__(self, tmp: Path, name: str, cmd: list[str], env: dict[str, str]) -> None:
        self.log_path = tmp / f"{name}.log"
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def start_redis(tmp: Path) -> tuple[Proc, str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install -y redis-server)")
    port = free_port()
    cmd = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = Proc(tmp, "redis", [*cmd, "--dir", str(tmp)], dict(os.environ))

    def ready() -> bool:
        assert proc.alive(), proc.log()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    wait_until(ready, 10, "redis-server", proc.log)
    return proc, f"redis://127.0.0.1:{port}/0"


def plait_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "plait.cli.main", *args]


def start_server(tmp: Path, env: dict[str, str]) -> tuple[Proc, str]:
    port = free_port()
    args = ["serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"]
    proc = Proc(tmp, "server", plait_cmd(*args), env)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        assert proc.alive(), proc.log()
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(ready, 90, "plait serve", proc.log)
    return proc, url


def start_workers(
    tmp: Path, env: dict[str, str], count: int, concurrency: int | None, tag: str
) -> list[Proc]:
    """`count` workers, started together; returns once each says it consumes ("ready.")."""
    procs = []
    for i in range(count):
        name = f"{tag}-w{i}"
        extra = [] if concurrency is None else ["--concurrency", str(concurrency)]
        procs.append(Proc(tmp, name, plait_cmd("worker", "--name", name, *extra, "--log-level", "INFO"), env))
    for p in procs:

        def ready(p: Proc = p) -> bool:
            assert p.alive(), p.log()
            return "ready." in p.log()

        wait_until(ready, 120, f"plait worker {p.log_path.stem}", p.log)
    return procs


# ---------------------------------------------------------------- database
async def make_database(server_url: str, name: str) -> str:
    """A fresh database `name` on the server; returns its URL."""
    admin = create_engine_from_url(server_url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    finally:
        await admin.dispose()
    return make_url(database_url(server_url)).set(database=name).render_as_string(hide_password=False)


class Runs:
    """Reads the runs table directly (cheaper than a GET per run while hundreds execute)."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine_from_url(url)
        self._done = text("SELECT count(*) FROM runs WHERE id IN :ids AND status IN :terminal").bindparams(
            bindparam("ids", expanding=True), bindparam("terminal", expanding=True)
        )
        self._rows = text(
            "SELECT status, created_at, started_at, finished_at FROM runs WHERE id IN :ids"
        ).bindparams(bindparam("ids", expanding=True))

    async def wait_done(self, ids: list[str], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            async with self.engine.connect() as conn:
                done = (await conn.execute(self._done, {"ids": ids, "terminal": list(TERMINAL)})).scalar_one()
            if done == len(ids):
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"{len(ids) - done} of {len(ids)} runs did not finish in {timeout_s:.0f} s")
            await asyncio.sleep(0.05)

    async def rows(self, ids: list[str]) -> list[tuple[str, float, float, float]]:
        async with self.engine.connect() as conn:
            rows = (await conn.execute(self._rows, {"ids": ids})).all()
        bad = [r[0] for r in rows if r[0] != "completed"]
        if bad or len(rows) != len(ids):
            raise SystemExit(f"not every run completed: {len(rows)} rows, statuses {sorted(set(bad))}")
        return [(r[0], float(r[1]), float(r[2]), float(r[3])) for r in rows]

    async def close(self) -> None:
        await self.engine.dispose()


# ---------------------------------------------------------------- sending
async def send_runs(client: httpx.AsyncClient, count: int, parallel: int, first: int = 0) -> list[str]:
    """`count` background runs, `parallel` requests at a time; returns their ids."""
    sem = asyncio.Semaphore(parallel)

    async def one(n: int) -> str:
        async with sem:
            r = await client.post(
                f"/api/v1/flows/{FLOW_ID}/runs", params={"mode": "background"}, json={"inputs": {"n": n}}
            )
        if r.status_code != 202:
            raise SystemExit(f"starting a run answered {r.status_code}: {r.text}")
        return str(r.json()["id"])

    return list(await asyncio.gather(*(one(first + i) for i in range(count))))


async def send_at_rate(client: httpx.AsyncClient, count: int, rate: float) -> list[str]:
    """`count` runs, one every 1/rate s (each request on its own task, so a slow answer does not
    delay the next send)."""
    t0 = time.monotonic()
    tasks = []
    for i in range(count):
        await asyncio.sleep(max(0.0, t0 + i / rate - time.monotonic()))
        tasks.append(asyncio.create_task(send_runs(client, 1, 1, first=i)))
    return [run_id for ids in await asyncio.gather(*tasks) for run_id in ids]


def max_in_flight(rows: list[tuple[str, float, float, float]]) -> int:
    """The most runs with started_at <= t < finished_at at one instant (a sweep over the edges)."""
    edges = sorted(
        [(s, 1) for _, _, s, _ in rows] + [(f, -1) for _, _, _, f in rows], key=lambda e: (e[0], e[1])
    )
    best = now = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# ---------------------------------------------------------------- the rounds
def pause(procs: list[Proc], paused: bool) -> None:
    """SIGSTOP / SIGCONT the workers: runs sent while they are stopped wait in Redis, so the
    measure starts with a full queue (what the workers do, not how fast one API server accepts)."""
    for p in procs:
        os.kill(p.proc.pid, signal.SIGSTOP if paused else signal.SIGCONT)


async def timed(
    url: str, runs: Runs, procs: list[Proc], n_runs: int, prequeued: bool, parallel: int = 16
) -> tuple[float, list[tuple[str, float, float, float]], float]:
    """Sends `n_runs` and waits for them; returns (wall s, rows, sending s). Wall: from the first
    send (or, pre-queued, from the workers' SIGCONT) to the last finished_at."""
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(
        base_url=url, headers={"x-api-key": KEY}, timeout=120, limits=limits
    ) as client:
        if prequeued:
            pause(procs, True)
        t_send = time.time()
        try:
            ids = await send_runs(client, n_runs, parallel=parallel)
        finally:
            sent = time.time() - t_send
            if prequeued:
                pause(procs, False)
        t0 = time.time() if prequeued else t_send
        await runs.wait_done(ids, timeout_s=60 + n_runs)
    rows = await runs.rows(ids)
    return max(f for *_, f in rows) - t0, rows, sent


def cpu_s(procs: list[Proc]) -> float:
    """User + system CPU seconds the processes used so far (Linux /proc; 0 elsewhere)."""
    total = 0
    for p in procs:
        try:
            fields = Path(f"/proc/{p.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def busy_p50(rows: list[tuple[str, float, float, float]]) -> float:
    """A run's started_at -> finished_at, median, ms."""
    return statistics.median((f - s) * 1000 for *_, s, f in rows)


async def throughput_round(
    tmp: Path, env: dict[str, str], url: str, runs: Runs, workers: int, n_runs: int, log: Any
) -> tuple[float, float]:
    """(pre-queued runs/s, end-to-end runs/s) with `workers` workers at concurrency 4."""
    procs = start_workers(tmp, env, workers, 4, f"a{workers}")
    try:
        wall, rows, sent = await timed(url, runs, procs, n_runs, prequeued=False)
        live = n_runs / wall
        log(
            f"(a) {workers} worker(s) x 4, end to end: {n_runs} runs in {wall:.2f} s = {live:.1f} runs/s "
            f"(sending took {sent:.2f} s; started->finished p50 {busy_p50(rows):.0f} ms)"
        )
        wall, rows, _ = await timed(url, runs, procs, n_runs, prequeued=True)
        queued = n_runs / wall
        log(
            f"(a) {workers} worker(s) x 4, pre-queued: {n_runs} runs in {wall:.2f} s = {queued:.1f} runs/s "
            f"(started->finished p50 {busy_p50(rows):.0f} ms)"
        )
        return queued, live
    finally:
        for p in procs:
            p.stop()


async def main(args: argparse.Namespace, log: Any) -> dict[str, Any]:
    server_url = (
        args.postgres_url
        or os.environ.get("PLAIT_BENCH_POSTGRES_URL")
        or os.environ.get("PLAIT_TEST_POSTGRES_URL")
    )
    if not server_url:
        raise SystemExit(
            "no PostgreSQL: set PLAIT_BENCH_POSTGRES_URL (or PLAIT_TEST_POSTGRES_URL, or --postgres-url), "
            "e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
        )
    db_url = await make_database(server_url, args.database)
    with tempfile.TemporaryDirectory(prefix="plait-bench-workers-") as tmp_name:
        tmp = Path(tmp_name)
        procs: list[Proc] = []
        runs = Runs(db_url)
        try:
            redis, redis_url = start_redis(tmp)
            procs.append(redis)
            env = {
                **os.environ,
                "PLAIT_EXECUTOR": "celery",
                "PLAIT_DATABASE_URL": db_url,
                "PLAIT_REDIS_URL": redis_url,
                "PLAIT_API_KEY": KEY,
            }
            env.pop("PLAIT_WORKER_CONCURRENCY", None)  # (b) measures the default
            server, url = start_server(tmp, env)
            procs.append(server)
            async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEY}, timeout=120) as client:
                doc = flow_document(args.nodes, args.seconds)
                r = await client.post("/api/v1/flows", json={"document": doc})
                assert r.status_code == 201, r.text
                r = await client.post(f"/api/v1/flows/{FLOW_ID}/versions")
                assert r.status_code == 201, r.text

            result: dict[str, Any] = {}
            if "a" in args.parts:
                rates, live = {}, {}
                for n in (1, 2, 3):
                    rates[n], live[n] = await throughput_round(tmp, env, url, runs, n, args.runs, log)
                result |= {
                    "throughput_runs_per_s": {str(n): round(v, 2) for n, v in rates.items()},
                    "scaling_2": round(rates[2] / rates[1], 3),
                    "scaling_3": round(rates[3] / rates[1], 3),
                    "end_to_end_runs_per_s": {str(n): round(v, 2) for n, v in live.items()},
                    "end_to_end_scaling_2": round(live[2] / live[1], 3),
                    "end_to_end_scaling_3": round(live[3] / live[1], 3),
                }

            worker = start_workers(tmp, env, 1, None, "b") if "b" in args.parts or "c" in args.parts else []
            procs.extend(worker)
            if "b" in args.parts:
                cpu0 = cpu_s(worker)
                wall, burst, _ = await timed(url, runs, worker, args.burst, prequeued=True, parallel=32)
                in_flight = max_in_flight(burst)
                log(
                    f"(b) 1 worker, default concurrency: {args.burst} runs queued, at most {in_flight} in flight; "
                    f"all done in {wall:.1f} s, started->finished p50 {busy_p50(burst):.0f} ms, "
                    f"worker CPU {cpu_s(worker) - cpu0:.1f} s ({(cpu_s(worker) - cpu0) / args.burst * 1000:.0f} ms per run)"
                )
                result["in_flight_max"] = in_flight
            if "c" in args.parts:
                async with httpx.AsyncClient(base_url=url, headers={"x-api-key": KEY}, timeout=120) as client:
                    ids = await send_at_rate(client, args.latency_runs, args.rate)
                    await runs.wait_done(ids, timeout_s=120 + args.latency_runs)
                    waits = [(s - c) * 1000 for _, c, s, _ in await runs.rows(ids)]
                p50, p99 = statistics.median(waits), pct(waits, 0.99)
                log(
                    f"(c) queue-to-start at {args.rate:g} runs/s ({args.latency_runs} runs): p50 {p50:.1f} ms, p99 {p99:.1f} ms"
                )
                result |= {"queue_to_start_p50_ms": round(p50, 2), "queue_to_start_p99_ms": round(p99, 2)}
        finally:
            await runs.close()
            for p in reversed(procs):
                p.stop()
    return {
        **result,
        "params": {
            "parts": args.parts,
            "runs_per_round": args.runs,
            "burst": args.burst,
            "latency_runs": args.latency_runs,
            "rate_per_s": args.rate,
            "delay_nodes": args.nodes,
            "delay_s": args.seconds,
        },
    }


# ---------------------------------------------------------------- the queue path in one process
class _Writes:
    """Counts the socket writes of this process' event loop (a round trip to PostgreSQL is one)."""

    def __init__(self) -> None:
        self.count = 0
        transport: Any = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]
        write = transport.write

        def counted(this: Any, data: Any) -> None:
            self.count += 1
            write(this, data)

        transport.write = counted


async def queue_path(server_url: str, database: str, runs: int) -> dict[str, float]:
    """A worker's CPU, SQL statements, transactions and round trips per queued run, without
    Celery, Redis or other processes: the runs' rows are written as the API writes them (queued,
    leased to the queue), then `RunControl.execute_queued` (what `plait worker` calls for a
    message) executes them one after the other. The flow: start -> delay(0 s) -> output."""
    writes = _Writes()
    url = await make_database(server_url, database)
    settings = Settings(database_url=url, max_active_runs=256, require_auth=False, sweep_interval_s=3600)
    services = await Services.open(settings)
    store, control = services.store, services.runs.control
    counts = {"statements": 0, "transactions": 0}

    def on_statement(*_: Any) -> None:
        counts["statements"] += 1

    def on_begin(*_: Any) -> None:
        counts["transactions"] += 1

    event.listen(store.engine.sync_engine, "before_cursor_execute", on_statement)
    event.listen(store.engine.sync_engine, "begin", on_begin)
    try:
        await services.flows.create(flow_document(1, 0.0), flow_id=FLOW_ID)
        version = (await services.flows.publish(FLOW_ID))["version"]

        async def queued() -> str:
            run_id = uuid.uuid4().hex
            until = time.time() + QUEUE_HOLD_S
            await store.runs.insert(
                run_id, FLOW_ID, inputs={"n": 1}, version=version, lease_owner=QUEUE_OWNER, lease_until=until
            )
            return run_id

        for _ in range(20):  # warm the caches (compiled statements, the flow's plan)
            await control.execute_queued(QueuedRun(await queued(), "start"))
        ids = [await queued() for _ in range(runs)]
        counts.update(statements=0, transactions=0)
        writes.count = 0
        cpu = time.process_time()
        for run_id in ids:
            await control.execute_queued(QueuedRun(run_id, "start"))
        cpu = time.process_time() - cpu
        done = {**counts, "writes": writes.count}
        for run_id in ids:
            row = await store.runs.get(run_id)
            if row is None or row.status != "completed":
                raise SystemExit(f"run {run_id} did not complete")
    finally:
        await services.close()
    return {
        "queue_path_cpu_ms_per_run": round(1000 * cpu / runs, 2),
        "queue_path_statements_per_run": round(done["statements"] / runs, 2),
        "queue_path_transactions_per_run": round(done["transactions"] / runs, 2),
        "queue_path_writes_per_run": round(done["writes"] / runs, 2),
    }


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=96, help="(a) runs per round (1, 2, 3 workers)")
    parser.add_argument("--burst", type=int, default=300, help="(b) runs sent at once to one worker")
    parser.add_argument("--latency-runs", type=int, default=100, help="(c) runs sent at --rate")
    parser.add_argument("--rate", type=float, default=10.0, help="(c) runs per second")
    parser.add_argument(
        "--nodes", type=int, default=1, help="delay nodes (simulated model calls) in the flow's chain"
    )
    parser.add_argument("--seconds", type=float, default=0.2, help="each delay node's wait")
    parser.add_argument("--postgres-url", help="a PostgreSQL server (default: PLAIT_BENCH_POSTGRES_URL)")
    parser.add_argument("--database", default="bench_workers", help="the database made (dropped first) on it")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--parts",
        default="abc",
        help="which measures to take: a (scaling), b (in flight), c (queue-to-start)",
    )
    parser.add_argument(
        "--queue-path",
        type=int,
        metavar="N",
        help="only measure a worker's CPU, statements, transactions and round trips per run, "
        "in this process, over N runs",
    )
    args = parser.parse_args()
    log = (lambda _msg: None) if args.json else print
    if args.queue_path:
        server = (
            args.postgres_url
            or os.environ.get("PLAIT_BENCH_POSTGRES_URL")
            or os.environ.get("PLAIT_TEST_POSTGRES_URL")
        )
        if not server:
            raise SystemExit("--queue-path needs PostgreSQL: --postgres-url or PLAIT_BENCH_POSTGRES_URL")
        path = asyncio.run(queue_path(server, f"{args.database}_path", args.queue_path))
        print(json.dumps(path) if args.json else "\n".join(f"{k} {v}" for k, v in path.items()))
        return
    t0 = time.monotonic()
    result = asyncio.run(main(args, log))
    if args.json:
        print(json.dumps(result))
    else:
        summary = []
        if "scaling_2" in result:
            summary.append(
                f"scaling_2 {result['scaling_2']:.2f} (target >= 1.8), scaling_3 {result['scaling_3']:.2f} (>= 2.5)"
            )
        if "in_flight_max" in result:
            summary.append(f"in_flight_max {result['in_flight_max']} (>= 200)")
        if "queue_to_start_p50_ms" in result:
            summary.append(
                f"queue_to_start p50 {result['queue_to_start_p50_ms']:.1f} ms (< 20), "
                f"p99 {result['queue_to_start_p99_ms']:.1f} ms"
            )
        print(f"{', '.join(summary)}; {time.monotonic() - t0:.0f} s in all")


if __name__ == "__main__":
    cli()
