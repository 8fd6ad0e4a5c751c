"""Queue mode end to end: an API server with PLAIT_EXECUTOR=celery queues runs in a real Redis,
real `plait worker` processes execute them on a real PostgreSQL. Each run calls a counting HTTP
server before and after a delay, so the counts say how many times each node executed."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from plait.store import create_engine_from_url
from redis_fixture import free_port, redis_server
from workers.conftest import Cluster

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="uses kill -9"),
    pytest.mark.timeout(240),
]


def _flow(port: int, delay_s: float) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    return {
        "schema": "plait/flow@1",
        "id": "counted",
        "inputs": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "first", "type": "http", "config": {"url": base + "/first/{{inputs.n}}"}},
            {"id": "pause", "type": "delay", "config": {"seconds": delay_s}},
            {"id": "second", "type": "http", "config": {"url": base + "/second/{{inputs.n}}"}},
            {"id": "out", "type": "output", "config": {"value": "{{inputs.n}}"}},
        ],
        "edges": [
            {"source": "start", "target": "first"},
            {"source": "first", "target": "pause"},
            {"source": "pause", "target": "second"},
            {"source": "second", "target": "out"},
        ],
    }


def _publish(c: httpx.Client, port: int, delay_s: float) -> None:
    r = c.post("/api/v1/flows", json={"document": _flow(port, delay_s)})
    assert r.status_code == 201, r.text
    assert c.post("/api/v1/flows/counted/versions").status_code == 201


def _start(c: httpx.Client, n: int) -> str:
    r = c.post("/api/v1/flows/counted/runs", params={"mode": "background"}, json={"inputs": {"n": n}})
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


def _wait_all(c: httpx.Client, run_ids: list[str], cluster: Cluster, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    pending = set(run_ids)
    while pending:
        for run_id in list(pending):
            status = c.get(f"/api/v1/runs/{run_id}").json()["status"]
            assert status not in ("failed", "cancelled"), (run_id, status)
            if status == "completed":
                pending.discard(run_id)
        if pending and time.monotonic() > deadline:
            logs = "\n".join(f"--- {p.log_path.name}\n{p.log()[-3000:]}" for p in cluster.procs)
            raise AssertionError(f"{len(pending)} run(s) did not complete:\n{logs}")
        time.sleep(0.2)


def _node_status(c: httpx.Client, run_id: str, node_id: str) -> str | None:
    nodes = c.get(f"/api/v1/runs/{run_id}").json().get("nodes") or {}
    node = (
        nodes.get(node_id)
        if isinstance(nodes, dict)
        else next((n for n in nodes if n["id"] == node_id), None)
    )
    return None if node is None else node.get("status")


def _lease_owners(pg_url: str) -> list[str]:
    async def read() -> list[str]:
        engine = create_engine_from_url(pg_url)
        try:
            async with engine.connect() as conn:
                rows = await conn.execute(text("SELECT lease_owner FROM runs WHERE lease_owner IS NOT NULL"))
                return [str(r[0]) for r in rows]
        finally:
            await engine.dispose()

    return asyncio.run(read())


def _owner_pid(owner: str) -> int | None:
    parts = owner.split(":")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def _assert_each_node_once(counter: Any, n_runs: int) -> None:
    calls = dict(counter.calls)
    for n in range(n_runs):
        assert calls.get(f"/first/{n}") == 1, (n, calls.get(f"/first/{n}"))
        assert calls.get(f"/second/{n}") == 1, (n, calls.get(f"/second/{n}"))
    assert len(calls) == 2 * n_runs, calls


@pytest.mark.timeout(600)
def test_runs_spread_over_three_workers_and_each_executes_once(
    cluster: Cluster, counter: Any, pg_url: str
) -> None:
    """The issue's acceptance: 200 runs across 3 workers all complete, each node of each run
    exactly once, at most 4 at once on each worker, none on the API server."""
    port = counter.server_address[1]
    cluster.serve()
    workers = [cluster.worker(f"w{i}", concurrency=4) for i in range(3)]
    for w in workers:
        cluster.wait_ready(w)
    n_runs = 200
    with cluster.client() as c:
        _publish(c, port, delay_s=0.3)
        run_ids = [_start(c, n) for n in range(n_runs)]
        # While runs execute: they are spread over the workers, at most 4 at once on each.
        seen: set[int] = set()
        deadline = time.monotonic() + 60
        while len(seen) < 2 and time.monotonic() < deadline:
            owners = [p for p in map(_owner_pid, _lease_owners(pg_url)) if p is not None]
            for pid in set(owners):
                assert owners.count(pid) <= 4, owners
            seen |= set(owners)
            time.sleep(0.1)
        assert seen <= {w.pid for w in workers}  # the API server executes none
        assert len(seen) >= 2, seen
        _wait_all(c, run_ids, cluster, timeout_s=300)
        for run_id in run_ids[:3]:
            assert c.get(f"/api/v1/runs/{run_id}").json()["outputs"]
    _assert_each_node_once(counter, n_runs)


def test_a_worker_killed_mid_run_its_runs_finish_on_another_and_no_node_runs_twice(
    cluster: Cluster, counter: Any, pg_url: str
) -> None:
    port = counter.server_address[1]
    cluster.serve()
    victim, survivor = cluster.worker("victim", concurrency=8), cluster.worker("survivor", concurrency=8)
    cluster.wait_ready(victim)
    cluster.wait_ready(survivor)
    n_runs = 12
    with cluster.client() as c:
        _publish(c, port, delay_s=3.0)
        run_ids = [_start(c, n) for n in range(n_runs)]
        # Every run has finished `first` (recorded, not just called: a node the crash cuts short
        # runs again, as documented) and waits in `pause`; then the victim dies.
        deadline = time.monotonic() + 60
        while not all(_node_status(c, run_id, "first") == "ok" for run_id in run_ids):
            assert time.monotonic() < deadline, dict(counter.calls)
            time.sleep(0.1)
        owners = [_owner_pid(o) for o in _lease_owners(pg_url)]
        on_victim = owners.count(victim.pid)
        assert on_victim > 0, (owners, victim.pid)
        victim.kill9()
        _wait_all(c, run_ids, cluster)
    _assert_each_node_once(counter, n_runs)


def _human_flow(port: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    return {
        "schema": "plait/flow@1",
        "id": "asks",
        "inputs": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "first", "type": "http", "config": {"url": base + "/first/{{inputs.n}}"}},
            {"id": "review", "type": "human", "config": {"message": "ok?", "actions": ["approve", "reject"]}},
            {"id": "second", "type": "http", "config": {"url": base + "/second/{{inputs.n}}"}},
        ],
        "edges": [
            {"source": "start", "target": "first"},
            {"source": "first", "target": "review"},
            {"source": "review", "source_port": "approve", "target": "second"},
        ],
    }


def _sse(c: httpx.Client, run_id: str, last_event_id: int | None = None) -> list[dict[str, Any]]:
    headers = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else {}
    events = []
    with c.stream("GET", f"/api/v1/runs/{run_id}/events", headers=headers) as resp:
        assert resp.status_code == 200
        for line in resp.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    return events


def test_an_answer_resumes_the_run_on_another_worker_and_the_event_log_stays_whole(
    cluster: Cluster, counter: Any
) -> None:
    port = counter.server_address[1]
    cluster.serve()
    first = cluster.worker("first", concurrency=4)
    cluster.wait_ready(first)
    with cluster.client() as c:
        r = c.post("/api/v1/flows", json={"document": _human_flow(port)})
        assert r.status_code == 201, r.text
        assert c.post("/api/v1/flows/asks/versions").status_code == 201
        r = c.post("/api/v1/flows/asks/runs", params={"mode": "background"}, json={"inputs": {"n": 7}})
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        deadline = time.monotonic() + 60
        while c.get(f"/api/v1/runs/{run_id}").json()["status"] != "waiting":
            assert time.monotonic() < deadline, first.log()
            time.sleep(0.1)
        first.kill9()  # the worker that started the run is gone; another takes the answer
        second = cluster.worker("second", concurrency=4)
        cluster.wait_ready(second)
        r = c.post(f"/api/v1/runs/{run_id}/resume", json={"node_id": "review", "data": {"action": "approve"}})
        assert r.status_code == 202, r.text
        _wait_all(c, [run_id], cluster)
        events = _sse(c, run_id)
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, len(seqs) + 1)), seqs  # every event once, in order
        finished = [e["status"] for e in events if e["type"] == "run_finished"]
        assert finished == ["waiting", "completed"], finished
        # Re-attaching after an event gives exactly the rest.
        middle = seqs[len(seqs) // 2]
        assert [e["seq"] for e in _sse(c, run_id, middle)] == seqs[middle:]
    assert dict(counter.calls) == {"/first/7": 1, "/second/7": 1}


def test_a_cancel_sent_to_the_server_stops_the_run_on_its_worker(cluster: Cluster, counter: Any) -> None:
    port = counter.server_address[1]
    cluster.serve()
    worker = cluster.worker("w", concurrency=4)
    cluster.wait_ready(worker)
    with cluster.client() as c:
        _publish(c, port, delay_s=30.0)
        run_id = _start(c, 1)
        deadline = time.monotonic() + 60
        while "/first/1" not in counter.calls:  # executing on the worker, in `pause`
            assert time.monotonic() < deadline, worker.log()
            time.sleep(0.05)
        t0 = time.monotonic()
        r = c.post(f"/api/v1/runs/{run_id}/cancel")
        elapsed = time.monotonic() - t0
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "cancelled", (r.json(), worker.log())  # answered once it stopped
    assert "/second/1" not in counter.calls
    assert elapsed < 2.0, elapsed


def test_a_retry_from_a_node_is_queued_and_reuses_the_outputs_before_it(
    cluster: Cluster, counter: Any
) -> None:
    port = counter.server_address[1]
    cluster.serve()
    worker = cluster.worker("w", concurrency=4)
    cluster.wait_ready(worker)
    with cluster.client() as c:
        _publish(c, port, delay_s=0.1)
        run_id = _start(c, 3)
        _wait_all(c, [run_id], cluster)
        r = c.post(f"/api/v1/runs/{run_id}/retry", json={"from_node": "second"})
        assert r.status_code == 202, r.text
        again = r.json()["id"]
        _wait_all(c, [again], cluster)
        assert (
            c.get(f"/api/v1/runs/{again}").json()["outputs"]
            == c.get(f"/api/v1/runs/{run_id}").json()["outputs"]
        )
    assert dict(counter.calls) == {"/first/3": 1, "/second/3": 2}  # `first` reused, `second` again


def test_sync_mode_waits_for_the_worker_and_a_cancelled_queued_run_never_executes(
    cluster: Cluster, counter: Any
) -> None:
    port = counter.server_address[1]
    cluster.serve()
    with cluster.client() as c:
        _publish(c, port, delay_s=0.0)
        # No worker yet: the run waits in the queue; cancelling it ends it there.
        queued = _start(c, 1)
        assert c.get(f"/api/v1/runs/{queued}").json()["status"] == "queued"
        r = c.post(f"/api/v1/runs/{queued}/cancel")
        assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
        worker = cluster.worker("w", concurrency=4)
        cluster.wait_ready(worker)
        r = c.post("/api/v1/flows/counted/runs", json={"inputs": {"n": 2}})  # sync: the answer
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "completed" and r.json()["outputs"], r.json()
        assert c.get(f"/api/v1/runs/{queued}").json()["status"] == "cancelled"
    assert dict(counter.calls) == {"/first/2": 1, "/second/2": 1}  # the cancelled run never ran


def test_a_run_accepted_while_redis_is_down_is_started_by_a_workers_recovery(
    tmp_path: Path, pg_url: str, counter: Any
) -> None:
    port = counter.server_address[1]
    with redis_server(tmp_path) as redis:
        cluster = Cluster(tmp_path, pg_url, redis.url, f"127.0.0.1:{port}")
        try:
            cluster.serve()
            with cluster.client() as c:
                _publish(c, port, delay_s=0.0)
                redis.stop()
                t0 = time.monotonic()
                run_id = _start(c, 5)  # accepted: the row is there, the message could not be sent
                assert time.monotonic() - t0 < 10
                redis.start()
                worker = cluster.worker("w", concurrency=4)
                cluster.wait_ready(worker)
                _wait_all(c, [run_id], cluster, timeout_s=60)
            assert "cannot queue run" in cluster.procs[0].log()
        finally:
            cluster.stop()
    assert dict(counter.calls) == {"/first/5": 1, "/second/5": 1}


def test_redis_restarted_in_the_middle_of_runs_they_finish_and_new_runs_flow_again(
    tmp_path: Path, pg_url: str, counter: Any
) -> None:
    port = counter.server_address[1]
    with redis_server(tmp_path) as redis:
        cluster = Cluster(tmp_path, pg_url, redis.url, f"127.0.0.1:{port}")
        try:
            cluster.serve()
            workers = [cluster.worker(f"w{i}", concurrency=8) for i in range(2)]
            for w in workers:
                cluster.wait_ready(w)
            with cluster.client() as c:
                _publish(c, port, delay_s=3.0)
                run_ids = [_start(c, n) for n in range(10)]
                deadline = time.monotonic() + 60
                while sum(1 for k in counter.calls if k.startswith("/first/")) < 10:
                    assert time.monotonic() < deadline, dict(counter.calls)
                    time.sleep(0.05)
                redis.stop()  # every run is executing; Redis (no persistence) comes back empty
                redis.start()
                _wait_all(c, run_ids, cluster)
                later = [_start(c, n) for n in range(10, 13)]
                _wait_all(c, later, cluster, timeout_s=90)
        finally:
            cluster.stop()
    _assert_each_node_once(counter, 13)


def test_a_worker_serves_the_metrics_of_the_runs_it_executes(cluster: Cluster, counter: Any) -> None:
    """A worker has no HTTP API: with PLAIT_WORKER_METRICS_PORT it serves /metrics itself, counting
    the runs it executed (parsed with prometheus_client's own parser)."""
    cluster.serve()
    port = free_port()
    cluster.env["PLAIT_WORKER_METRICS_PORT"] = str(port)
    worker = cluster.worker("metered", 4)
    cluster.wait_ready(worker)
    with cluster.client() as c:
        _publish(c, counter.server_address[1], 0.0)
        runs = [_start(c, n) for n in range(3)]
        _wait_all(c, runs, cluster)
    deadline = time.monotonic() + 30
    while True:
        text_body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        finished = {
            s.labels.get("status"): s.value
            for family in text_string_to_metric_families(text_body)
            if family.name == "plait_runs_finished"
            for s in family.samples
            if s.name == "plait_runs_finished_total"
        }
        if finished.get("completed") == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert finished.get("completed") == 3, text_body[:3000]


def test_the_servers_event_stream_follows_a_run_on_a_worker_closely(cluster: Cluster, counter: Any) -> None:
    """SSE on the API server of a run a worker executes: the events arrive within a fraction of a
    second (through Redis pub/sub; see test_event_stream.py), not at the next 15 s heartbeat;
    every event once, in order."""
    cluster.serve()
    worker = cluster.worker("streamed", 4)
    cluster.wait_ready(worker)
    with cluster.client() as c:
        _publish(c, counter.server_address[1], 1.0)
        run_id = _start(c, 7)
        seqs: list[int] = []
        lags: list[float] = []
        with c.stream("GET", f"/api/v1/runs/{run_id}/events", timeout=60) as resp:
            event_type = ""
            for line in resp.iter_lines():
                if line.startswith("event:"):
                    event_type = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    data = json.loads(line[5:])
                    seqs.append(int(data["seq"]))
                    lags.append(time.time() - float(data["ts"]))
                    if event_type == "run_finished":
                        break
    assert seqs == sorted(set(seqs)) and seqs[0] == 1, seqs
    assert max(lags[-3:]) < 2.0, lags  # the events after the 1 s delay: not held until a heartbeat
