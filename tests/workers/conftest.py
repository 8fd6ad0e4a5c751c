"""Queue-mode fixtures: a real Redis (`redis-server` from Debian, a subprocess on a free
127.0.0.1 port, nothing saved to disk), a fresh PostgreSQL database on the server
PLAIT_TEST_POSTGRES_URL names (.ci/run starts one), real `plait serve` and `plait worker`
subprocesses, and a counting HTTP server the flows' nodes call (how many times each node
executed).

Locally the tests skip, saying why, when redis-server (tests/redis_fixture.py) or PostgreSQL is missing; under CI
(CI=true) a missing piece is a failure, so they cannot silently not run there."""

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

from redis_fixture import free_port, redis_server
from scratch_db import PG_URL, scratch_database_sync

API_KEY = "test-key-workers"


def require(reason: str | None) -> None:
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"queue-mode tests cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as server:
        yield server.url


@pytest.fixture
def pg_url() -> Iterator[str]:
    require(
        None if PG_URL else "PLAIT_TEST_POSTGRES_URL is not set (a PostgreSQL server to make a database on)"
    )
    with scratch_database_sync("plait_workers") as url:
        yield url


class _Counting(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook
        server: Any = self.server
        with server.lock:
            server.calls[self.path] += 1
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def counter() -> Iterator[Any]:
    """An HTTP server counting the calls per path (`counter.calls`)."""
    httpd: Any = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    httpd.daemon_threads = True
    httpd.calls = Counter()
    httpd.lock = threading.Lock()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


class Proc:
    """`plait serve` or `plait worker` as a subprocess, its stderr in a log file."""

    def __init__(self, tmp: Path, name: str, args: list[str], env: dict[str, str]) -> None:
        self.log_path = tmp / f"{name}.log"
        log = open(self.log_path, "a")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "plait.cli.main", *args],
            cwd=tmp,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        log.close()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # a warm Celery shutdown would wait for the runs
            self.proc.wait(10)


class Cluster:
    """An API server in queue mode and its workers, on one database and one Redis."""

    def __init__(self, tmp: Path, pg_url: str, redis_url: str, allow: str) -> None:
        self.tmp = tmp
        self.env = {
            **os.environ,
            "PLAIT_EXECUTOR": "celery",
            "PLAIT_DATABASE_URL": pg_url,
            "PLAIT_REDIS_URL": redis_url,
            "PLAIT_API_KEY": API_KEY,
            "PLAIT_LEASE_TTL_S": "1.5",
            "PLAIT_SWEEP_INTERVAL_S": "0.2",
            "PLAIT_HTTP_ALLOW": allow,
        }
        self.procs: list[Proc] = []
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve(self) -> Proc:
        self.port = free_port()
        proc = Proc(
            self.tmp, "server", ["serve", "--port", str(self.port), "--log-level", "warning"], self.env
        )
        self.procs.append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.proc.poll() is None, proc.log()
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return proc
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("the server did not start:\n" + proc.log())

    def worker(self, name: str, concurrency: int) -> Proc:
        proc = Proc(
            self.tmp,
            name,
            ["worker", "--name", name, "--concurrency", str(concurrency), "--log-level", "INFO"],
            self.env,
        )
        self.procs.append(proc)
        return proc

    def wait_ready(self, worker: Proc) -> None:
        """Until Celery says the worker consumes ("ready" in its log)."""
        deadline = time.monotonic() + 60
        while "ready." not in worker.log():
            assert worker.proc.poll() is None, worker.log()
            assert time.monotonic() < deadline, "the worker did not start:\n" + worker.log()
            time.sleep(0.1)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"x-api-key": API_KEY}, timeout=60)

    def stop(self) -> None:
        for p in self.procs:
            p.stop()


@pytest.fixture
def cluster(tmp_path: Path, pg_url: str, redis_url: str, counter: Any) -> Iterator[Cluster]:
    c = Cluster(tmp_path, pg_url, redis_url, f"127.0.0.1:{counter.server_address[1]}")
    try:
        yield c
    finally:
        c.stop()
