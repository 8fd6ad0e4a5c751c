"""A real Redis server for the tests: `redis-server` as a subprocess on a free port of 127.0.0.1,
no persistence. Locally the tests that need it skip, saying why, when `redis-server` is missing;
under CI (CI=true) they fail instead, since .ci/run installs it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from plait_testing import free_port


def redis_server_binary() -> str:
    """The path of `redis-server`; skips the test (fails it under CI) when there is none."""
    path = shutil.which("redis-server")
    if path is None:
        reason = "redis-server is not installed (apt-get install -y redis-server)"
        if os.environ.get("CI"):
            pytest.fail(f"Redis tests cannot run in CI: {reason}")
        pytest.skip(reason)
    return path


class RedisServer:
    """`redis-server --port N --save '' --appendonly no`; `stop` and `start` again on the same port."""

    def __init__(self, directory: Path) -> None:
        self.binary = redis_server_binary()
        self.directory = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = directory / f"redis-{self.port}.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
                "--logfile",
                str(self.log_path),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("redis-server did not start:\n" + self.log())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


@contextmanager
def redis_server(directory: Path) -> Iterator[RedisServer]:
    server = RedisServer(directory).start()
    try:
        yield server
    finally:
        server.stop()


__all__ = ["RedisServer", "free_port", "redis_server", "redis_server_binary"]
