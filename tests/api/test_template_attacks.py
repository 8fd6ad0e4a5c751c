"""Issue 11 acceptance on a real server (`plait serve` as a subprocess): a flow whose template is a
nested-loop bomb fails its node with a clear message inside the node's timeout while `/healthz`
keeps answering in under 100 ms, and the server is healthy afterwards. Templates that Jinja used
to fold while compiling do not cost `/flows/validate` or `/flows/import` anything."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import linear_flow
from .test_server import Server, create_published

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses a subprocess server")

NESTED_LOOPS = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"


def attack_flow(flow_id: str, node: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "nodes": [{"id": "start", "type": "start"}, {"id": "boom", **node}, {"id": "out", "type": "output"}],
        "edges": [{"source": "start", "target": "boom"}, {"source": "boom", "target": "out"}],
    }


class HealthProbe:
    """Asks `/healthz` every 20 ms on its own connection and keeps the latencies."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as c:
            c.get("/healthz")  # connect first: the latencies are the server's, not the handshake's
            while not self._stop.is_set():
                started = time.monotonic()
                assert c.get("/healthz").status_code == 200
                self.latencies.append(time.monotonic() - started)
                time.sleep(0.02)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)


def run_attack(c: httpx.Client, url: str, flow: dict[str, Any]) -> tuple[dict[str, Any], float, list[float]]:
    create_published(c, flow)
    with HealthProbe(url) as probe:
        time.sleep(0.1)
        started = time.monotonic()
        r = c.post(f"/api/v1/flows/{flow['id']}/runs", params={"mode": "background"}, json={"inputs": {}})
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        while (run := c.get(f"/api/v1/runs/{run_id}").json())["status"] not in ("completed", "failed"):
            assert time.monotonic() - started < 30, run
            time.sleep(0.05)
        took = time.monotonic() - started
        time.sleep(0.1)
    return run, took, probe.latencies


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    srv = Server(Path(tmp_path_factory.mktemp("attacks"))).start()
    yield srv
    srv.stop()


@pytest.mark.parametrize(
    ("node", "timeout_s", "says"),
    [
        # An async node renders on a render thread, within the node's timeout.
        ({"type": "delay", "timeout_s": 1.5, "config": {"seconds": NESTED_LOOPS}}, 1.5, "longer than 1.4s"),
        # A synchronous node renders on the event loop, so its templates get the short inline budget.
        ({"type": "message", "timeout_s": 1, "config": {"text": NESTED_LOOPS}}, 1.0, "longer than 0.02s"),
        ({"type": "message", "config": {"text": NESTED_LOOPS}}, 1.0, "longer than 0.02s"),
        ({"type": "output", "config": {"value": "{{ 'x'.ljust(400000000) }}"}}, 1.0, "larger than 1,048,576"),
    ],
    ids=["delay-thread", "message-timeout", "message-inline", "output-ljust"],
)
def test_template_attack_fails_its_node_and_the_server_stays_responsive(
    server: Server, node: dict[str, Any], timeout_s: float, says: str
) -> None:
    flow_id = f"attack-{node['type']}-{'t' if 'timeout_s' in node else 'n'}"
    with server.client() as c:
        run, took, latencies = run_attack(c, server.url, attack_flow(flow_id, node))
        assert run["status"] == "failed", run
        error = run["nodes"]["boom"]["error"]
        assert says in error and "fix:" in error, error
        assert took < timeout_s + 1.0, took
        assert latencies, "the probe never answered"
        assert max(latencies) < 0.1, (
            f"/healthz took up to {max(latencies) * 1000:.0f} ms ({len(latencies)} probes)"
        )
        # Healthy afterwards: a normal flow runs to completion.
        create_published(c, linear_flow(f"after-{flow_id}", n=1))
        r = c.post(f"/api/v1/flows/after-{flow_id}/runs", json={"inputs": {"query": "ok"}})
        assert r.status_code in (200, 201), r.text
        assert r.json()["status"] == "completed" and r.json()["outputs"] == {"result": "ok!"}


@pytest.mark.parametrize(
    "template",
    [
        "{{ 'x' | center(400000000) }}",
        "{{ '%400000000s' % 1 }}",
        "{{ 'x' * 400000000 }}",
        "{{ ('x' | indent(400000000)) | length }}",
    ],
)
def test_validate_and_import_never_run_templates(server: Server, template: str) -> None:
    flow = attack_flow("folded", {"type": "message", "config": {"text": template}})
    with server.client() as c:
        started = time.monotonic()
        r = c.post("/api/v1/flows/validate", json={"document": flow})
        assert r.status_code == 200 and r.json()["valid"] is True, r.text
        r = c.post("/api/v1/flows/import", json={"document": flow, "overwrite": True})
        assert r.status_code == 201, r.text
        assert time.monotonic() - started < 2
        assert c.get("/healthz").status_code == 200
