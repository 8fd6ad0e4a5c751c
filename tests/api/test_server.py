"""The real server as a subprocess (`python -m plait.cli.main serve`) on a temporary SQLite
database, driven over HTTP: crash recovery after kill -9, SSE re-attach, key bootstrap, examples."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from plait_testing import free_port

from .conftest import API_KEY, human_flow, linear_flow

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses kill -9")

REPO = Path(__file__).resolve().parents[2]


class Server:
    def __init__(self, tmp: Path, *, api_key: str | None = API_KEY, args: list[str] | None = None) -> None:
        self.tmp = tmp
        self.db = tmp / "plait.db"
        self.port = free_port()
        self.api_key = api_key
        self.args = args or []
        self.proc: subprocess.Popen[str] | None = None
        self.stderr_path = tmp / f"server-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        env = {
            **os.environ,
            "PLAIT_DATABASE_URL": f"sqlite+aiosqlite:///{self.db}",
            "PLAIT_LEASE_TTL_S": "1.5",
            "PLAIT_SWEEP_INTERVAL_S": "0.2",
            "PLAIT_SSE_HEARTBEAT_S": "1",
        }
        env.pop("PLAIT_API_KEY", None)
        if self.api_key:
            env["PLAIT_API_KEY"] = self.api_key
        self.port = free_port()
        self.stderr_file = open(self.stderr_path, "a")  # noqa: SIM115
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
                *self.args,
            ],
            cwd=self.tmp,
            env=env,
            stdout=self.stderr_file,  # uvicorn's access log
            stderr=self.stderr_file,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("server did not start:\n" + self.log())

    def log(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path.exists() else ""

    def client(self) -> httpx.Client:
        headers = {"x-api-key": self.api_key} if self.api_key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.stderr_file.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if not self.stderr_file.closed:
            self.stderr_file.close()


@pytest.fixture
def server(tmp_path: Path):  # type: ignore[no-untyped-def]
    srv = Server(tmp_path).start()
    yield srv
    srv.stop()


def create_published(c: httpx.Client, doc: dict[str, Any]) -> None:
    assert c.post("/api/v1/flows", json={"document": doc}).status_code == 201
    assert c.post(f"/api/v1/flows/{doc['id']}/versions").status_code == 201


def read_sse(resp: httpx.Response, limit: int | None = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    fields: dict[str, str] = {}
    for line in resp.iter_lines():
        if line == "":
            if "data" in fields:
                events.append(
                    {"id": int(fields["id"]), "event": fields["event"], "data": json.loads(fields["data"])}
                )
                if limit is not None and len(events) >= limit:
                    return events
            fields = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(": ")
        fields[name] = value
    return events


def node_rows(db: Path) -> list[tuple[str, str, str, int]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT run_id, node_id, status, id FROM node_runs ORDER BY id").fetchall()
    finally:
        con.close()


def test_kill_9_and_restart_completes_every_run(tmp_path: Path) -> None:
    srv = Server(tmp_path).start()
    try:
        with srv.client() as c:
            create_published(c, linear_flow("chain", n=6, delay=0.3))
            ids = []
            for i in range(20):
                r = c.post(
                    "/api/v1/flows/chain/runs",
                    params={"mode": "background"},
                    json={"inputs": {"query": f"q{i}"}},
                )
                assert r.status_code == 202, r.text
                ids.append(r.json()["id"])
            # Wait until every run is part-way through, then kill the server.
            deadline = time.monotonic() + 20
            while True:
                done_nodes = {(run, node) for run, node, status, _ in node_rows(srv.db) if status == "ok"}
                started = {run for run, _ in done_nodes}
                if len(started) == 20 and all((run, "d1") in done_nodes for run in ids):
                    break
                assert time.monotonic() < deadline
                time.sleep(0.05)
        srv.kill9()
        before = node_rows(srv.db)
        finished_before = {(run, node): row_id for run, node, status, row_id in before if status == "ok"}
        assert not all((run, "out") in finished_before for run in ids), "the kill came too late"

        srv.start()
        with srv.client() as c:
            deadline = time.monotonic() + 60
            while True:
                runs = {run_id: c.get(f"/api/v1/runs/{run_id}").json() for run_id in ids}
                if all(r["status"] in ("completed", "failed", "cancelled") for r in runs.values()):
                    break
                assert time.monotonic() < deadline, {k: v["status"] for k, v in runs.items()}
                time.sleep(0.2)
            for i, run_id in enumerate(ids):
                assert runs[run_id]["status"] == "completed", runs[run_id]
                assert runs[run_id]["outputs"] == {"result": f"q{i}!"}
        after = node_rows(srv.db)
        ok_rows: dict[tuple[str, str], list[int]] = {}
        for run, node, status, row_id in after:
            if status == "ok":
                ok_rows.setdefault((run, node), []).append(row_id)
        for run_id in ids:
            for node in ("start", "d0", "d1", "d2", "d3", "d4", "d5", "out"):
                assert len(ok_rows[(run_id, node)]) == 1, (run_id, node, ok_rows.get((run_id, node)))
        # Nodes that had finished before the kill kept their one record: they did not run again.
        for key, row_id in finished_before.items():
            assert ok_rows[key] == [row_id]
    finally:
        srv.stop()


def test_sse_reattach_with_last_event_id(server: Server) -> None:
    with server.client() as c:
        create_published(c, linear_flow("lin", n=6, delay=0.2))
        run_id = c.post(
            "/api/v1/flows/lin/runs", params={"mode": "background"}, json={"inputs": {"query": "x"}}
        ).json()["id"]
        with c.stream("GET", f"/api/v1/runs/{run_id}/events") as resp:
            assert resp.status_code == 200
            first = read_sse(resp, limit=4)
        assert len(first) == 4
        # The run is still going: re-attach where we left off and follow it to the end.
        assert c.get(f"/api/v1/runs/{run_id}").json()["status"] == "running"
        with c.stream(
            "GET", f"/api/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(first[-1]["id"])}
        ) as resp:
            rest = read_sse(resp)
        seen = first + rest
        assert [e["id"] for e in seen] == list(range(1, len(seen) + 1))
        assert seen[-1]["event"] == "run_finished" and seen[-1]["data"]["status"] == "completed"
        with c.stream("GET", f"/api/v1/runs/{run_id}/events") as resp:
            replay = read_sse(resp)
        assert [(e["id"], e["event"]) for e in replay] == [(e["id"], e["event"]) for e in seen]


def test_human_task_over_http(server: Server) -> None:
    with server.client() as c:
        create_published(c, human_flow("hum"))
        body = c.post("/api/v1/flows/hum/runs", json={"inputs": {"query": "it"}}).json()
        assert body["status"] == "waiting"
        token = body["tasks"][0]["token"]
        # The stream of a waiting run stays open, with heartbeat comments.
        with c.stream("GET", f"/api/v1/runs/{body['id']}/events") as resp:
            lines = []
            for line in resp.iter_lines():
                lines.append(line)
                if line.startswith(": heartbeat"):
                    break
        assert any(line.startswith("event: waiting") for line in lines)
    with httpx.Client(base_url=server.url, timeout=30) as anon:
        assert anon.get(f"/api/v1/human-tasks/{token}").json()["message"] == "Approve it?"
        assert anon.post(f"/api/v1/human-tasks/{token}/submit", json={"values": {}}).status_code == 422
        assert (
            anon.post(f"/api/v1/human-tasks/{token}/submit", json={"values": {"comment": "fine"}}).status_code
            == 200
        )
        assert (
            anon.post(f"/api/v1/human-tasks/{token}/submit", json={"values": {"comment": "fine"}}).status_code
            == 409
        )
    with server.client() as c:
        deadline = time.monotonic() + 15
        while (run := c.get(f"/api/v1/runs/{body['id']}").json())["status"] not in ("completed", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert run["status"] == "completed" and run["outputs"] == {"decision": "yes: fine"}


def test_serve_prints_a_sign_in_link_and_imports_examples(tmp_path: Path) -> None:
    """First start, nothing to paste: the printed one-time link signs the browser in as the
    local admin (session cookie), whose library holds the examples. The link works once; the
    next start prints a new one and imports nothing twice. Strangers learn nothing: /healthz says
    only "ok", the API wants a credential, the database file is the server user's only, and the
    access log masks the sign-in and human-task tokens."""
    srv = Server(
        tmp_path, api_key=None, args=["--examples", str(REPO / "examples"), "--log-level", "info"]
    ).start()
    try:
        match = re.search(r"plait: sign in at (http://\S+/\?token=(\S+))", srv.log())
        assert match, srv.log()
        link, token = match.group(1), match.group(2)
        with httpx.Client(base_url=srv.url, timeout=30) as browser:
            r = browser.get(link, follow_redirects=False)
            assert r.status_code == 303 and r.headers["location"] == "/", r.text
            cookie = r.headers["set-cookie"].lower()
            assert "plait_session=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
            me = browser.get("/api/v1/me").json()
            assert me["email"] == "admin@localhost" and me["role"] == "admin" and me["auth"] == "session"
            flows = {f["id"]: f for f in browser.get("/api/v1/flows").json()}
            assert "expense-approval" in flows and flows["expense-approval"]["latest_version"] == 1
            assert flows["expense-approval"]["access"] == "owner"
            r = browser.post(
                "/api/v1/flows/expense-approval/runs", json={"inputs": {"employee": "Ann", "amount": 12}}
            )
            assert r.json()["status"] == "waiting"
            task_token = r.json()["tasks"][0]["token"]
            assert browser.get(f"/api/v1/human-tasks/{task_token}").status_code == 200
        again = httpx.get(link, follow_redirects=False)
        assert again.status_code == 303 and again.headers["location"] == "/?signin=expired"
        assert httpx.get(f"{srv.url}/api/v1/flows").status_code == 401
        assert httpx.get(f"{srv.url}/healthz").json() == {"status": "ok"}
        assert (tmp_path / "plait.db").stat().st_mode & 0o077 == 0
        log = "\n".join(line for line in srv.log().splitlines() if "sign in at" not in line)
        assert token not in log and task_token not in log, log
        assert "/?token=********" in log and "/human-tasks/********" in log
        srv.stop()
        srv.start()  # second start: a new link, no second import
        links = re.findall(r"sign in at (\S+)", srv.log())
        assert len(links) == 2 and links[1] != link
        with httpx.Client(base_url=srv.url, timeout=30) as browser:
            assert browser.get(links[1], follow_redirects=False).status_code == 303
            assert len(browser.get("/api/v1/flows").json()) == len(flows)
    finally:
        srv.stop()
