"""A node re-run after a crash tells the truth: the server (a subprocess on a SQLite file) is
killed with SIGKILL while an `http` node waits for its answer; the restarted server runs the node
again (at least once, as documented), and the run's log shows two attempts and why.

The HTTP server the node calls is real too (127.0.0.1): it counts the calls and holds the first
one open until the end of the test, so the first attempt is cut short by the kill."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from plait_testing import free_port

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses kill -9")

API_KEY = "test-key-rerun"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook
        server: Any = self.server
        server.calls.append(self.path)
        if len(server.calls) == 1:
            server.release.wait(60)  # the first call never gets its answer in time
        body = json.dumps({"answer": len(server.calls)}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def remote() -> Iterator[Any]:
    httpd: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.calls = []
    httpd.release = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.release.set()
        httpd.shutdown()
        httpd.server_close()


class _Server:
    def __init__(self, tmp: Path, remote_port: int) -> None:
        self.tmp = tmp
        self.db = tmp / "plait.db"
        self.remote_port = remote_port
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.log_path = tmp / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> _Server:
        env = {
            **os.environ,
            "PLAIT_DATABASE_URL": f"sqlite+aiosqlite:///{self.db}",
            "PLAIT_API_KEY": API_KEY,
            "PLAIT_LEASE_TTL_S": "1.5",
            "PLAIT_SWEEP_INTERVAL_S": "0.2",
            "PLAIT_HTTP_ALLOW": f"127.0.0.1:{self.remote_port}",
        }
        self.port = free_port()
        log = open(self.log_path, "a")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "plait.cli.main",
                "serve",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            cwd=self.tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
        )
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log_path.read_text()
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("the server did not start:\n" + self.log_path.read_text())

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"x-api-key": API_KEY}, timeout=30)

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


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
    srv = _Server(tmp_path, port).start()
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
