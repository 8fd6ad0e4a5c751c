"""An API server's event stream of a run a worker executes, in queue mode: the worker publishes
each committed batch of events to Redis, the server's stream subscribes to the run's channel.
Every event arrives once, in order, as the log has it, also when Redis restarts in the middle of
the run (the stream reads the log while Redis is away and after it is back). The lag (the event's
`ts` on the worker to its arrival at the SSE client) is printed (`pytest -s`), not asserted."""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as redis_sync

from redis_fixture import redis_server
from workers.conftest import Cluster

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="subprocesses"),
    pytest.mark.timeout(240),
]


def _flow(steps: int, delay_s: float) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "start"}]
    edges: list[dict[str, Any]] = []
    previous = "start"
    for i in range(steps):
        node = f"wait{i}"
        nodes.append({"id": node, "type": "delay", "config": {"seconds": delay_s}})
        edges.append({"source": previous, "target": node})
        previous = node
    nodes.append({"id": "out", "type": "output", "config": {"value": "done"}})
    edges.append({"source": previous, "target": "out"})
    return {"schema": "plait/flow@1", "id": "paced", "nodes": nodes, "edges": edges}


def _publish(c: httpx.Client, steps: int, delay_s: float) -> None:
    r = c.post("/api/v1/flows", json={"document": _flow(steps, delay_s)})
    assert r.status_code == 201, r.text
    assert c.post("/api/v1/flows/paced/versions").status_code == 201


def _start(c: httpx.Client) -> str:
    r = c.post("/api/v1/flows/paced/runs", params={"mode": "background"}, json={"inputs": {}})
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


class Watcher(threading.Thread):
    """An SSE client of the run on the API server: every event, and its lag on arrival."""

    def __init__(self, cluster: Cluster, run_id: str) -> None:
        super().__init__(daemon=True)
        self.cluster = cluster
        self.run_id = run_id
        self.events: list[dict[str, Any]] = []
        self.lags: list[float] = []
        self.opened = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with (
                self.cluster.client() as c,
                c.stream("GET", f"/api/v1/runs/{self.run_id}/events", timeout=120) as resp,
            ):
                assert resp.status_code == 200
                self.opened.set()
                for line in resp.iter_lines():
                    if line.startswith("data:"):
                        data = json.loads(line[5:])
                        self.lags.append(time.time() - float(data["ts"]))
                        self.events.append(data)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
            self.opened.set()


def _replayed(c: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    """The run's events as a stream re-attached from the start reads them (the log)."""
    events = []
    with c.stream("GET", f"/api/v1/runs/{run_id}/events") as resp:
        for line in resp.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    return events


def _report(name: str, lags: list[float]) -> None:
    ms = sorted(lag * 1000 for lag in lags)
    p90 = ms[int(len(ms) * 0.9)]
    print(  # noqa: T201 - the measurement this test reports
        f"\n[{name}] {len(ms)} events, lag (worker event ts -> SSE client) ms: "
        f"p50 {statistics.median(ms):.1f}, p90 {p90:.1f}, max {ms[-1]:.1f}"
    )


def _wait_done(watcher: Watcher, cluster: Cluster, timeout: float = 120) -> None:
    watcher.join(timeout)
    logs = "\n".join(f"--- {p.log_path.name}\n{p.log()[-3000:]}" for p in cluster.procs)
    assert not watcher.is_alive(), "the stream did not end:\n" + logs
    assert watcher.error is None, f"{watcher.error!r}\n{logs}"


def test_a_servers_stream_of_a_workers_run_gets_every_event_once_in_order_through_redis(
    cluster: Cluster, redis_url: str
) -> None:
    cluster.serve()
    worker = cluster.worker("w", concurrency=4)
    cluster.wait_ready(worker)
    r = redis_sync.Redis.from_url(redis_url)
    relayed: list[int] = []
    listener = r.pubsub()
    listener.psubscribe("plait:events:*")
    with cluster.client() as c:
        _publish(c, steps=8, delay_s=0.3)
        run_id = _start(c)
        watcher = Watcher(cluster, run_id)
        watcher.start()
        assert watcher.opened.wait(30)
        deadline = time.monotonic() + 10
        subscribed = 0
        while subscribed == 0 and time.monotonic() < deadline and watcher.is_alive():
            channel = f"plait:events:{run_id}"
            subscribed = int(dict(r.pubsub_numsub(channel)).get(channel.encode(), 0))
            time.sleep(0.05)
        _wait_done(watcher, cluster)
        replay = _replayed(c, run_id)
    quiet_until = time.monotonic() + 1.0
    while time.monotonic() < quiet_until:
        message = listener.get_message(timeout=0.2)
        if message is not None and message["type"] == "pmessage":
            relayed.extend(e["seq"] for e in json.loads(message["data"]).get("events") or [])
    listener.close()
    _report("redis feed", watcher.lags)
    seqs = [e["seq"] for e in watcher.events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs  # every event once, in order
    assert watcher.events == replay  # exactly what the log holds
    assert watcher.events[-1]["type"] == "run_finished" and watcher.events[-1]["status"] == "completed"
    assert subscribed == 1  # the server's stream watched the run's channel
    assert relayed and set(relayed) <= set(seqs)  # the worker published committed events


def test_redis_restarted_mid_run_the_servers_stream_still_gets_every_event_once_in_order(
    tmp_path: Path, pg_url: str, counter: Any
) -> None:
    with redis_server(tmp_path) as redis:
        cluster = Cluster(tmp_path, pg_url, redis.url, f"127.0.0.1:{counter.server_address[1]}")
        try:
            cluster.serve()
            worker = cluster.worker("w", concurrency=4)
            cluster.wait_ready(worker)
            with cluster.client() as c:
                _publish(c, steps=10, delay_s=0.5)
                run_id = _start(c)
                watcher = Watcher(cluster, run_id)
                watcher.start()
                assert watcher.opened.wait(30)
                deadline = time.monotonic() + 30
                while len(watcher.events) < 6:  # running: a few nodes in
                    assert time.monotonic() < deadline and watcher.is_alive(), watcher.events
                    time.sleep(0.02)
                redis.stop()
                time.sleep(1.5)  # events keep coming meanwhile (the stream reads the log)
                during = len(watcher.events)
                redis.start()
                _wait_done(watcher, cluster)
                replay = _replayed(c, run_id)
        finally:
            cluster.stop()
    _report("redis restarted", watcher.lags)
    seqs = [e["seq"] for e in watcher.events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert watcher.events == replay
    assert watcher.events[-1]["type"] == "run_finished" and watcher.events[-1]["status"] == "completed"
    assert during > 6  # while Redis was away
