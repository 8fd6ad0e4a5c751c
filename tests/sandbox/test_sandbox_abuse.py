"""The sandbox abuse suite (issue 11, point 6): real worker processes, real syscalls, real sockets.

Namespaces, netlink, mount, ptrace, bpf, keyctl and the like are refused by the seccomp filter
with EPERM (the code keeps running and gets a PermissionError); `network: true` reaches only the
SSRF-guarded egress proxy (loopback, the server's own port, metadata and private ranges refused;
an allowlisted target passes); the operator can switch network off; a fork or thread bomb in one
call does not fail the calls running beside it; and the pool is healthy afterwards.

The "server" is a local HTTP server on 127.0.0.1 standing in for plait's own port (`/healthz`);
`PLAIT_HTTP_ALLOW` (the guard's allowlist, as in tests/net/test_guard.py) makes it the "allowed
public target" where a test needs one.
"""

from __future__ import annotations

import asyncio
import errno
import json
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import plait
from plait.net.egress import egress_proxy
from plait.nodes.builtin.code import CodeNode
from plait.sandbox import Limits, SandboxPool
from plait.sandbox.components import run_component
from plait.sdk.templates import FETCH_TEXT

pyseccomp = pytest.importorskip("pyseccomp")

FAST = Limits(timeout_s=5.0)


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    p = SandboxPool(size=2).start()
    CodeNode.pool = p
    yield p
    CodeNode.pool = None
    p.close()


@pytest.fixture(autouse=True)
def no_env_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLAIT_HTTP_ALLOW", raising=False)
    monkeypatch.delenv("PLAIT_SANDBOX_NETWORK", raising=False)
    monkeypatch.delenv("PLAIT_SANDBOX_SECCOMP", raising=False)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"status": "ok", "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    """The port of a local HTTP server that answers /healthz (the server's own port)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def healthz(port: int) -> dict[str, Any]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
        return json.loads(response.read())


async def assert_healthy(pool: SandboxPool, port: int | None = None) -> None:
    result = await pool.run_code("def main(x):\n    return x + 1\n", kwargs={"x": 41}, limits=FAST)
    assert result.ok and result.value == 42, result
    if port is not None:
        assert (await asyncio.to_thread(healthz, port))["status"] == "ok"
        assert egress_proxy().alive()


def nr(name: str) -> int:
    return pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)


# A snippet that calls raw syscalls and returns {label: errno or 0}.
SYSCALLS = """
import ctypes
def main(calls):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    out = {}
    for label, number, args in calls:
        ctypes.set_errno(0)
        rc = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
        out[label] = 0 if rc >= 0 else ctypes.get_errno()
    return out
"""

CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x40000000, 0x00020000, 17


# --------------------------------------------------------------------------- seccomp


async def test_namespaces_cannot_be_created(pool: SandboxPool) -> None:
    calls = [
        ("unshare user+net", nr("unshare"), [CLONE_NEWUSER | CLONE_NEWNET]),
        ("unshare net", nr("unshare"), [CLONE_NEWNET]),
        ("unshare mount", nr("unshare"), [CLONE_NEWNS]),
        ("setns", nr("setns"), [0, 0]),
        ("clone newuser", nr("clone"), [CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0]),
    ]
    result = await pool.run_code(SYSCALLS, kwargs={"calls": calls}, limits=FAST)
    assert result.ok, result
    assert result.value == {label: errno.EPERM for label, _, _ in calls}
    assert result.isolation["seccomp"] is True
    clone3 = await pool.run_code(SYSCALLS, kwargs={"calls": [("clone3", nr("clone3"), [0, 0])]}, limits=FAST)
    assert clone3.value == {"clone3": errno.ENOSYS}  # so libc falls back to clone, whose flags are checked
    python = await pool.run_code(
        "import ctypes\ndef main():\n    if ctypes.CDLL(None, use_errno=True).unshare(0x50000000):\n"
        "        raise PermissionError(ctypes.get_errno(), 'unshare refused')\n",
        limits=FAST,
    )
    assert not python.ok and python.error == "PermissionError: [Errno 1] unshare refused"
    await assert_healthy(pool)


async def test_netlink_and_other_socket_families_are_refused(pool: SandboxPool) -> None:
    source = (
        "import socket\n"
        "def main():\n"
        "    out = {}\n"
        "    tries = {'netfilter': (16, 3, 12), 'rtnetlink': (16, 3, 0), 'packet': (17, 3, 0),\n"
        "             'vsock': (40, 1, 0), 'inet (network off)': (2, 1, 0), 'udp (network off)': (2, 2, 0)}\n"
        "    for name, args in tries.items():\n"
        "        try:\n"
        "            socket.socket(*args).close()\n"
        "            out[name] = 'created'\n"
        "        except OSError as exc:\n"
        "            out[name] = exc.errno\n"
        "    a, b = socket.socketpair()\n"
        "    a.sendall(b'unix ok')\n"
        "    out['unix'] = b.recv(16).decode()\n"
        "    return out\n"
    )
    result = await pool.run_code(source, limits=FAST)
    assert result.ok, result
    unix = result.value.pop("unix")
    assert unix == "unix ok"
    assert set(result.value.values()) == {errno.EPERM}, result.value


async def test_kernel_attack_surface_is_refused_with_eperm(pool: SandboxPool, monkeypatch) -> None:
    calls = [
        (name, nr(name), [0, 0, 0, 0, 0, 0])
        for name in (
            "mount", "umount2", "pivot_root", "chroot", "ptrace", "process_vm_readv", "process_vm_writev",
            "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "kexec_load", "init_module",
            "finit_module", "delete_module", "userfaultfd", "open_by_handle_at", "io_uring_setup",
        )
        if nr(name) >= 0
    ]  # fmt: skip
    result = await pool.run_code(SYSCALLS, kwargs={"calls": calls}, limits=FAST)
    assert result.ok, result  # EPERM, not a kill: the code goes on and reports
    assert result.value == {label: errno.EPERM for label, _, _ in calls}
    # Without the filter (the operator's override), some of them do work: the filter is what refuses.
    monkeypatch.setenv("PLAIT_SANDBOX_SECCOMP", "off")
    probe = [
        ("ptrace", nr("ptrace"), [0, 0, 0, 0]),  # PTRACE_TRACEME
        ("keyctl", nr("keyctl"), [0, -3, 0, 0]),  # KEYCTL_GET_KEYRING_ID of the session keyring
    ]
    unfiltered = await pool.run_code(SYSCALLS, kwargs={"calls": probe}, limits=FAST)
    assert unfiltered.ok and unfiltered.isolation["seccomp"] is False
    assert unfiltered.value["ptrace"] == 0, unfiltered.value
    await assert_healthy(pool)


async def test_threads_still_work(pool: SandboxPool) -> None:
    source = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "def main():\n"
        "    with ThreadPoolExecutor(8) as ex:\n"
        "        return sum(ex.map(lambda x: x * x, range(100)))\n"
    )
    result = await pool.run_code(source, limits=FAST)
    assert result.ok and result.value == sum(x * x for x in range(100)), result


@pytest.mark.skipif(shutil.which("python3") is None, reason="needs a system python without pyseccomp")
async def test_without_the_seccomp_binding_user_code_does_not_run(monkeypatch) -> None:
    """A worker interpreter without pyseccomp refuses to run user code, unless the operator
    turns the filter off explicitly (PLAIT_SANDBOX_SECCOMP=off)."""
    python = shutil.which("python3")
    assert python is not None
    probe = await asyncio.create_subprocess_exec(python, "-I", "-c", "import pyseccomp")
    if await probe.wait() == 0:
        pytest.skip(f"{python} has pyseccomp")
    async with SandboxPool(size=0, python=python) as bare:
        refused = await bare.run_code("def main():\n    return 'ran'\n", limits=FAST)
        assert not refused.ok and refused.error_kind == "internal"
        assert "pyseccomp" in refused.error and "PLAIT_SANDBOX_SECCOMP=off" in refused.error
        monkeypatch.setenv("PLAIT_SANDBOX_SECCOMP", "off")
        allowed = await bare.run_code("def main():\n    return 'ran'\n", limits=FAST)
        assert allowed.ok and allowed.value == "ran" and allowed.isolation["seccomp"] is False


# --------------------------------------------------------------------------- network: true

FETCH = """
import json, urllib.error, urllib.request
def main(urls):
    out = {}
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=3) as response:
                out[url] = {'status': response.status, 'body': response.read().decode()}
        except urllib.error.HTTPError as exc:
            out[url] = {'status': exc.code, 'reason': exc.reason, 'egress': exc.headers.get('X-Plait-Egress')}
        except Exception as exc:
            out[url] = {'error': f'{type(exc).__name__}: {exc}'}
    return out
"""

TUNNEL = """
import http.client, os
def main(targets):
    port = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1])
    out = {}
    for host, target_port in targets:
        c = http.client.HTTPConnection('127.0.0.1', port, timeout=3)
        c.set_tunnel(host, target_port)
        try:
            c.request('GET', '/healthz')
            out[f'{host}:{target_port}'] = c.getresponse().read().decode()
        except OSError as exc:
            out[f'{host}:{target_port}'] = f'{type(exc).__name__}: {exc}'
        finally:
            c.close()
    return out
"""

DIRECT = """
import socket
def main(targets):
    out = {}
    for host, port in targets:
        try:
            socket.create_connection((host, port), timeout=2).close()
            out[f'{host}:{port}'] = 'connected'
        except OSError as exc:
            out[f'{host}:{port}'] = f'{type(exc).__name__}: {exc}'
    for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW):
        try:
            socket.socket(socket.AF_INET, kind, 0 if kind == socket.SOCK_DGRAM else 1).close()
            out[f'type {int(kind)}'] = 'created'
        except OSError as exc:
            out[f'type {int(kind)}'] = exc.errno
    return out
"""

INTERNAL = [
    "http://127.0.0.1:{port}/healthz",  # the server's own port
    "http://localhost:{port}/healthz",
    "http://[::1]:{port}/healthz",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://0.0.0.0:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
]


async def test_network_true_refuses_internal_destinations(pool: SandboxPool, server: int) -> None:
    proxy = egress_proxy()
    blocked_before = proxy.blocked
    urls = [u.format(port=server) for u in INTERNAL]
    result = await pool.run_code(FETCH, kwargs={"urls": urls}, limits=Limits(timeout_s=20), network=True)
    assert result.ok, result
    for url in urls:
        answer = result.value[url]
        assert answer.get("status") == 403 and answer["egress"] == "blocked", (url, answer)
        assert "blocked by plait's egress guard" in answer["reason"]
    assert "loopback address" in result.value[urls[0]]["reason"]
    assert "link-local address" in result.value[urls[3]]["reason"]
    assert proxy.blocked - blocked_before >= len(urls)

    # The same through CONNECT (what https:// and any other TCP protocol use).
    targets = [["127.0.0.1", server], ["169.254.169.254", 443], ["10.1.2.3", 22], ["localhost", server]]
    tunnel = await pool.run_code(TUNNEL, kwargs={"targets": targets}, limits=FAST, network=True)
    assert tunnel.ok, tunnel
    for key, answer in tunnel.value.items():
        assert "Tunnel connection failed: 403" in answer and "egress guard" in answer, (key, answer)
    await assert_healthy(pool, server)


def _code_flow(port: int) -> dict[str, Any]:
    code = (
        "import urllib.error, urllib.request\n"
        "def main(url):\n"
        "    try:\n"
        "        with urllib.request.urlopen(url, timeout=3) as response:\n"
        "            return {'status': response.status, 'body': response.read().decode()}\n"
        "    except urllib.error.HTTPError as exc:\n"
        "        return {'status': exc.code, 'body': exc.reason}\n"
    )
    return {
        "schema": "plait/flow@1",
        "id": "own-healthz",
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "fetch",
                "type": "code",
                "config": {
                    "code": code,
                    "arguments": {"url": f"http://127.0.0.1:{port}/healthz"},
                    "network": True,
                },
            },
            {"id": "out", "type": "output", "config": {"name": "result", "value": "{{fetch.status}}"}},
        ],
        "edges": [{"source": "start", "target": "fetch"}, {"source": "fetch", "target": "out"}],
    }


async def test_a_code_node_with_network_cannot_fetch_the_servers_own_healthz(
    pool: SandboxPool, server: int, monkeypatch
) -> None:
    """The issue's reproduction, as a flow: a `code` node with `network: true` GETs /healthz."""
    refused = await plait.run(_code_flow(server), {})
    assert refused.status == "completed", refused
    assert refused.outputs == {"result": 403}
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server}")  # an operator trusting it
    allowed = await plait.run(_code_flow(server), {})
    assert allowed.status == "completed" and allowed.outputs == {"result": 200}, allowed


async def test_network_true_cannot_bypass_the_proxy(pool: SandboxPool, server: int) -> None:
    targets = [["127.0.0.1", server], ["169.254.169.254", 80], ["10.0.0.1", 80], ["8.8.8.8", 53]]
    result = await pool.run_code(DIRECT, kwargs={"targets": targets}, limits=FAST, network=True)
    assert result.ok, result
    value = result.value
    for host, port in targets:
        assert value[f"{host}:{port}"] != "connected", value
    assert value["type 2"] == errno.EPERM and value["type 3"] == errno.EPERM  # no UDP, no raw sockets
    assert result.isolation["egress"]["confinement"] in ("netns", "landlock-tcp")


async def test_redirects_to_internal_addresses_are_refused(
    pool: SandboxPool, server: int, monkeypatch
) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server}")
    url = f"http://127.0.0.1:{server}/redirect"
    result = await pool.run_code(FETCH, kwargs={"urls": [url]}, limits=FAST, network=True)
    assert result.ok, result
    answer = result.value[url]
    assert answer["status"] == 403 and "169.254.169.254" in answer["reason"], answer


async def test_an_allowed_target_passes_through_the_guard(
    pool: SandboxPool, server: int, monkeypatch
) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server}")
    proxy = egress_proxy()
    allowed_before = proxy.allowed
    url = f"http://127.0.0.1:{server}/healthz"
    result = await pool.run_code(FETCH, kwargs={"urls": [url]}, limits=FAST, network=True)
    assert result.ok, result
    assert result.value[url]["status"] == 200
    assert json.loads(result.value[url]["body"]) == {"status": "ok", "path": "/healthz"}
    tunnel = await pool.run_code(
        TUNNEL, kwargs={"targets": [["127.0.0.1", server]]}, limits=FAST, network=True
    )
    assert tunnel.ok and json.loads(tunnel.value[f"127.0.0.1:{server}"])["status"] == "ok", tunnel
    httpx_source = "import httpx\ndef main(url):\n    return httpx.get(url, timeout=3).json()\n"
    via_httpx = await pool.run_code(httpx_source, kwargs={"url": url}, limits=FAST, network=True)
    assert via_httpx.ok and via_httpx.value["status"] == "ok", via_httpx
    assert proxy.allowed - allowed_before >= 3
    # Still not the other ports of the same host: the allowlist entry names one port.
    other = f"http://127.0.0.1:{server + 1 if server < 65535 else server - 1}/"
    refused = await pool.run_code(FETCH, kwargs={"urls": [other]}, limits=FAST, network=True)
    assert refused.value[other]["status"] == 403


async def test_builtin_fetch_component_uses_the_guarded_path(
    pool: SandboxPool, server: int, monkeypatch
) -> None:
    url = f"http://127.0.0.1:{server}/healthz"
    blocked = await run_component(FETCH_TEXT, "FetchText", {"url": url}, pool=pool, limits=FAST, network=True)
    assert blocked.ok and blocked.outputs is not None, blocked
    assert blocked.outputs["status"] == 403 and "egress guard" in blocked.outputs["text"]
    metadata = await run_component(
        FETCH_TEXT, "FetchText", {"url": "https://169.254.169.254/"}, pool=pool, limits=FAST, network=True
    )
    assert not metadata.ok and "403" in (metadata.error or "") and "link-local" in (metadata.error or "")
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server}")
    allowed = await run_component(FETCH_TEXT, "FetchText", {"url": url}, pool=pool, limits=FAST, network=True)
    assert allowed.ok and allowed.outputs is not None and allowed.outputs["status"] == 200, allowed
    assert json.loads(allowed.outputs["text"])["status"] == "ok"


async def test_operator_can_turn_network_off(pool: SandboxPool, server: int, monkeypatch) -> None:
    monkeypatch.setenv("PLAIT_SANDBOX_NETWORK", "off")
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{server}")
    url = f"http://127.0.0.1:{server}/healthz"
    refused = await pool.run_code(FETCH, kwargs={"urls": [url]}, limits=FAST, network=True)
    assert not refused.ok and refused.error_kind == "network_disabled"
    assert "PLAIT_SANDBOX_NETWORK=off" in (refused.error or "")
    component = await run_component(
        FETCH_TEXT, "FetchText", {"url": url}, pool=pool, limits=FAST, network=True
    )
    assert not component.ok and component.error_kind == "network_disabled"
    offline = await pool.run_code(FETCH, kwargs={"urls": [url]}, limits=FAST)  # network: false still runs
    assert offline.ok and "error" in offline.value[url], offline
    await assert_healthy(pool, server)


# --------------------------------------------------------------------------- per-call limits

QUICK_WORK = (  # needs 8 threads alive at once (a barrier), so a shared task budget would fail it
    "import threading\n"
    "def main(n):\n"
    "    barrier = threading.Barrier(9)\n"
    "    results = []\n"
    "    def work(x):\n"
    "        barrier.wait(5)\n"
    "        results.append(x + n)\n"
    "    threads = [threading.Thread(target=work, args=(x,)) for x in range(8)]\n"
    "    for t in threads:\n"
    "        t.start()\n"
    "    barrier.wait(5)\n"
    "    for t in threads:\n"
    "        t.join()\n"
    "    return sum(results)\n"
)
QUICK_RESULT = [sum(x + n for x in range(8)) for n in range(3)]


async def _three_runs_beside(pool: SandboxPool, bomb: str, bomb_limits: Limits) -> Any:
    attack = asyncio.create_task(pool.run_code(bomb, limits=bomb_limits))
    await asyncio.sleep(0.4)  # the bomb is going
    others = await asyncio.gather(
        *(pool.run_code(QUICK_WORK, kwargs={"n": n}, limits=FAST) for n in range(3))
    )
    return await attack, others


async def test_a_fork_bomb_does_not_fail_other_runs(pool: SandboxPool, server: int) -> None:
    bomb = (
        "import os\n"
        "def main():\n"
        "    while True:\n"
        "        try:\n"
        "            os.fork()\n"
        "        except OSError:\n"
        "            pass\n"
    )
    attack, others = await _three_runs_beside(pool, bomb, Limits(timeout_s=2.0))
    assert not attack.ok and attack.error_kind == "timeout"
    assert [r.value for r in others] == QUICK_RESULT, others
    await assert_healthy(pool, server)


async def test_a_thread_bomb_does_not_fail_other_runs(pool: SandboxPool, server: int) -> None:
    probe = await pool.run_code("def main():\n    return 1\n", limits=FAST)
    iso = probe.isolation
    if not (iso["uid_per_call"] or iso["user_namespace"]):
        pytest.skip("RLIMIT_NPROC is shared between calls here (non-root without user namespaces)")
    bomb = (
        "import threading, time\n"
        "def main():\n"
        "    stop = threading.Event()\n"
        "    threads = []\n"
        "    try:\n"
        "        while len(threads) < 10000:\n"
        "            t = threading.Thread(target=stop.wait)\n"
        "            t.start()\n"
        "            threads.append(t)\n"
        "    except (RuntimeError, MemoryError):\n"
        "        pass\n"
        "    time.sleep(1.5)\n"
        "    stop.set()\n"
        "    return len(threads)\n"
    )
    limits = Limits(timeout_s=5.0, processes=32, memory_mb=4096)  # the task limit binds, not memory
    attack, others = await _three_runs_beside(pool, bomb, limits)
    assert attack.ok and 16 < attack.value < 32, attack  # capped by its own RLIMIT_NPROC
    assert [r.value for r in others] == QUICK_RESULT, others
    await assert_healthy(pool, server)


async def test_without_namespaces_egress_is_still_confined(server: int) -> None:
    """Hosts without namespaces: Landlock limits TCP connects to the relay's port and the filter
    refuses UDP; where Landlock cannot either, network calls are refused instead of unconfined."""
    async with SandboxPool(size=0, namespaces=False) as degraded:
        targets = [["127.0.0.1", server], ["169.254.169.254", 80]]
        direct = await degraded.run_code(DIRECT, kwargs={"targets": targets}, limits=FAST, network=True)
        if not direct.ok:
            assert direct.error_kind == "internal" and "network namespace" in (direct.error or ""), direct
            return
        assert direct.isolation["egress"]["confinement"] == "landlock-tcp"
        assert all(direct.value[f"{h}:{p}"] != "connected" for h, p in targets), direct.value
        assert direct.value["type 2"] == errno.EPERM
        url = f"http://127.0.0.1:{server}/healthz"
        proxied = await degraded.run_code(FETCH, kwargs={"urls": [url]}, limits=FAST, network=True)
        assert proxied.ok and proxied.value[url]["status"] == 403, proxied
