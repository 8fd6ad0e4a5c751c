"""Acceptance tests of plait.sandbox: each hostile snippet ends in a clear error, the parent stays healthy."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import uuid
from pathlib import Path

import pytest

from plait.sandbox import Limits, SandboxPool

FAST = Limits(timeout_s=2.0)


@pytest.fixture(scope="module")
def pool():
    p = SandboxPool(size=2).start()
    yield p
    p.close()


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


MARK = "import ctypes\nctypes.CDLL(None).prctl(15, MARK_TOKEN.encode(), 0, 0, 0)  # PR_SET_NAME\n"


def processes_marked(token: str) -> list[int]:
    """Live processes named `token` (the sandboxed code renames itself before forking, so other
    sandboxes running on the machine at the same time do not match)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if comm == token and state != "Z":
            pids.append(int(entry))
    return pids


def marked(source: str, token: str) -> str:
    return f"MARK_TOKEN = {token!r}\n" + MARK + source


async def assert_healthy(pool: SandboxPool) -> None:
    result = await pool.run_code("def main(x):\n    return x + 1\n", kwargs={"x": 41}, limits=FAST)
    assert result.ok and result.value == 42, result


async def test_isolation_is_reported(pool):
    result = await pool.run_code("def main():\n    return 1\n", limits=FAST)
    assert result.ok and result.value == 1
    iso = result.isolation
    assert iso is not None
    for key in ("network", "pid_namespace", "rlimits", "uid", "uid_dropped", "nproc_enforced", "landlock"):
        assert key in iso
    assert {"cpu", "as", "fsize", "nofile"} <= set(iso["rlimits"])
    assert iso["open_guard"] and iso["env_cleared"] and iso["process_group"]
    assert (
        iso["seccomp"] is True
    )  # required: without it the call is refused (PLAIT_SANDBOX_SECCOMP=off opts out)


async def test_environment_secret_is_not_visible(pool, monkeypatch):
    monkeypatch.setenv("PLAIT_TEST_SECRET", "s3cret-token-value")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    source = "import os\ndef main():\n    return os.environ['PLAIT_TEST_SECRET']\n"
    result = await pool.run_code(source, limits=FAST)
    assert not result.ok and result.error_kind == "exception"
    assert result.error == "KeyError: 'PLAIT_TEST_SECRET'"
    assert any('File "<code>", line 3, in main' in line for line in result.traceback_lines)

    env = await pool.run_code("import os\ndef main():\n    return dict(os.environ)\n", limits=FAST)
    assert env.ok
    assert set(env.value) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR"}
    assert "s3cret" not in str(env.value) and "sk-should" not in str(env.value)
    assert env.value["HOME"] == env.value["TMPDIR"] == env.isolation["scratch_dir"]

    # nor through the parent's /proc entry
    source = f"import io\ndef main():\n    return io.open('/proc/{os.getpid()}/environ', 'rb').read()\n"
    proc = await pool.run_code(source, limits=FAST)
    assert not proc.ok and "PermissionError" in proc.error
    await assert_healthy(pool)


async def test_secret_file_outside_scratch_is_refused(pool, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    secret.chmod(0o600)
    result = await pool.run_code(f"def main():\n    return open({str(secret)!r}).read()\n", limits=FAST)
    assert not result.ok and result.error_kind == "exception"
    assert "PermissionError" in result.error and "scratch directory" in result.error
    assert "TOPSECRET" not in (result.error + result.stdout + result.stderr)

    # Bypassing the guarded builtin: the kernel (Landlock / the unprivileged uid) still refuses.
    iso = result.isolation
    if iso["landlock"] or iso["uid_dropped"]:
        for opener in ("io.open(p).read()", "os.read(os.open(p, os.O_RDONLY), 100)"):
            source = f"import io, os\ndef main():\n    p = {str(secret)!r}\n    return {opener}\n"
            bypass = await pool.run_code(source, limits=FAST)
            assert not bypass.ok and "PermissionError" in bypass.error, bypass
    await assert_healthy(pool)


async def test_write_outside_scratch_is_refused(pool):
    target = Path(f"/tmp/plait-escape-{uuid.uuid4().hex}.txt")  # /tmp is world-writable
    try:
        result = await pool.run_code(f"def main():\n    open({str(target)!r}, 'w').write('x')\n", limits=FAST)
        assert not result.ok and "PermissionError" in result.error
        if result.isolation["landlock"]:
            source = f"import io\ndef main():\n    io.open({str(target)!r}, 'w').write('x')\n"
            bypass = await pool.run_code(source, limits=FAST)
            assert not bypass.ok and "PermissionError" in bypass.error
        assert not target.exists()
        inside = await pool.run_code(
            "import os\ndef main():\n    open('note.txt', 'w').write('hi')\n    return open('note.txt').read()\n",
            limits=FAST,
        )
        assert inside.ok and inside.value == "hi"
    finally:
        target.unlink(missing_ok=True)


FORK_BOMB = (
    "import os\n"
    "def main():\n"
    "    while True:\n"
    "        try:\n"
    "            os.fork()\n"
    "        except OSError:\n"
    "            pass\n"
)


async def test_fork_bomb_cannot_fork(pool):
    """The seccomp filter refuses new processes: the bomb only spins until its timeout."""
    token = uuid.uuid4().hex[:15]
    call = asyncio.create_task(pool.run_code(marked(FORK_BOMB, token), limits=Limits(timeout_s=1.0)))
    await asyncio.sleep(0.5)
    assert len(processes_marked(token)) <= 1  # the runner itself, nothing it forked
    result = await call
    assert not result.ok and result.error_kind == "timeout"
    assert result.isolation is None or result.isolation["seccomp"]
    assert group_gone(result.worker_pid)
    assert processes_marked(token) == []
    await assert_healthy(pool)


async def test_fork_bomb_without_seccomp_is_contained(pool, monkeypatch):
    """With the operator's override (no seccomp), RLIMIT_NPROC and the PID namespace still hold."""
    monkeypatch.setenv("PLAIT_SANDBOX_SECCOMP", "off")
    probe = await pool.run_code("def main():\n    return 1\n", limits=FAST)
    assert probe.isolation["seccomp"] is False
    if not (probe.isolation["nproc_enforced"] or probe.isolation["pid_namespace"]):
        pytest.skip("neither RLIMIT_NPROC nor a PID namespace is enforceable here")
    token = uuid.uuid4().hex[:15]
    call = asyncio.create_task(
        pool.run_code(marked(FORK_BOMB, token), limits=Limits(timeout_s=1.0, processes=16))
    )
    await asyncio.sleep(0.5)
    running = processes_marked(token)
    assert len(running) > 1  # it did fork...
    if probe.isolation["nproc_enforced"]:
        assert len(running) <= 16  # ...within RLIMIT_NPROC
    result = await call
    assert not result.ok and result.error_kind == "timeout"
    assert group_gone(result.worker_pid)
    assert processes_marked(token) == []
    await assert_healthy(pool)


async def test_fork_is_a_clear_error(pool):
    result = await pool.run_code("import os\ndef main():\n    os.fork()\n", limits=FAST)
    assert not result.ok and result.error_kind == "exception"
    assert result.error == "PermissionError: [Errno 1] Operation not permitted"


async def test_detached_children_die_with_the_call(pool, monkeypatch):
    monkeypatch.setenv("PLAIT_SANDBOX_SECCOMP", "off")  # with seccomp, fork itself is refused
    token = uuid.uuid4().hex[:15]
    source = (
        "import os, time\n"
        "def main():\n"
        "    for _ in range(3):\n"
        "        if os.fork() == 0:\n"
        "            os.setsid()\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "    return 'parent done'\n"
    )
    result = await pool.run_code(marked(source, token), limits=FAST)
    assert result.ok and result.value == "parent done"
    assert group_gone(result.worker_pid)
    if result.isolation["pid_namespace"]:
        assert processes_marked(token) == []


async def test_allocating_10_gib_fails_cleanly(pool):
    result = await pool.run_code(
        "def main():\n    data = bytearray(10 * 1024 ** 3)\n    return len(data)\n",
        limits=Limits(timeout_s=2.0, memory_mb=256),
    )
    assert not result.ok and result.error_kind == "memory"
    assert "MemoryError" in result.error and "256 MiB" in result.error
    await assert_healthy(pool)


async def test_infinite_loop_times_out_and_the_group_is_killed(pool):
    result = await pool.run_code("def main():\n    while True:\n        pass\n", limits=Limits(timeout_s=1.0))
    assert not result.ok and result.error_kind == "timeout"
    assert "timed out after 1 s" in result.error
    assert 1000 <= result.duration_ms < 3000
    assert group_gone(result.worker_pid)
    await assert_healthy(pool)


async def test_cpu_limit(pool):
    result = await pool.run_code(
        "def main():\n    while True:\n        pass\n", limits=Limits(timeout_s=5.0, cpu_s=1)
    )
    assert not result.ok and result.error_kind == "cpu"
    assert "CPU time limit" in result.error


async def test_sys_exit_is_a_clear_error(pool):
    result = await pool.run_code("import sys\ndef main():\n    sys.exit(3)\n", limits=FAST)
    assert not result.ok and result.error_kind == "exit" and result.exit_code == 3
    assert "sys.exit(3)" in result.error
    hard = await pool.run_code("import os\ndef main():\n    os._exit(4)\n", limits=FAST)
    assert not hard.ok and hard.error_kind == "exit" and hard.exit_code == 4
    assert "status 4" in hard.error


async def test_printing_100_mb_is_truncated(pool):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = await pool.run_code(
        "import sys\ndef main():\n    for _ in range(100):\n        sys.stdout.write('x' * (1 << 20))\n"
        "    print('err', file=sys.stderr)\n    return 'done'\n",
        limits=Limits(timeout_s=10.0),
    )
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert result.ok and result.value == "done"
    assert result.stdout_truncated and not result.stderr_truncated
    assert result.stdout.startswith("x" * 1000)
    assert len(result.stdout) < (1 << 20) + 200
    assert "output truncated" in result.stdout
    assert result.stderr == "err\n"
    assert (after - before) < 64 * 1024  # KiB: the parent never held the 100 MB


async def test_network_is_off_by_default_and_only_the_guarded_proxy_when_allowed(pool, monkeypatch):
    """Off: no socket at all. Allowed: direct connections go nowhere (the runner has its own
    network namespace); the egress proxy in HTTP_PROXY applies the SSRF guard (loopback refused
    unless PLAIT_HTTP_ALLOW trusts it). tests/sandbox/test_sandbox_abuse.py has the rest."""
    monkeypatch.delenv("PLAIT_HTTP_ALLOW", raising=False)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()  # the client speaks first (the tunnel test must not race the proxy's 200)
        writer.write(b"pong")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    source = (
        "import socket\n"
        "def main(port):\n"
        "    with socket.create_connection(('127.0.0.1', port), timeout=1) as s:\n"
        "        s.sendall(b'ping\\n')\n"
        "        return s.recv(16).decode()\n"
    )
    try:
        off = await pool.run_code(source, kwargs={"port": port}, limits=FAST)
        assert not off.ok and off.error_kind == "exception"
        assert "network access is disabled" in off.error
        assert off.isolation["network"] or off.isolation["network_method"] == "landlock-tcp"
        on = await pool.run_code(source, kwargs={"port": port}, limits=FAST, network=True)
        assert not on.ok and on.error_kind == "exception", on
        assert "only through the HTTP proxy" in on.error
        assert on.isolation["network_allowed"] is True and on.isolation["network_method"] == "egress-proxy"
        tunnel = (
            "import http.client, os\n"
            "def main(port):\n"
            "    proxy = os.environ['HTTPS_PROXY'].rsplit(':', 1)[1]\n"
            "    c = http.client.HTTPConnection('127.0.0.1', int(proxy), timeout=2)\n"
            "    c.set_tunnel('127.0.0.1', port)\n"
            "    c.connect()\n"
            "    c.sock.sendall(b'ping\\n')\n"
            "    return c.sock.recv(16).decode()\n"
        )
        refused = await pool.run_code(tunnel, kwargs={"port": port}, limits=FAST, network=True)
        assert not refused.ok and "403" in refused.error and "loopback address" in refused.error
        monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"127.0.0.1:{port}")
        allowed = await pool.run_code(tunnel, kwargs={"port": port}, limits=FAST, network=True)
        assert allowed.ok and allowed.value == "pong", allowed
    finally:
        server.close()
        await server.wait_closed()


async def test_non_serialisable_result_names_the_type(pool):
    result = await pool.run_code("def main():\n    return {'a': [1, {2, 3}]}\n", limits=FAST)
    assert not result.ok and result.error_kind == "serialization"
    assert "'set'" in result.error and "['a'][1]" in result.error
    custom = await pool.run_code("class Point:\n    pass\ndef main():\n    return Point()\n", limits=FAST)
    assert not custom.ok and "Point" in custom.error


async def test_missing_module_is_a_clear_error(pool):
    result = await pool.run_code("import no_such_module_xyz\ndef main():\n    return 1\n", limits=FAST)
    assert not result.ok and result.error_kind == "exception"
    assert result.error == "ModuleNotFoundError: No module named 'no_such_module_xyz'"
    assert result.traceback_lines[1] == '  File "<code>", line 1, in <module>'


async def test_traceback_shows_user_frames_only(pool):
    source = (
        "import json\n\ndef helper(x):\n    return json.loads(x)\n\ndef main():\n    return helper('{bad')\n"
    )
    result = await pool.run_code(source, limits=FAST)
    assert not result.ok and result.error.startswith("JSONDecodeError")
    text = result.traceback
    assert 'File "<code>", line 7, in main' in text and 'File "<code>", line 4, in helper' in text
    assert "json/decoder.py" not in text and "child.py" not in text
    syntax = await pool.run_code("def main(:\n    return 1\n", limits=FAST)
    assert not syntax.ok and syntax.error.startswith("SyntaxError") and "line 1" in syntax.error


async def test_arguments_results_and_output(pool):
    source = (
        "import math\n"
        "async def helper(x):\n"
        "    return x\n"
        "def main(items, scale=1):\n"
        "    print('summing', len(items))\n"
        "    return {'total': sum(items) * scale, 'pi': round(math.pi, 2), 'none': None}\n"
    )
    result = await pool.run_code(source, kwargs={"items": [1, 2, 3], "scale": 2}, limits=FAST)
    assert result.ok, result
    assert result.value == {"total": 12, "pi": 3.14, "none": None}
    assert result.stdout == "summing 3\n"
    coro = await pool.run_code("async def main(x):\n    return x * 2\n", kwargs={"x": 4}, limits=FAST)
    assert coro.ok and coro.value == 8
    missing = await pool.run_code("def other():\n    return 1\n", limits=FAST)
    assert not missing.ok and "main()" in missing.error
    bad_args = await pool.run_code("def main(x):\n    return x\n", kwargs={"x": {1}}, limits=FAST)
    assert not bad_args.ok and bad_args.error_kind == "arguments" and "'set'" in bad_args.error


async def test_cancellation_kills_the_process_group(pool):
    seen: list[int] = []
    acquire = pool._acquire

    def spy():
        worker = acquire()
        seen.append(worker.pid)
        return worker

    pool._acquire = spy
    try:
        task = asyncio.create_task(
            pool.run_code("def main():\n    while True:\n        pass\n", limits=Limits(timeout_s=30))
        )
        await asyncio.sleep(0.3)
        assert seen and not group_gone(seen[0])
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert group_gone(seen[0])
    finally:
        del pool._acquire
    await assert_healthy(pool)


async def test_crashing_code_does_not_hurt_the_pool(pool):
    result = await pool.run_code("import ctypes\ndef main():\n    return ctypes.string_at(0)\n", limits=FAST)
    assert not result.ok and result.error_kind == "crash" and "SIGSEGV" in result.error
    await assert_healthy(pool)


def test_limits_validation():
    with pytest.raises(ValueError):
        Limits(timeout_s=0)
    assert Limits(timeout_s=3).to_request()["cpu_s"] == 3.0
    assert signal.SIGKILL  # imported for the helpers above
