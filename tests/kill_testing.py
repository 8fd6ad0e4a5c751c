"""What the kill -9 tests share: `plait serve` in a subprocess they can kill and restart, and a
real HTTP server on 127.0.0.1 that counts calls and holds one open until the test ends (so the
kill cuts that call short).

    with held_calls(lambda calls, path: path == "/item/3" and calls.count(path) == 1) as remote:
        srv = KillableServer(tmp_path, remote.server_address[1], api_key="k").start()
        ...
        srv.kill9(); srv.start()
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from plait_testing import free_port

Hold = Callable[[list[str], str], bool]  # (calls so far, this path) -> hold this call?
Body = Callable[[list[str]], bytes]  # (calls so far) -> the JSON answer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook
        server: Any = self.server
        server.calls.append(self.path)
        if server.hold(server.calls, self.path):
            server.release.wait(60)  # this call never gets its answer in time
        body = server.body(server.calls)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def held_calls(hold: Hold, body: Body = lambda calls: b'{"ok": true}') -> Iterator[Any]:
    """A counting HTTP server (`.calls`: the paths called, in order) that holds the calls `hold`
    picks until the block ends."""
    httpd: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.calls = []
    httpd.hold = hold
    httpd.body = body
    httpd.release = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.release.set()
        httpd.shutdown()
        httpd.server_close()


class KillableServer:
    """`plait serve` in a subprocess on a SQLite file, short leases so a restart takes over fast,
    allowed to call the counting server on `remote_port`."""

    def __init__(self, tmp: Path, remote_port: int, *, api_key: str) -> None:
        self.tmp = tmp
        self.db = tmp / "plait.db"
        self.remote_port = remote_port
        self.api_key = api_key
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.log_path = tmp / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> KillableServer:
        env = {
            **os.environ,
            "PLAIT_DATABASE_URL": f"sqlite+aiosqlite:///{self.db}",
            "PLAIT_API_KEY": self.api_key,
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
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("the server did not start:\n" + self.log_path.read_text())

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"x-api-key": self.api_key}, timeout=30)

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
