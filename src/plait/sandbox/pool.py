"""SandboxPool: pre-started sandbox workers, one call each, driven from any asyncio loop.

A worker is `python -I child.py FD` started in its own session (so its process group id is its
pid) with a minimal environment. It imports the runner and waits on stdin; a call hands it one
request, reads the response from a dedicated pipe, drains stdout/stderr in bounded chunks and
then kills the worker's whole process group. A background thread keeps `size` idle workers ready,
so a call does not pay for interpreter start-up; dead idle workers are discarded and replaced.

A call that allows network gets the process-wide egress proxy (`plait.net.egress`, started on
first use): the worker relays every connection of the user code to it, and it applies the SSRF
guard. Two operator switches are read at every call: ``PLAIT_SANDBOX_NETWORK=off`` refuses
calls that ask for network, ``PLAIT_SANDBOX_SECCOMP=off`` runs user code without the seccomp
filter (otherwise a host without it refuses to run user code). See docs/sandbox.md.

Workers are plain `subprocess.Popen` objects and the pipes are read with `loop.add_reader`, so
one pool serves every event loop of the process (pytest creates one per test).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from plait.net.egress import egress_proxy
from plait.sandbox.child import find_unserialisable
from plait.sandbox.types import Limits, SandboxResult

CHILD_PATH = str(Path(__file__).with_name("child.py"))
_ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL")
_GRACE_S = 2.0  # parent-side slack over the runner's own timeout (start-up, reporting)
_SIGNAL_NAMES = {int(s): s.name for s in signal.Signals}
NETWORK_ENV = "PLAIT_SANDBOX_NETWORK"  # "off": calls asking for network are refused
SECCOMP_ENV = "PLAIT_SANDBOX_SECCOMP"  # "off": run user code without the seccomp filter
_OFF = frozenset({"off", "0", "false", "no", "disabled"})
# Root pools run call N as uid PER_CALL_UID_BASE + (its worker's pid): unique among live calls on
# the host (pid_max <= 2**22), inside systemd's container range, far from real accounts.
PER_CALL_UID_BASE = 1_500_000_000


def switched_off(name: str) -> bool:
    """True when the operator set the environment variable `name` to off (off, 0, false, no)."""
    return os.environ.get(name, "").strip().lower() in _OFF


def _minimal_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _ENV_ALLOWLIST if os.environ.get(k)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    return env


def _resolve_user(user: str | int | None) -> tuple[int, int] | None:
    """The (uid, gid) to run code as, when this process is root and can drop privileges."""
    if user is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    if isinstance(user, int):
        return user, user
    try:
        import pwd

        entry = pwd.getpwnam(user)
        return entry.pw_uid, entry.pw_gid
    except (ImportError, KeyError):
        return (65534, 65534) if user == "nobody" else None


class _Worker:
    __slots__ = ("proc", "resp_fd", "pid", "fresh")

    def __init__(self, proc: subprocess.Popen[bytes], resp_fd: int, fresh: bool) -> None:
        self.proc = proc
        self.resp_fd = resp_fd
        self.pid = proc.pid
        self.fresh = fresh  # spawned for this call (cold) rather than taken from the idle set

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ready(self) -> bool:
        """True once the worker has started and imported its modules (it wrote b"R")."""
        try:
            return bool(select.select([self.resp_fd], [], [], 0)[0]) and self.alive()
        except (OSError, ValueError):
            return False

    def kill_group(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)

    def terminate(self) -> None:
        """Stop the call now: SIGTERM makes the supervisor SIGKILL its runner (which takes the
        runner's PID namespace down with it) and exit; then SIGKILL the whole process group."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 0.2
            while self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.001)
        self.kill_group()

    def reap_now(self, timeout: float = 1.0) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        self.close_fds()

    async def reap(self, timeout: float = 1.0) -> None:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        self.reap_now(0.5)

    def close_fds(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.resp_fd)
        self.resp_fd = -1
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def discard(self) -> None:
        self.kill_group()
        self.reap_now(0.5)


class _Collector:
    """Reads a pipe from the event loop, keeping at most `cap` bytes and counting the rest."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, cap: int) -> None:
        self.loop, self.fd, self.cap = loop, fd, cap
        self.buf = bytearray()
        self.dropped = 0
        self.done: asyncio.Future[None] = loop.create_future()
        self.closed = False
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, 1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        room = self.cap - len(self.buf)
        if room > 0:
            self.buf += data[:room]
        if len(data) > room:
            self.dropped += len(data) - max(room, 0)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.loop.remove_reader(self.fd)
            if not self.done.done():
                self.done.set_result(None)

    def text(self) -> tuple[str, bool]:
        text = self.buf.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[... output truncated: {self.dropped} more bytes not shown]"
        return text, bool(self.dropped)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _write_all(loop: asyncio.AbstractEventLoop, fd: int, data: bytes) -> None:
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
            continue
        except BlockingIOError:
            pass
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_writer(fd, _resolve, ready)
        try:
            await ready
        finally:
            loop.remove_writer(fd)


def _rmtree(path: str) -> None:
    def retry(func: Any, target: str, _exc: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            os.chmod(target, stat.S_IRWXU)
        with contextlib.suppress(OSError):
            func(target)

    shutil.rmtree(path, onerror=retry)


class _WorkerGone(Exception):
    """The worker died before it took the request (e.g. killed while idle)."""


class SandboxPool:
    """Keeps `size` pre-started workers; `size=0` starts a fresh interpreter per call (cold)."""

    def __init__(
        self,
        size: int = 2,
        *,
        python: str | None = None,
        user: str | int | None = "nobody",
        scratch_root: str | None = None,
        per_call_uid: bool = True,
        namespaces: bool = True,
    ) -> None:
        self.size = max(0, size)
        self.python = python or sys.executable
        self._ids = _resolve_user(user)  # the shared uid; with per_call_uid only a fallback
        self.per_call_uid = per_call_uid
        self.namespaces = namespaces  # False only to test hosts without namespaces
        self.scratch_root = scratch_root
        self._env = _minimal_env()
        self._idle: deque[_Worker] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> SandboxPool:
        """Start the background thread that keeps the idle workers topped up."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the sandbox pool is closed")
            if self.size and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._refill, name="plait-sandbox-pool", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return self

    async def warm(self, timeout: float = 10.0) -> None:
        """Wait until `size` idle workers are ready."""
        self.start()
        deadline = time.monotonic() + timeout
        while self.idle_count() < self.size and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    def idle_count(self) -> int:
        """Idle workers that are started and ready to take a call."""
        with self._cond:
            return sum(1 for w in self._idle if w.ready())

    def idle_pids(self) -> list[int]:
        with self._cond:
            return [w.pid for w in self._idle]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = list(self._idle), deque()
            self._cond.notify_all()
        for worker in idle:
            worker.discard()

    async def __aenter__(self) -> SandboxPool:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        rfd, wfd = os.pipe()
        try:
            proc = subprocess.Popen(
                [self.python, "-I", CHILD_PATH, str(wfd)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(wfd,),
                start_new_session=True,
                env=self._env,
                cwd="/",
            )
        except BaseException:
            os.close(rfd)
            raise
        finally:
            os.close(wfd)
        return _Worker(proc, rfd, fresh=True)

    def _refill(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    dead = [w for w in self._idle if not w.alive()]  # crashed or killed while idle
                    for w in dead:
                        self._idle.remove(w)
                        w.close_fds()
                    if len(self._idle) < self.size:
                        break
                    self._cond.wait(timeout=1.0)
                if self._closed:
                    return
            try:
                worker = self._spawn()
            except OSError:
                time.sleep(0.5)
                continue
            worker.fresh = False
            with self._cond:
                if self._closed:
                    worker.discard()
                    return
                self._idle.append(worker)

    def _acquire(self) -> _Worker:
        worker = None
        dead: list[_Worker] = []
        with self._cond:
            if self._closed:
                raise RuntimeError("the sandbox pool is closed")
            for candidate in list(self._idle):  # the first ready one, else the oldest alive one
                if not candidate.alive():
                    self._idle.remove(candidate)
                    dead.append(candidate)
                elif worker is None or (not worker.ready() and candidate.ready()):
                    worker = candidate
            if worker is not None:
                self._idle.remove(worker)
            self._cond.notify_all()
        if self.size and (self._thread is None or not self._thread.is_alive()):
            self.start()
        for w in dead:
            w.discard()
        return worker if worker is not None else self._spawn()

    # ------------------------------------------------------------------ calls
    async def run_code(
        self,
        source: str,
        function: str = "main",
        kwargs: dict[str, Any] | None = None,
        *,
        limits: Limits | None = None,
        network: bool = False,
    ) -> SandboxResult:
        """Run `function(**kwargs)` from `source` in a fresh sandboxed process."""
        limits = limits or Limits()
        kwargs = dict(kwargs or {})
        t0 = time.perf_counter()
        if not isinstance(function, str) or not function.isidentifier():
            raise ValueError(f"function must be a Python identifier, got {function!r}")
        bad = find_unserialisable(kwargs, "arguments")
        if bad:
            return SandboxResult(
                ok=False,
                error=f"{bad[0]} is not JSON-serialisable (type {bad[1]!r})",
                error_kind="arguments",
            )
        if network and switched_off(NETWORK_ENV):
            return SandboxResult(
                ok=False,
                error=(
                    f"network access for user code is turned off on this server ({NETWORK_ENV}=off); "
                    "remove network: true or ask the operator"
                ),
                error_kind="network_disabled",
            )
        scratch = tempfile.mkdtemp(prefix="plait-sbx-", dir=self.scratch_root)
        request: dict[str, Any] = {
            "source": source,
            "function": function,
            "kwargs": kwargs,
            "limits": limits.to_request(),
            "network": bool(network),
            "scratch": scratch,
            "env": self._env,
            "seccomp": "off" if switched_off(SECCOMP_ENV) else "required",
            "namespaces": self.namespaces,
        }
        if network:
            request["egress"] = egress_proxy().socket_path
        if self._ids is not None:
            request["uid"], request["gid"] = self._ids
            if self.per_call_uid:
                request["uid_base"] = PER_CALL_UID_BASE
        try:
            payload = json.dumps(request).encode()
            for attempt in (1, 2):
                # a retry starts its own worker: the other idle ones may be dying too
                worker = self._acquire() if attempt == 1 else self._spawn()
                try:
                    result = await self._call(worker, payload, limits)
                except _WorkerGone:
                    if attempt == 2 or worker.fresh:
                        raise
                    continue
                result.duration_ms = (time.perf_counter() - t0) * 1000
                return result
            raise AssertionError("unreachable")
        except _WorkerGone as exc:
            return SandboxResult(
                ok=False, error=f"the sandbox worker could not start: {exc}", error_kind="internal"
            )
        finally:
            _rmtree(scratch)

    async def _call(self, worker: _Worker, payload: bytes, limits: Limits) -> SandboxResult:
        loop = asyncio.get_running_loop()
        assert worker.proc.stdin and worker.proc.stdout and worker.proc.stderr
        resp = _Collector(loop, worker.resp_fd, limits.result_bytes + 2 * (1 << 20))
        out = _Collector(loop, worker.proc.stdout.fileno(), limits.output_bytes)
        err = _Collector(loop, worker.proc.stderr.fileno(), limits.output_bytes)
        timed_out = False
        try:
            try:
                await _write_all(loop, worker.proc.stdin.fileno(), payload)
                worker.proc.stdin.close()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise _WorkerGone(f"worker {worker.pid} exited with {worker.proc.poll()}") from exc
            try:
                async with asyncio.timeout(limits.timeout_s + _GRACE_S + (1.0 if worker.fresh else 0.0)):
                    await resp.done
            except TimeoutError:
                timed_out = True
                worker.terminate()
            worker.kill_group()  # nothing the call started outlives it
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    await asyncio.gather(out.done, err.done)
            await worker.reap()
        except BaseException:  # cancelled (or a bug): kill everything before anything else
            worker.terminate()
            worker.reap_now(0.5)
            raise
        finally:
            for c in (resp, out, err):
                c.close()
            worker.close_fds()
        data = bytes(resp.buf)
        if not data.startswith(b"RA") and not timed_out:
            # The worker died before it accepted the request (e.g. killed while idle): safe to retry.
            raise _WorkerGone(f"worker {worker.pid} exited with {worker.proc.returncode}")
        result = self._result(data[2:], timed_out, limits, worker)
        result.stdout, result.stdout_truncated = out.text()
        result.stderr, result.stderr_truncated = err.text()
        return result

    def _result(self, data: bytes, timed_out: bool, limits: Limits, worker: _Worker) -> SandboxResult:
        res = SandboxResult(ok=False, worker_pid=worker.pid)
        head, sep, body = data.partition(b"\n")
        try:
            header = json.loads(head) if sep else None
        except ValueError:
            header = None
        if header is None:
            if timed_out:
                res.error_kind, res.error = "timeout", f"timed out after {limits.timeout_s:g} s"
            else:
                status = worker.proc.returncode
                res.error_kind = "internal"
                res.error = f"the sandbox worker died unexpectedly (status {status})"
            return res
        res.isolation = header.get("isolation")
        state = header.get("state")
        if state == "timeout" or timed_out:
            res.error_kind = "timeout"
            res.error = f"timed out after {limits.timeout_s:g} s (wall clock); the process group was killed"
            return res
        if state == "too_large":
            res.error_kind = "too_large"
            res.error = f"the result is larger than the limit of {limits.result_bytes} bytes"
            return res
        try:
            outcome = json.loads(body) if body else None
        except ValueError:
            outcome = None
        if not isinstance(outcome, dict):
            return self._no_outcome(res, header, limits)
        if outcome.get("ok") is True:
            res.ok, res.value = True, outcome.get("value")
            return res
        res.error_kind = str(outcome.get("kind") or "exception")
        res.error = str(outcome.get("error") or "the code failed")
        res.traceback_lines = [str(x) for x in outcome.get("traceback") or []]
        if res.error_kind == "exit":
            res.exit_code = outcome.get("exit_code")
        return res

    @staticmethod
    def _no_outcome(res: SandboxResult, header: dict[str, Any], limits: Limits) -> SandboxResult:
        sig = header.get("signal")
        if sig is not None:
            name = _SIGNAL_NAMES.get(sig, f"signal {sig}")
            if sig == getattr(signal, "SIGXCPU", -1):
                res.error_kind, res.error = (
                    "cpu",
                    f"CPU time limit exceeded ({limits.cpu_s or limits.timeout_s:g} s)",
                )
            elif sig == signal.SIGKILL:
                res.error_kind = "crash"
                res.error = (
                    "the code was killed by SIGKILL (the CPU time limit, "
                    f"{limits.cpu_s or limits.timeout_s:g} s, or the system's memory killer)"
                )
            else:
                res.error_kind, res.error = "crash", f"the code crashed ({name})"
            return res
        code = header.get("exit_code")
        res.exit_code = code
        res.error_kind = "exit"
        res.error = f"the process exited with status {code} before returning a result"
        return res


_default_pool: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process-wide pool (2 warm workers), started on first use and closed at exit."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._closed:
            _default_pool = SandboxPool().start()
            atexit.register(_default_pool.close)
        return _default_pool


async def run_code(
    source: str,
    function: str = "main",
    kwargs: dict[str, Any] | None = None,
    *,
    limits: Limits | None = None,
    network: bool = False,
) -> SandboxResult:
    """Run `function(**kwargs)` defined in `source` in the default pool's sandbox."""
    return await default_pool().run_code(source, function, kwargs, limits=limits, network=network)
