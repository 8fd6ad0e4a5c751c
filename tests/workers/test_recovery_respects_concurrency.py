"""kill -9 of a worker holding six runs; the worker that recovers them runs with `--concurrency 2`:
it never executes more than two at once (recovery takes only free slots, the rest at later scans),
and every run finishes with each node once."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import httpx
import pytest

from workers.conftest import Cluster

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="uses kill -9"),
    pytest.mark.timeout(240),
]


def _flow(port: int) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    return {
        "schema": "plait/flow@1",
        "id": "counted",
        "inputs": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "first", "type": "http", "config": {"url": base + "/first/{{inputs.n}}"}},
            {"id": "pause", "type": "delay", "config": {"seconds": 1.5}},
            {"id": "second", "type": "http", "config": {"url": base + "/second/{{inputs.n}}"}},
        ],
        "edges": [
            {"source": "start", "target": "first"},
            {"source": "first", "target": "pause"},
            {"source": "pause", "target": "second"},
        ],
    }


def _events(c: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    out = []
    with c.stream("GET", f"/api/v1/runs/{run_id}/events") as resp:
        for line in resp.iter_lines():
            if line.startswith("data:"):
                out.append(json.loads(line[5:]))
    return out


def test_runs_recovered_by_a_worker_respect_its_concurrency(cluster: Cluster, counter: Any) -> None:
    port = counter.server_address[1]
    cluster.serve()
    first = cluster.worker("first", concurrency=8)
    cluster.wait_ready(first)
    with cluster.client() as c:
        assert c.post("/api/v1/flows", json={"document": _flow(port)}).status_code == 201
        assert c.post("/api/v1/flows/counted/versions").status_code == 201
        run_ids = []
        for n in range(6):
            r = c.post("/api/v1/flows/counted/runs", params={"mode": "background"}, json={"inputs": {"n": n}})
            assert r.status_code == 202, r.text
            run_ids.append(r.json()["id"])
        deadline = time.monotonic() + 60
        while sum(1 for k in counter.calls if k.startswith("/first/")) < 6:
            assert time.monotonic() < deadline, first.log()
            time.sleep(0.05)
        first.kill9()  # six runs in `pause`, their leases held by a dead worker
        killed_at = time.time()
        second = cluster.worker("second", concurrency=2)
        deadline = time.monotonic() + 120
        while any(c.get(f"/api/v1/runs/{r}").json()["status"] != "completed" for r in run_ids):
            assert time.monotonic() < deadline, second.log()
            time.sleep(0.2)
        marks: list[tuple[float, int]] = []
        for run_id in run_ids:
            for e in _events(c, run_id):
                if e.get("node_id") == "pause" and e["ts"] > killed_at:
                    if e["type"] == "node_started":
                        marks.append((e["ts"], 1))
                    elif e["type"] == "node_finished":
                        marks.append((e["ts"], -1))
    most = now = 0
    for _, step in sorted(marks):
        now += step
        most = max(most, now)
    assert sum(1 for _, step in marks if step == 1) == 6  # each run's `pause` again, on the second worker
    assert most <= 2, sorted(marks)
    for n in range(6):
        assert counter.calls[f"/second/{n}"] == 1, dict(counter.calls)
