"""A human-task answer sent while Redis is down, in queue mode: nothing is recorded, the API says
503 and the task stays open; sent again once Redis is back, it resumes the run once on a worker.
An answer is never marked submitted without a resume message in the queue. Likewise a task that
expires while Redis is down: its expiry is not lost, it is acted on once Redis is back."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from redis_fixture import redis_server
from workers.conftest import Cluster

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="subprocesses"),
    pytest.mark.timeout(240),
]


def _human_flow(port: int, timeout_s: float | None = None) -> dict[str, Any]:
    base = f"http://127.0.0.1:{port}"
    review: dict[str, Any] = {"message": "ok?", "actions": ["approve", "reject"]}
    if timeout_s is not None:
        review["timeout_s"] = timeout_s
    return {
        "schema": "plait/flow@1",
        "id": "asks",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "first", "type": "http", "config": {"url": base + "/first"}},
            {"id": "review", "type": "human", "config": review},
            {"id": "second", "type": "http", "config": {"url": base + "/second"}},
        ],
        "edges": [
            {"source": "start", "target": "first"},
            {"source": "first", "target": "review"},
            {"source": "review", "source_port": "approve", "target": "second"},
        ],
    }


def _status(c: httpx.Client, run_id: str) -> str:
    return str(c.get(f"/api/v1/runs/{run_id}").json()["status"])


def _until(predicate: Any, what: str, cluster: Cluster, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {p.log_path.name}\n{p.log()[-3000:]}" for p in cluster.procs)
            raise AssertionError(f"timed out: {what}\n{logs}")
        time.sleep(0.1)


def test_an_answer_sent_while_redis_is_down_is_refused_and_the_task_stays_open(
    tmp_path: Path, pg_url: str, counter: Any
) -> None:
    port = counter.server_address[1]
    with redis_server(tmp_path) as redis:
        cluster = Cluster(tmp_path, pg_url, redis.url, f"127.0.0.1:{port}")
        try:
            cluster.serve()
            worker = cluster.worker("w", concurrency=4)
            cluster.wait_ready(worker)
            with cluster.client() as c:
                r = c.post("/api/v1/flows", json={"document": _human_flow(port)})
                assert r.status_code == 201, r.text
                assert c.post("/api/v1/flows/asks/versions").status_code == 201
                r = c.post("/api/v1/flows/asks/runs", params={"mode": "background"}, json={"inputs": {}})
                assert r.status_code == 202, r.text
                run_id = r.json()["id"]
                _until(lambda: _status(c, run_id) == "waiting", "the run waits", cluster)
                tasks = c.get(f"/api/v1/runs/{run_id}").json()["tasks"]
                assert len(tasks) == 1
                token = tasks[0]["token"]

                redis.stop()
                answer = {"action": "approve"}
                r = c.post(f"/api/v1/human-tasks/{token}/submit", json=answer)
                assert r.status_code == 503, r.text
                body = r.json()["error"]
                assert body["code"] == "queue_unavailable", body
                assert "not recorded" in body["message"] and "send the answer again" in str(body), body
                r = c.post(f"/api/v1/runs/{run_id}/resume", json={"node_id": "review", "data": answer})
                assert r.status_code == 503, r.text
                task = c.get(f"/api/v1/human-tasks/{token}").json()
                assert task["status"] == "pending", task  # still open: nothing was recorded
                assert _status(c, run_id) == "waiting"

                redis.start()
                r = c.post(f"/api/v1/human-tasks/{token}/submit", json=answer)
                assert r.status_code == 200, r.text
                assert r.json()["status"] == "submitted"
                _until(lambda: _status(c, run_id) == "completed", "the run completes", cluster, 90)
                r = c.post(f"/api/v1/human-tasks/{token}/submit", json=answer)
                assert r.status_code == 409, r.text  # answered once
                events = []
                with c.stream("GET", f"/api/v1/runs/{run_id}/events") as resp:
                    for line in resp.iter_lines():
                        if line.startswith("event: run_finished"):
                            events.append(line)
                assert len(events) == 2  # waiting, then completed: resumed once
        finally:
            cluster.stop()
    assert dict(counter.calls) == {"/first": 1, "/second": 1}


def test_a_task_that_expires_while_redis_is_down_fails_its_run_once_redis_is_back(
    tmp_path: Path, pg_url: str, counter: Any
) -> None:
    port = counter.server_address[1]
    with redis_server(tmp_path) as redis:
        cluster = Cluster(tmp_path, pg_url, redis.url, f"127.0.0.1:{port}")
        try:
            cluster.serve()
            worker = cluster.worker("w", concurrency=4)
            cluster.wait_ready(worker)
            with cluster.client() as c:
                r = c.post("/api/v1/flows", json={"document": _human_flow(port, timeout_s=4)})
                assert r.status_code == 201, r.text
                assert c.post("/api/v1/flows/asks/versions").status_code == 201
                r = c.post("/api/v1/flows/asks/runs", params={"mode": "background"}, json={"inputs": {}})
                assert r.status_code == 202, r.text
                run_id = r.json()["id"]
                _until(lambda: _status(c, run_id) == "waiting", "the run waits", cluster)
                token = c.get(f"/api/v1/runs/{run_id}").json()["tasks"][0]["token"]

                # Only the API server sweeps meanwhile (a worker's own sweep would fail the run
                # itself, with no queue in between): it cannot send the expiry.
                os.kill(worker.pid, signal.SIGSTOP)
                redis.stop()
                time.sleep(6)  # past the deadline: the server's sweeps (every 0.2 s) try to send it
                assert _status(c, run_id) == "waiting"
                r = c.post(f"/api/v1/human-tasks/{token}/submit", json={"action": "approve"})
                assert r.status_code == 410, r.text  # past its deadline it takes no answer

                redis.start()
                os.kill(worker.pid, signal.SIGCONT)
                _until(lambda: _status(c, run_id) == "failed", "the expiry fails the run", cluster, 90)
                run = c.get(f"/api/v1/runs/{run_id}").json()
                assert "expire" in str(run).lower(), run
        finally:
            cluster.stop()
    assert dict(counter.calls) == {"/first": 1}
