"""A map cut by kill -9 resumes inside the map: the server (a subprocess on a SQLite file) is
killed while item 3 of a map waits for its HTTP answer; the restarted server continues the run
and calls only items 3 and 4 again: items 0 to 2 had finished and were checkpointed
(plait.engine.items), so they are not executed again.

The HTTP server the items call is real (127.0.0.1): it counts the calls per item and holds the
first call of item 3 open until the end of the test."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kill_testing import KillableServer, held_calls

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses kill -9")

API_KEY = "test-key-map-kill"
HELD = "/item/3"


def _hold_item_3(calls: list[str], path: str) -> bool:
    return path == HELD and calls.count(HELD) == 1  # its first call never gets its answer in time


@pytest.fixture
def remote() -> Iterator[Any]:
    with held_calls(_hold_item_3) as httpd:
        yield httpd


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
    srv = KillableServer(tmp_path, port, api_key=API_KEY).start()
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
