"""The sandbox worker process (stdlib only; run by path: ``python -I child.py RESPONSE_FD``).

One worker serves exactly one call, in two processes:

* the **supervisor** (this process, started by the pool and kept warm: interpreter up, modules
  imported) reads one JSON request from stdin, enters fresh PID and network namespaces where the
  OS allows it, starts the egress relay when the call allows network (``relay.py``: the runner's
  only way out, to the parent's SSRF-guarded proxy), forks the **runner**, enforces the
  wall-clock timeout, and writes one response to RESPONSE_FD;
* the **runner** (the fork; PID 1 of the new PID namespace when there is one) applies rlimits,
  ``no_new_privs``, a Landlock filesystem ruleset, drops to an unprivileged uid (one of its own
  per call) when started as root, installs the seccomp filter (``syscall_filter.py``), then
  executes the user's source and calls the requested function.

The runner sends the supervisor two lines on a private pipe: the isolation report (written
before any user code runs, so it cannot be forged by it) and the outcome. The supervisor writes
``R`` (ready), ``A`` (request accepted) and then ``<header json>\\n<outcome json>`` to
RESPONSE_FD; stdout/stderr belong to the user code.

When the PID-namespace init (the runner) dies, the kernel kills every process left in the
namespace, so nothing the user code started survives the call.
"""

from __future__ import annotations

import builtins
import ctypes
import errno
import importlib.util
import json
import linecache
import os
import resource
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

# Imported while still privileged and before the clock starts, so user code gets them for free.
_PRELOAD = (
    "base64", "bisect", "calendar", "collections", "copy", "csv", "dataclasses", "datetime", "decimal",
    "enum", "fractions", "functools", "hashlib", "heapq", "html", "io", "itertools", "math", "operator",
    "random", "re", "statistics", "string", "tempfile", "textwrap", "typing", "unicodedata",
    "urllib.parse", "uuid",
)  # fmt: skip

USER_FILENAME = "<code>"
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
_CHUNK = 1 << 16

_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

_child_pid = 0  # the runner, killed by the supervisor's SIGTERM handler
# Set by the supervisor before it forks (modules loaded by path: this script cannot import plait).
_syscall_filter: ModuleType | None = None
_seccomp: ModuleType | None = None  # the pyseccomp binding, imported while unrestricted
_seccomp_missing: str | None = None  # why the binding is unavailable


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


LIBC = _libc()


def _call(name: str, *args: object) -> int:
    """A libc call; returns 0 or the errno (ENOSYS when the symbol does not exist)."""
    fn = getattr(LIBC, name, None) if LIBC is not None else None
    if fn is None:
        return errno.ENOSYS
    return 0 if fn(*args) == 0 else (ctypes.get_errno() or errno.EPERM)


# ----------------------------------------------------------------------------- supervisor
def _read_all(fd: int, limit: int = 256 << 20) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ValueError("request too large")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[n:]


def _load_sibling(name: str) -> ModuleType:
    """Import ``<name>.py`` next to this file (run by path, this script cannot import plait)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_plait_sandbox_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _enter_namespaces(enabled: bool = True) -> dict[str, Any]:
    """Unshare a PID and a network namespace for the runner (with network allowed too: its only
    way out is then the egress relay). `enabled=False` skips them (to test degraded hosts)."""
    info = {"pid_namespace": False, "network": False, "user_namespace": False}
    if not sys.platform.startswith("linux") or not enabled:
        return info
    wanted = CLONE_NEWPID | CLONE_NEWNET
    if _call("unshare", wanted) != 0:
        # Unprivileged: a user namespace first (when the kernel allows it) grants the rest.
        uid, gid = os.geteuid(), os.getegid()
        if os.geteuid() == 0 or _call("unshare", CLONE_NEWUSER) != 0:
            if _call("unshare", CLONE_NEWPID) == 0:
                info["pid_namespace"] = True
            return info
        info["user_namespace"] = True
        try:
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"{gid} {gid} 1")
        except OSError:
            pass
        if _call("unshare", wanted) != 0:
            return info
    info["pid_namespace"] = True
    info["network"] = True
    return info


def _on_term(signum: int, frame: object) -> None:
    """The pool stops a call: kill the runner (and with it its PID namespace) and reap it, so no
    zombie lingers in the process group, then exit."""
    if _child_pid:
        try:
            os.kill(_child_pid, signal.SIGKILL)
            os.waitpid(_child_pid, 0)
        except OSError:
            pass
    os._exit(128 + signum)


def _wait_child(
    pid: int, rfd: int, timeout_s: float, cap: int, relay: Any = None
) -> tuple[bytes, str, int | None]:
    """Collect the runner's report until it exits or the deadline passes, handing the runner's
    connections to the egress proxy meanwhile; returns (data, state, status)."""
    deadline = time.monotonic() + timeout_s
    pidfd = -1
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pass
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    if pidfd >= 0:
        poller.register(pidfd, select.POLLIN)
    relay_fd = relay.fileno() if relay is not None else -1
    if relay_fd >= 0:
        poller.register(relay_fd, select.POLLIN)
    buf = bytearray()
    state = "running"
    reading = True
    reaped = False
    status = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            state = "timeout"
            break
        wait_ms = remaining * 1000 if pidfd >= 0 else min(remaining * 1000, 5)
        try:
            events = poller.poll(max(1, int(wait_ms)))
        except InterruptedError:
            continue
        exited = False
        for fd, _ev in events:
            if fd == rfd and reading:
                chunk = os.read(rfd, _CHUNK)
                if not chunk:
                    poller.unregister(rfd)
                    reading = False
                else:
                    buf += chunk
                    if len(buf) > cap:
                        state = "too_large"
            elif fd == pidfd:
                exited = True
            elif fd == relay_fd:
                relay.hand_off()
        if state == "too_large":
            break
        if pidfd < 0:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                reaped = exited = True
        if exited:
            state = "exited"
            break
    if state != "exited":
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if not reaped:
        _, status = os.waitpid(pid, 0)  # for a PID-namespace init this returns once the namespace is empty
    global _child_pid
    _child_pid = 0  # reaped: the SIGTERM handler must not signal a pid that may be reused
    if state == "exited":  # drain what is left in the pipe without blocking on stray writers
        os.set_blocking(rfd, False)
        while len(buf) <= cap:
            try:
                chunk = os.read(rfd, _CHUNK)
            except BlockingIOError:
                break
            if not chunk:
                break
            buf += chunk
        if len(buf) > cap:
            state = "too_large"
    if pidfd >= 0:
        os.close(pidfd)
    return bytes(buf), state, status


def _uid_for_call(req: dict[str, Any]) -> bool:
    """Root pools run each call as a uid of its own (`uid_base` + this worker's pid, unique among
    live calls on the host), so RLIMIT_NPROC (counted per uid) is a per-call limit. Falls back to
    the pool's shared uid where that uid cannot be used (e.g. a container without it mapped)."""
    base = req.get("uid_base")
    if base is None:
        os.chown(req["scratch"], req["uid"], req["gid"])
        return False
    uid = int(base) + os.getpid()
    try:
        os.chown(req["scratch"], uid, uid)
    except OSError:
        os.chown(req["scratch"], req["uid"], req["gid"])
        return False
    req["uid"] = req["gid"] = uid
    return True


def _start_relay(req: dict[str, Any], in_netns: bool, relay_module: ModuleType) -> Any:
    """The egress relay of a call that allows network; on failure the runner reports why."""
    try:
        relay = relay_module.Relay(req["egress"], in_netns)
    except (OSError, KeyError, TypeError) as exc:
        req["setup_error"] = f"the egress relay could not start: {type(exc).__name__}: {exc}"
        return None
    req["egress_port"] = relay.port
    return relay


def supervise(resp_fd: int) -> None:
    global _child_pid, _syscall_filter, _seccomp, _seccomp_missing
    signal.signal(signal.SIGTERM, _on_term)
    for name in _PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    _syscall_filter = _load_sibling("syscall_filter")
    relay_module = _load_sibling("relay")
    _seccomp, _seccomp_missing = _syscall_filter.load_binding()  # runs ldconfig: only while unrestricted
    _write_all(resp_fd, b"R")  # ready: the pool prefers workers that got this far
    raw = _read_all(0)
    if not raw.strip():
        os._exit(0)  # the pool closed us without work
    req = json.loads(raw)
    _write_all(resp_fd, b"A")  # accepted: from here on the call is not safe to repeat elsewhere
    started = time.monotonic()
    limits = req["limits"]
    ns = _enter_namespaces(bool(req.get("namespaces", True)))
    relay = _start_relay(req, ns["network"], relay_module) if req.get("network") else None
    drop = os.geteuid() == 0 and req.get("uid") is not None
    ns["uid_per_call"] = _uid_for_call(req) if drop else False
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # ------------------------------------------------------------ the runner
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.close(rfd)
            os.close(resp_fd)
            if relay is not None:
                relay.close()  # the runner must not accept or hand off connections itself
            _runner(req, wfd, ns, drop)
        finally:
            os._exit(70)
    _child_pid = pid
    os.close(wfd)
    cap = int(limits["result_bytes"]) + (1 << 20)
    data, state, status = _wait_child(pid, rfd, float(limits["timeout_s"]), cap, relay)
    if relay is not None:
        relay.close()
    header: dict[str, Any] = {"state": state, "duration_ms": (time.monotonic() - started) * 1000}
    if status is not None:
        if os.WIFEXITED(status):
            header["exit_code"] = os.WEXITSTATUS(status)
        elif os.WIFSIGNALED(status):
            header["signal"] = os.WTERMSIG(status)
    iso_line, _, outcome = data.partition(b"\n")
    try:
        header["isolation"] = json.loads(iso_line) if iso_line else None
    except ValueError:
        header["isolation"] = None
    if state == "too_large":
        outcome = b""
    _write_all(resp_fd, json.dumps(header).encode() + b"\n" + outcome)
    os.close(resp_fd)
    os._exit(0)


# ----------------------------------------------------------------------------- runner
def _set_rlimits(limits: dict[str, Any]) -> list[str]:
    mib = 1 << 20
    cpu = max(1, int(-(-float(limits["cpu_s"]) // 1)))
    wanted = [
        ("cpu", "RLIMIT_CPU", cpu, cpu + 1),
        ("as", "RLIMIT_AS", int(limits["memory_mb"]) * mib, None),
        ("fsize", "RLIMIT_FSIZE", int(limits["file_size_mb"]) * mib, None),
        ("nofile", "RLIMIT_NOFILE", int(limits["open_files"]), None),
        ("nproc", "RLIMIT_NPROC", int(limits["processes"]), None),
        ("core", "RLIMIT_CORE", 0, None),
    ]
    applied = []
    for label, name, soft, hard in wanted:
        res = getattr(resource, name, None)
        if res is None:
            continue
        try:
            resource.setrlimit(res, (soft, soft if hard is None else hard))
            applied.append(label)
        except (ValueError, OSError):
            try:  # not privileged: we can still lower the soft limit under the current hard one
                cur_hard = resource.getrlimit(res)[1]
                if cur_hard == resource.RLIM_INFINITY or cur_hard >= soft:
                    resource.setrlimit(res, (soft, cur_hard if hard is None else min(hard, cur_hard)))
                    applied.append(label)
            except (ValueError, OSError):
                pass
    return applied


def _open_path_fds() -> dict[str, int]:
    """Directory fds for sys.path entries, opened while privileged (see _remap_paths)."""
    fds = {}
    for entry in sys.path:
        if entry and entry not in fds and os.path.isdir(entry):
            try:
                fds[entry] = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                pass
    return fds


def _remap_paths(fds: dict[str, int]) -> bool:
    """After the uid drop, reach import dirs the new uid cannot traverse (e.g. an interpreter under
    /root, mode 0700) through /proc/self/fd/N: the fd was opened before the drop and only the
    directory itself (world-readable) is reachable, not its ancestors' other contents."""
    mapping = {}
    for entry, fd in fds.items():
        if os.access(entry, os.R_OK | os.X_OK):
            os.close(fd)
        else:
            mapping[entry] = f"/proc/self/fd/{fd}"
    if not mapping:
        return False
    prefixes = sorted(mapping, key=len, reverse=True)

    def remap(path: str) -> str:
        for p in prefixes:
            if path == p or path.startswith(p + os.sep):
                return mapping[p] + path[len(p) :]
        return path

    sys.path[:] = [remap(p) for p in sys.path]
    for mod in list(sys.modules.values()):
        search = getattr(mod, "__path__", None)
        if isinstance(search, list):
            search[:] = [remap(p) if isinstance(p, str) else p for p in search]
    sys.path_importer_cache.clear()
    return True


# Landlock (Linux >= 5.13): an unprivileged, irreversible filesystem (and TCP) allowlist.
_LL_FS_ABI = {  # access right bit -> first ABI with it
    **{1 << i: 1 for i in range(13)},
    1 << 13: 2,  # REFER
    1 << 14: 3,  # TRUNCATE
    1 << 15: 5,  # IOCTL_DEV
}
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 1, 2, 4, 8
_LL_FILE_RIGHTS = _LL_EXECUTE | _LL_WRITE_FILE | _LL_READ_FILE | (1 << 14) | (1 << 15)
_READ_ONLY_PATHS = (
    "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/lib", "/lib64",
    "/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo", "/dev/urandom", "/dev/random", "/dev/zero",
)  # fmt: skip
_NETWORK_PATHS = (
    "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
    "/etc/services", "/etc/protocols", "/etc/ssl", "/etc/pki", "/etc/ca-certificates",
    "/usr/share/ca-certificates",
)  # fmt: skip


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_LL_RULE_NET_PORT, _LL_NET_BIND_TCP, _LL_NET_CONNECT_TCP = 2, 1, 2


def _syscall(nr: int, *args: object) -> int:
    if LIBC is None:
        return -1
    LIBC.syscall.restype = ctypes.c_long
    result: int = LIBC.syscall(ctypes.c_long(nr), *args)
    return result


def _landlock_ruleset(
    scratch: str, network: bool, deny_tcp: bool, connect_port: int | None = None
) -> tuple[int, int]:
    """Build (not yet enforce) the ruleset; returns (ruleset_fd, abi) or (-1, 0).

    `deny_tcp`: also deny TCP connect/bind (ABI >= 4), the fallback when there is no network
    namespace; `connect_port` is then the one port TCP connects may go to (the egress relay)."""
    if not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"):
        return -1, 0
    abi = _syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return -1, 0
    handled = 0
    for bit, first in _LL_FS_ABI.items():
        if abi >= first:
            handled |= bit
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4:
        size = 16
        if deny_tcp:
            attr.net = _LL_NET_BIND_TCP | _LL_NET_CONNECT_TCP  # no port allowed but `connect_port`
    if abi >= 6:
        size = 24
        attr.scoped = 0b11  # abstract unix sockets and signals outside the sandbox
    ruleset = _syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return -1, 0
    read_only = _LL_READ_FILE | _LL_READ_DIR
    rules: list[tuple[str, int]] = [(p, read_only) for p in sys.path if p]
    rules += [(p, read_only) for p in _READ_ONLY_PATHS]
    if network:
        rules += [(p, read_only) for p in _NETWORK_PATHS]
    rules.append(("/dev/null", _LL_READ_FILE | _LL_WRITE_FILE | (1 << 14)))
    rules.append((scratch, handled & ~_LL_EXECUTE))
    for path, allowed in rules:
        try:
            fd = os.open(path, getattr(os, "O_PATH", 0) | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if not os.path.isdir(path):
                allowed &= _LL_FILE_RIGHTS
            rule = _PathBeneath(allowed & handled, fd)
            _syscall(445, ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
        finally:
            os.close(fd)
    if deny_tcp and abi >= 4 and connect_port:
        port_rule = _NetPort(_LL_NET_CONNECT_TCP, connect_port)
        rc = _syscall(
            445,
            ctypes.c_int(ruleset),
            ctypes.c_int(_LL_RULE_NET_PORT),
            ctypes.byref(port_rule),
            ctypes.c_uint32(0),
        )
        if rc != 0:
            os.close(ruleset)
            return -1, 0
    return ruleset, abi


class _CPULimit(BaseException):
    """Raised in the user code on SIGXCPU (not an Exception: a bare `except Exception` cannot swallow it)."""


def _on_xcpu(signum: int, frame: object) -> None:
    raise _CPULimit()


def _guarded_open_factory(scratch: str) -> Callable[..., Any]:
    real_open = builtins.open
    allowed_files = {"/dev/null"}

    def open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:  # noqa: A001 - replaces the builtin for user code
        if isinstance(file, int):
            return real_open(file, mode, *args, **kwargs)
        path = os.fsdecode(os.fspath(file))
        real = os.path.realpath(path)
        if not (real == scratch or real.startswith(scratch + os.sep) or real in allowed_files):
            raise PermissionError(
                errno.EACCES, "sandbox: only files inside the scratch directory may be opened", path
            )
        return real_open(file, mode, *args, **kwargs)

    return open


def _describe_type(value: object) -> str:
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def find_unserialisable(value: object, path: str, depth: int = 0) -> tuple[str, str] | None:
    if depth > 200:
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = find_unserialisable(item, f"{path}[{i}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not (key is None or isinstance(key, (str, int, float, bool))):
                return f"a key of {path}", _describe_type(key)
            found = find_unserialisable(item, f"{path}[{key!r}]", depth + 1)
            if found:
                return found
        return None
    return path, _describe_type(value)


def _user_traceback(exc: BaseException) -> list[str]:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == USER_FILENAME]
    lines = ["Traceback (most recent call last):"] if frames else []
    for text in traceback.format_list(frames):
        lines += text.rstrip("\n").split("\n")
    for text in traceback.format_exception_only(type(exc), exc):
        lines += text.rstrip("\n").split("\n")
    return lines


def _exception_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, SyntaxError) and exc.lineno:
        text = f"SyntaxError: {exc.msg} (line {exc.lineno})"
    return text


def _looks_like_network_denied(exc: BaseException, depth: int = 0, refused: bool = False) -> bool:
    """A heuristic for the hint only: does this error (or its cause) look like a blocked network call?
    `refused`: count a refused connection too (with network allowed, only the sandbox's own
    loopback is reachable directly)."""
    socket = sys.modules.get("socket")
    if socket is not None and isinstance(exc, socket.gaierror):
        return True
    unreachable = (errno.ENETUNREACH, errno.EHOSTUNREACH) + ((errno.ECONNREFUSED,) if refused else ())
    if isinstance(exc, OSError) and exc.errno in unreachable:
        return True
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM) and exc.filename is None:
        frames = traceback.extract_tb(exc.__traceback__)  # Landlock's TCP denial is a bare EACCES
        if any("socket" in f.filename + (f.line or "") for f in frames):
            return True
    inner = getattr(exc, "reason", None) or exc.__cause__ or exc.__context__  # urllib's URLError.reason
    return (
        isinstance(inner, BaseException)
        and depth < 5
        and _looks_like_network_denied(inner, depth + 1, refused)
    )


def _execute(req: dict[str, Any], scratch: str) -> dict[str, Any]:
    """Run the user's function; returns the outcome dict (never raises)."""
    source, function = req["source"], req.get("function") or "main"
    linecache.cache[USER_FILENAME] = (len(source), None, source.splitlines(True), USER_FILENAME)
    safe_builtins = dict(builtins.__dict__)
    safe_builtins["open"] = _guarded_open_factory(scratch)
    namespace = {"__name__": "__sandbox__", "__builtins__": safe_builtins}
    limits = req["limits"]
    try:
        code = compile(source, USER_FILENAME, "exec")
        exec(code, namespace)
        fn = namespace.get(function)
        if not callable(fn):
            return {
                "ok": False,
                "kind": "exception",
                "error": f"the code does not define a function {function}()",
            }
        value = fn(**(req.get("kwargs") or {}))
        if hasattr(value, "__await__"):
            import asyncio

            value = asyncio.run(value)
    except SystemExit as exc:
        status = exc.code if exc.code is not None else 0
        return {
            "ok": False,
            "kind": "exit",
            "error": f"the code called sys.exit({status!r}) instead of returning a value",
            "exit_code": status if isinstance(status, int) else 1,
            "traceback": _user_traceback(exc)[:-1],
        }
    except MemoryError as exc:
        return {
            "ok": False,
            "kind": "memory",
            "error": f"MemoryError: the code exceeded its memory limit ({limits['memory_mb']} MiB)",
            "traceback": _user_traceback(exc),
        }
    except _CPULimit as exc:
        return {
            "ok": False,
            "kind": "cpu",
            "error": f"CPU time limit exceeded ({limits['cpu_s']:g} s)",
            "traceback": _user_traceback(exc)[:-1],
        }
    except BaseException as exc:  # noqa: BLE001 - everything the user code raises is reported
        text = _exception_text(exc)
        if _looks_like_network_denied(exc, refused=bool(req.get("network"))):
            if not req.get("network"):
                text += " (network access is disabled for this code; allow it with network: true)"
            else:
                text += (
                    " (user code reaches the network only through the HTTP proxy in HTTP_PROXY/"
                    "HTTPS_PROXY; use a client that honours them: httpx, requests, urllib)"
                )
        return {"ok": False, "kind": "exception", "error": text, "traceback": _user_traceback(exc)}
    return {"ok": True, "value": value}


def _encode_outcome(outcome: dict[str, Any]) -> bytes:
    try:
        return json.dumps(outcome).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        found = find_unserialisable(outcome.get("value"), "the return value")
        if found:
            where, type_name = found
            message = (
                f"the function returned a value that is not JSON-serialisable: {where} has type {type_name!r}"
            )
        elif isinstance(exc, ValueError) and "ircular" in str(exc):
            message = "the function returned a value with a circular reference (not JSON-serialisable)"
        else:
            message = f"the function returned a value that is not JSON-serialisable: {exc}"
        return json.dumps({"ok": False, "kind": "serialization", "error": message}).encode()


def _runner(req: dict[str, Any], wfd: int, ns: dict[str, Any], drop: bool) -> None:
    try:
        iso = _confine(req, ns, drop)
    except BaseException as exc:  # noqa: BLE001 - fail closed: the user code never runs
        error = f"sandbox setup failed: {type(exc).__name__}: {exc}"
        _write_all(wfd, b"{}\n" + json.dumps({"ok": False, "kind": "internal", "error": error}).encode())
        os._exit(71)
    _write_all(wfd, json.dumps(iso).encode() + b"\n")
    outcome = _execute(req, iso["scratch_dir"])
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    data = _encode_outcome(outcome)
    limits = req["limits"]
    if len(data) > int(limits["result_bytes"]):
        message = f"the result is {len(data)} bytes of JSON, over the limit of {limits['result_bytes']}"
        data = json.dumps({"ok": False, "kind": "too_large", "error": message}).encode()
    _write_all(wfd, data)
    os.close(wfd)
    os._exit(0)


def _confine(req: dict[str, Any], ns: dict[str, Any], drop: bool) -> dict[str, Any]:
    """Apply every restriction to this process; returns the isolation report."""
    limits = req["limits"]
    scratch = os.path.realpath(req["scratch"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.chdir(scratch)
    os.environ.clear()
    os.environ.update(req.get("env") or {})
    os.environ.update(HOME=scratch, TMPDIR=scratch)
    import tempfile

    tempfile.tempdir = None
    if req.get("setup_error"):
        raise RuntimeError(req["setup_error"])
    iso = dict(ns)
    network = bool(req.get("network"))
    iso["network_allowed"] = network
    iso["process_group"] = True
    proxy_url = f"http://127.0.0.1:{req['egress_port']}" if network else None
    if proxy_url:
        os.environ.update(dict.fromkeys(_PROXY_ENV, proxy_url))
    path_fds = _open_path_fds() if drop else {}
    ruleset, abi = _landlock_ruleset(
        scratch, network, deny_tcp=not ns["network"], connect_port=req.get("egress_port")
    )
    iso["no_new_privs"] = _call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    iso["rlimits"] = _set_rlimits(limits)
    if drop:
        os.setgroups([])
        os.setgid(int(req["gid"]))
        os.setuid(int(req["uid"]))
        try:
            os.setuid(0)
        except PermissionError:
            pass
        else:
            raise RuntimeError("the uid drop is reversible")
    iso["uid"] = os.getuid()
    iso["uid_dropped"] = drop and os.getuid() != 0
    iso["nproc_enforced"] = "nproc" in iso["rlimits"] and (os.getuid() != 0 or iso["user_namespace"])
    _call("prctl", PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)  # after the uid change, which clears it
    iso["landlock"] = 0
    if ruleset >= 0:
        if iso["no_new_privs"] and _syscall(446, ctypes.c_int(ruleset), ctypes.c_uint32(0)) == 0:
            iso["landlock"] = abi
        os.close(ruleset)
    confinement = "netns" if iso["network"] else ("landlock-tcp" if iso["landlock"] >= 4 else None)
    if network and confinement is None:
        raise RuntimeError(
            "network: true needs a network namespace (root or unprivileged user namespaces) or "
            "Landlock ABI >= 4 to force egress through the guarded proxy; this host has neither"
        )
    iso["egress"] = {"proxy": proxy_url, "confinement": confinement} if network else None
    iso["network_method"] = "egress-proxy" if network else confinement
    iso["path_remap"] = _remap_paths(path_fds)
    iso["env_cleared"] = True
    iso["open_guard"] = True
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # oversized writes fail with EFBIG instead
    signal.signal(signal.SIGXCPU, _on_xcpu)
    iso["scratch_dir"] = scratch
    iso["seccomp"] = _install_seccomp(req, network)  # last: it also forbids what the setup used
    if not network and iso["seccomp"] and iso["network_method"] is None:
        iso["network_method"] = "seccomp"  # no inet sockets at all
    return iso


def _install_seccomp(req: dict[str, Any], network: bool) -> bool:
    """Load the seccomp filter unless the operator turned it off; refuses (raises) when it is
    required and unavailable, so user code never runs without it by accident."""
    if req.get("seccomp") == "off":
        return False
    assert _syscall_filter is not None
    try:
        _syscall_filter.install(_seccomp, "proxy" if network else "off", _seccomp_missing)
    except RuntimeError as exc:
        raise RuntimeError(
            f"{exc}; user code does not run without the seccomp filter (install libseccomp2 and "
            "the pyseccomp package, or set PLAIT_SANDBOX_SECCOMP=off to run without it)"
        ) from None
    return True


if __name__ == "__main__":
    supervise(int(sys.argv[1]))
