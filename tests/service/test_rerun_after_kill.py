"""A node re-run after a crash tells the truth: the server (a subprocess on a SQLite file) is
killed with SIGKILL while an `http` node waits for its answer; the restarted server runs the node
again (at least once, as documented), and the run's log shows two attempts and why.

The HTTP server the node calls is real too (127.0.0.1): it counts the calls and holds the first
one open until the end of the test, so the first attempt is cut short by the kill."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kill_testing import KillableServer, held_calls

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses kill -9")

API_KEY = "test-key-rerun"


def _hold_the_first_call(calls: list[str], path: str) -> bool:
    return len(calls) == 1  # the first call never gets its answer in time


def _answer(calls: list[str]) -> bytes:
    return json.dumps({"answer": len(calls)}).encode()


@pytest.fixture
def remote() -> Iterator[Any]:
    with held_calls(_hold_the_first_call, _answer) as httpd:
        yield httpd


def _flow(remote_port: int) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "call",
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "call",
                "type": "http",
                "config": {"url": f"http://127.0.0.1:{remote_port}/work"},
                "timeout_s": 120,
            },
            {"id": "out", "type": "output", "config": {"value": "{{call.body.answer}}"}},
        ],
        "edges": [{"source": "start", "target": "call"}, {"source": "call", "target": "out"}],
    }


def _stored_events(db: Path, run_id: str) -> list[tuple[str, str | None, dict[str, Any]]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT type, node_id, data FROM run_events WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
    finally:
        con.close()
    return [(t, n, json.loads(d) if d else {}) for t, n, d in rows]


def _sse(c: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    events = []
    with c.stream("GET", f"/api/v1/runs/{run_id}/events") as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: ") :]))
    return events


def test_a_node_cut_short_by_kill_9_is_rerun_as_attempt_2_with_the_reason(
    tmp_path: Path, remote: Any
) -> None:
    port = remote.server_address[1]
    srv = KillableServer(tmp_path, port, api_key=API_KEY).start()
    try:
        with srv.client() as c:
            assert c.post("/api/v1/flows", json={"document": _flow(port)}).status_code == 201
            assert c.post("/api/v1/flows/call/versions").status_code == 201
            r = c.post("/api/v1/flows/call/runs", params={"mode": "background"}, json={"inputs": {}})
            assert r.status_code == 202, r.text
            run_id = r.json()["id"]
            deadline = time.monotonic() + 20
            while not remote.calls:  # the node's HTTP call went out
                assert time.monotonic() < deadline
                time.sleep(0.02)
        srv.kill9()

        srv.start()
        with srv.client() as c:
            deadline = time.monotonic() + 60
            while (run := c.get(f"/api/v1/runs/{run_id}").json())["status"] not in ("completed", "failed"):
                assert time.monotonic() < deadline, run["status"]
                time.sleep(0.1)
            assert run["status"] == "completed", run
            assert run["outputs"] == {"out": 2}
            assert run["nodes"]["call"]["attempts"] == 2
            streamed = [e for e in _sse(c, run_id) if e.get("node_id") == "call"]
        assert remote.calls == ["/work", "/work"]  # the call went out twice: at least once

        # The log says so: attempt 1 started, the server stopped, attempt 2 ran, and why.
        stored = [(t, d.get("attempt"), d) for t, n, d in _stored_events(srv.db, run_id) if n == "call"]
        assert [(t, a) for t, a, _ in stored] == [
            ("node_started", 1),
            ("node_rerun", 2),
            ("node_started", 2),
            ("node_finished", 2),
        ]
        reason = stored[1][2]["reason"]
        assert "the server stopped while attempt 1 of this node ran" in reason
        assert [(e["type"], e.get("attempt")) for e in streamed] == [(t, a) for t, a, _ in stored]
        assert streamed[-1]["output"]["body"] == {"answer": 2}  # stored once, given back whole
    finally:
        srv.stop()
