"""A sub-flow's child cut by kill -9 resumes inside the child: the server (a subprocess on a SQLite
file) is killed while the child's second step waits for its HTTP answer; the restarted server's
recovery takes the parent (never the child row on its own), the parent runs its subflow node again,
which finds the same child run (plait.engine.children) and continues it: the child's first step
had finished and is not called again, the cut step is called again, the last one once.

The HTTP server the steps call is real (127.0.0.1): it counts the calls per step and holds the
first call of step 1 open until the end of the test."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kill_testing import KillableServer, held_calls

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses kill -9")

API_KEY = "test-key-subflow-kill"
HELD = "/step/1"


def _hold_step_1(calls: list[str], path: str) -> bool:
    return path == HELD and calls.count(HELD) == 1  # its first call never gets its answer in time


@pytest.fixture
def steps() -> Iterator[Any]:
    with held_calls(_hold_step_1) as httpd:
        yield httpd


def child_flow(port: int) -> dict[str, Any]:
    def step(i: int) -> dict[str, Any]:
        return {
            "id": f"s{i}",
            "type": "http",
            "config": {"url": f"http://127.0.0.1:{port}/step/{i}"},
            "timeout_s": 120,
        }

    return {
        "schema": "plait/flow@1",
        "id": "inner",
        "nodes": [
            {"id": "start", "type": "start"},
            step(0),
            step(1),
            step(2),
            {"id": "o", "type": "output", "config": {"name": "ok", "value": "{{s2.body.ok}}"}},
        ],
        "edges": [
            {"source": "start", "target": "s0"},
            {"source": "s0", "target": "s1"},
            {"source": "s1", "target": "s2"},
            {"source": "s2", "target": "o"},
        ],
    }


PARENT = {
    "schema": "plait/flow@1",
    "id": "outer",
    "nodes": [
        {"id": "start", "type": "start"},
        {"id": "sub", "type": "subflow", "config": {"flow": "inner", "inputs": {}}},
        {"id": "out", "type": "output", "config": {"value": "{{sub.ok}}"}},
    ],
    "edges": [{"source": "start", "target": "sub"}, {"source": "sub", "target": "out"}],
}


def test_a_child_cut_by_kill_9_continues_without_its_finished_steps(tmp_path: Path, steps: Any) -> None:
    port = steps.server_address[1]
    srv = KillableServer(tmp_path, port, api_key=API_KEY).start()
    try:
        with srv.client() as c:
            for doc in (child_flow(port), PARENT):
                assert c.post("/api/v1/flows", json={"document": doc}).status_code == 201
                assert c.post(f"/api/v1/flows/{doc['id']}/versions").status_code == 201
            r = c.post("/api/v1/flows/outer/runs", params={"mode": "background"}, json={"inputs": {}})
            assert r.status_code == 202, r.text
            run_id = r.json()["id"]
            child_id = f"{run_id}.sub"
            deadline = time.monotonic() + 20
            while HELD not in steps.calls:  # step 0 answered, step 1's call went out
                assert time.monotonic() < deadline
                time.sleep(0.02)
            time.sleep(0.3)  # step 0's delta is committed well before step 1's call
            child = c.get(f"/api/v1/runs/{child_id}").json()
            assert child["status"] == "running" and child["parent_run_id"] == run_id
            assert child["nodes"]["s0"]["status"] == "ok"
        srv.kill9()

        srv.start()
        with srv.client() as c:
            deadline = time.monotonic() + 60
            while (run := c.get(f"/api/v1/runs/{run_id}").json())["status"] not in ("completed", "failed"):
                assert time.monotonic() < deadline, run["status"]
                time.sleep(0.1)
            child = c.get(f"/api/v1/runs/{child_id}").json()
            listed = c.get("/api/v1/runs", params={"parent_run_id": run_id}).json()
        assert run["status"] == "completed", run
        assert run["outputs"] == {"out": True}
        assert run["nodes"]["sub"]["attempts"] == 2  # the cut attempt, then the one that continued
        assert [r["id"] for r in run["children"]] == [child_id] == [r["id"] for r in listed]
        assert child["status"] == "completed" and child["outputs"] == {"ok": True}
        assert child["nodes"]["s0"]["attempts"] == 1 and child["nodes"]["s1"]["attempts"] == 2
        # step 0 once (before the kill), step 1 twice (cut short, then again), step 2 once
        assert Counter(steps.calls) == {"/step/0": 1, "/step/1": 2, "/step/2": 1}
    finally:
        srv.stop()
