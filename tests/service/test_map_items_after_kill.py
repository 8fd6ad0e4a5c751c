"""A map cut by kill -9 resumes inside the map: the server (a subprocess on a SQLite file) is
killed while item 3 of a map waits for its HTTP answer; the restarted server continues the run
and calls only items 3 and 4 again: items 0 to 2 had finished and were checkpointed
(plait.engine.items), so they are not executed again.

The HTTP server the items call is real (127.0.0.1): it counts the calls per item and holds the
first call of item 3 open until the end of the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from plait_testing import free_port

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses kill -9")

API_KEY = "test-key-map-kill"
HELD = "/item/3"


class ItemHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook
        server: Any = self.server
        server.calls.append(self.path)
        if self.path == HELD and server.calls.count(HELD) == 1:
            server.release.wait(60)  # the first call of item 3 never gets its answer in time
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def remote() -> Iterator[Any]:
    httpd: Any = ThreadingHTTPServer(("127.0.0.1", 0), ItemHandler)
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


class Server:
    """`plait serve` in a subprocess on a SQLite file, short leases so a restart takes over fast."""

    def __init__(self, tmp: Path, remote_port: int) -> None:
        self.tmp = tmp
        self.remote_port = remote_port
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.log_path = tmp / "server.log"

    def start(self) -> Server:
        env = {
            **os.environ,
            "PLAIT_DATABASE_URL": f"sqlite+aiosqlite:///{self.tmp / 'plait.db'}",
            "PLAIT_API_KEY": API_KEY,
            "PLAIT_LEASE_TTL_S": "1.5",
            "PLAIT_SWEEP_INTERVAL_S": "0.2",
            "PLAIT_HTTP_ALLOW": f"127.0.0.1:{self.remote_port}",
        }
        self.port = free_port()
        args = ["serve", "--port", str(self.port), "--log-level", "warning"]
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "plait.cli.main", *args],
                cwd=self.tmp,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                text=True,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log_path.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("the server did not start:\n" + self.log_path.read_text())

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}", headers={"x-api-key": API_KEY}, timeout=30
        )

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


def map_flow(remote_port: int) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "items",
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "m",
                "type": "map",
                "config": {
                    "items": [0, 1, 2, 3, 4],
                    "max_concurrency": 1,
                    "body": {
                        "nodes": [
                            {
                                "id": "call",
                                "type": "http",
                                "config": {"url": f"http://127.0.0.1:{remote_port}/item/{{{{item}}}}"},
                                "timeout_s": 120,
                            },
                            {"id": "o", "type": "output", "config": {"value": "{{call.body.ok}}"}},
                        ],
                        "edges": [{"source": "call", "target": "o"}],
                    },
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{m}}"}},
        ],
        "edges": [{"source": "start", "target": "m"}, {"source": "m", "target": "out"}],
    }


def test_finished_map_items_are_not_executed_again_after_kill_9(tmp_path: Path, remote: Any) -> None:
    port = remote.server_address[1]
    srv = Server(tmp_path, port).start()
    try:
        with srv.client() as c:
            assert c.post("/api/v1/flows", json={"document": map_flow(port)}).status_code == 201
            assert c.post("/api/v1/flows/items/versions").status_code == 201
            r = c.post("/api/v1/flows/items/runs", params={"mode": "background"}, json={"inputs": {}})
            assert r.status_code == 202, r.text
            run_id = r.json()["id"]
            deadline = time.monotonic() + 20
            while HELD not in remote.calls:  # items 0-2 answered, item 3's call went out
                assert time.monotonic() < deadline
                time.sleep(0.02)
            time.sleep(0.3)  # item 2's record is committed well before item 3's call
        srv.kill9()

        srv.start()
        with srv.client() as c:
            deadline = time.monotonic() + 60
            while (run := c.get(f"/api/v1/runs/{run_id}").json())["status"] not in ("completed", "failed"):
                assert time.monotonic() < deadline, run["status"]
                time.sleep(0.1)
        assert run["status"] == "completed", run
        assert run["outputs"] == {"out": [True] * 5}
        assert run["nodes"]["m"]["attempts"] == 2
        calls = Counter(remote.calls)
        # items 0-2 once (before the kill), item 3 twice (cut short, then again), item 4 once
        assert calls == {"/item/0": 1, "/item/1": 1, "/item/2": 1, "/item/3": 2, "/item/4": 1}
    finally:
        srv.stop()
