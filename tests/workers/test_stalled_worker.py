"""A worker stopped (SIGSTOP: what a starved event loop looks like from outside) past its run's
lease loses the run to another worker, and once it runs again it executes nothing more of it:
its lease keeper finds the lease taken and stops the run there, and its checkpoints would be
refused anyway (plait.store.fencing). Each node calls a counting HTTP server, so the counts say
how many times each executed; the run's log has every node once and one end."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from plait.store import create_engine_from_url
from workers.conftest import Cluster

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="uses SIGSTOP"),
    pytest.mark.timeout(240),
]
PAUSE_S = 10.0  # the node the run is in when its worker stops: longer than the take-over


def _flow(port: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    return {
        "schema": "plait/flow@1",
        "id": "stalled",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "first", "type": "http", "config": {"url": base + "/first"}},
            {"id": "pause", "type": "delay", "config": {"seconds": PAUSE_S}},
            {"id": "second", "type": "http", "config": {"url": base + "/second"}},
            {"id": "out", "type": "output", "config": {"value": "{{second.body.ok}}"}},
        ],
        "edges": [
            {"source": "start", "target": "first"},
            {"source": "first", "target": "pause"},
            {"source": "pause", "target": "second"},
            {"source": "second", "target": "out"},
        ],
    }


def _lease_owner(db_url: str, run_id: str) -> str | None:
    async def read() -> str | None:
        engine = create_engine_from_url(db_url)
        try:
            async with engine.connect() as conn:
                row = await conn.execute(text("SELECT lease_owner FROM runs WHERE id = :id"), {"id": run_id})
                return row.scalar_one_or_none()
        finally:
            await engine.dispose()

    return asyncio.run(read())


def _events(c: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    events = []
    with c.stream("GET", f"/api/v1/runs/{run_id}/events") as resp:
        assert resp.status_code == 200
        for line in resp.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    return events


def _until(check: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_worker_stopped_past_its_lease_executes_nothing_more_of_the_run(
    cluster: Cluster, counter: Any
) -> None:
    db_url = cluster.env["PLAIT_DATABASE_URL"]
    cluster.serve()
    workers = [cluster.worker(name, concurrency=4) for name in ("w1", "w2")]
    for w in workers:
        cluster.wait_ready(w)
    with cluster.client() as c:
        r = c.post("/api/v1/flows", json={"document": _flow(counter.server_address[1])})
        assert r.status_code == 201, r.text
        assert c.post("/api/v1/flows/stalled/versions").status_code == 201
        r = c.post("/api/v1/flows/stalled/runs", params={"mode": "background"}, json={"inputs": {}})
        assert r.status_code == 202, r.text
        run_id = str(r.json()["id"])
        _until(lambda: "/first" in counter.calls, "the run did not reach `pause`")
        started = time.monotonic()
        first_owner = _lease_owner(db_url, run_id)
        assert first_owner is not None
        # A lease owner is "host:pid:suffix": the worker executing the run stops.
        stalled, other = sorted(workers, key=lambda w: f":{w.pid}:" not in first_owner)
        assert f":{stalled.pid}:" in first_owner, first_owner
        os.kill(stalled.pid, signal.SIGSTOP)
        try:
            _until(
                lambda: _lease_owner(db_url, run_id) not in (None, first_owner),
                "the other worker did not take the run over:\n" + other.log(),
            )
            taken = time.monotonic()
            assert taken - started < PAUSE_S - 1  # `pause` is still on, on both
        finally:
            os.kill(stalled.pid, signal.SIGCONT)

        def ended() -> bool:
            return c.get(f"/api/v1/runs/{run_id}").json()["status"] in ("completed", "failed", "cancelled")

        _until(ended, "the run did not end:\n" + other.log())
        # Both `pause`s have ended by now (the other worker's began at the take-over): a worker
        # that went on with the run has called /second.
        time.sleep(max(0.0, taken + PAUSE_S + 1.5 - time.monotonic()))
        run = c.get(f"/api/v1/runs/{run_id}").json()
        events = _events(c, run_id)
    assert run["status"] == "completed", run
    assert dict(counter.calls) == {"/first": 1, "/second": 1}, (stalled.log(), other.log())
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))
    finished = [e["node_id"] for e in events if e["type"] == "node_finished"]
    assert sorted(finished) == sorted(set(finished)) == ["first", "out", "pause", "second", "start"]
    assert [e["status"] for e in events if e["type"] == "run_finished"] == ["completed"]
    assert "another process took" in stalled.log()  # it knew, and stopped the run there
