"""Every shipped example runs offline as shipped (the HTTP one against a server started here)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import plait

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_every_example_validates():
    files = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".json", ".yaml", ".yml"))
    assert len(files) >= 5
    for path in files:
        plait.load_flow(path)


@pytest.mark.parametrize(
    ("query", "route"), [("refund please", "billing"), ("it shows an ERROR", "bug"), ("hello", "else")]
)
async def test_branching(query, route):
    result = await plait.run(plait.load_flow(EXAMPLES / "branching.json"), {"query": query})
    assert result.status == "completed"
    assert result.outputs["route"] == route
    assert query in result.outputs["answer"]


async def test_loop_map():
    result = await plait.run(plait.load_flow(EXAMPLES / "loop_map.json"), {"words": ["a", "b"], "target": 4})
    assert result.status == "completed", result.error
    assert result.outputs["words"] == [
        {"position": 0, "word": "a", "loud": "A!"},
        {"position": 1, "word": "b", "loud": "B!"},
    ]
    assert result.outputs["count"] == 4
    assert result.outputs["last_iteration"] == "iteration 3: count=4"


async def test_human_approval():
    flow = plait.load_flow(EXAMPLES / "human_approval.json")
    cp = plait.InMemoryCheckpointer()
    first = await plait.run(flow, {"employee": "Ada", "amount": 40}, checkpointer=cp, run_id="exp1")
    assert first.status == "waiting"
    assert first.interrupt["payload"]["message"] == "Ada asks for 40 EUR. Approve?"
    done = await plait.resume(
        flow, "exp1", {"action": "reject", "values": {"comment": "too much"}}, checkpointer=cp
    )
    assert done.outputs == {"decision": "Rejected the request of Ada. too much"}


async def test_subflow():
    result = await plait.run(plait.load_flow(EXAMPLES / "subflow.json"))
    assert result.status == "completed", result.error
    first, second = result.outputs["answers"]
    assert first.startswith("Billing team") and second.startswith("Engineering")


class _Catalog(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        body = json.dumps({"count": 2, "items": [{"name": "tea", "price": 3}, {"name": "cake", "price": 4}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


async def test_http_fetch(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Catalog)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/catalog"
        flow = plait.load_flow(EXAMPLES / "http_fetch.yaml")
        blocked = await plait.run(flow, {"url": url})
        assert blocked.status == "failed" and "PLAIT_HTTP_ALLOW" in blocked.error
        monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
        result = await plait.run(flow, {"url": url})
        assert result.status == "completed", result.error
        assert result.outputs == {"summary": '2 items: ["tea", "cake"]'}
    finally:
        server.shutdown()
