"""The canary: a secret variable used everywhere a flow can use one (an `http` URL and header, a
message template, an output, a code node argument, an MCP server header and a tool argument) leaves
no trace: not in the database file (the variables table holds it encrypted, so the raw bytes of
the file are searched, and every other table dumped), not in any API response (runs, run detail,
events, decisions, the synchronous answer, flow export), not on the SSE stream or the WebSocket
channel, not in the logs. The run still used the real value (the local servers saw it).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import secrets
import sqlite3
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from plait.api import create_app
from plait.service import Settings
from plait.service.channel import FlowChannel

from .conftest import API_KEY

TOOLS_DIR = Path(__file__).resolve().parents[1] / "tools"


def _load_mcp_helpers() -> Any:
    """tests/tools/_mcp.py (the real MCP test server as a subprocess), loaded by path."""
    spec = importlib.util.spec_from_file_location("_canary_mcp", TOOLS_DIR / "_mcp.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class _Echo(BaseHTTPRequestHandler):
    """Answers every request with what it received; remembers it."""

    seen: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        got = {"query": parse_qs(parts.query), "headers": {k.lower(): v for k, v in self.headers.items()}}
        self.seen.append(got)
        body = json.dumps(got).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    _Echo.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def mcp_url() -> Iterator[str]:
    helpers = _load_mcp_helpers()
    server = helpers.HttpServer()
    yield server.url
    server.stop()


def canary_flow(echo: str, mcp_url: str) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "canary",
        "settings": {
            "mcp_servers": {
                "web": {
                    "url": mcp_url,
                    "headers": {"Authorization": "Bearer ${MCP_TOKEN}", "X-Canary": "${CANARY}"},
                }
            }
        },
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "call",
                "type": "http",
                "config": {
                    "url": echo + "/echo?api_key={{env.CANARY}}",
                    "headers": {"X-Api-Key": "{{env.CANARY}}", "Authorization": "Bearer {{env.CANARY}}"},
                },
            },
            {"id": "note", "type": "message", "config": {"text": "The token is {{env.CANARY}}."}},
            {
                "id": "code",
                "type": "code",
                "config": {
                    "code": "def main(token):\n    return {'seen': token, 'n': len(token)}\n",
                    "arguments": {"token": "{{env.CANARY}}"},
                },
            },
            {
                "id": "tool",
                "type": "tool",
                "config": {"tool": "mcp:web/shout", "args": {"text": "{{env.CANARY}}"}},
            },
            {
                "id": "out",
                "type": "output",
                "config": {
                    "name": "leak",
                    "value": {
                        "env": "{{env.CANARY}}",
                        "echoed": "{{call.body.query.api_key}}",
                        "code": "{{code.seen}}",
                        "tool": "{{tool}}",
                    },
                },
            },
        ],
        "edges": [
            {"source": "start", "target": "call"},
            {"source": "call", "target": "note"},
            {"source": "note", "target": "code"},
            {"source": "code", "target": "tool"},
            {"source": "tool", "target": "out"},
        ],
    }


def human_flow() -> dict[str, Any]:
    """A person is asked about the secret (the task's message and prefill hold it)."""
    return {
        "schema": "plait/flow@1",
        "id": "canary-human",
        "nodes": [
            {
                "id": "ask",
                "type": "human",
                "config": {
                    "message": "Use the key {{env.CANARY}}?",
                    "fields": [{"name": "note", "type": "text", "default": "{{env.CANARY}}"}],
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{ask.note}}"}},
        ],
        "edges": [{"source": "ask", "source_port": "submit", "target": "out"}],
    }


def failing_flow() -> dict[str, Any]:
    """A run that fails with the secret in its error (the URL's path)."""
    return {
        "schema": "plait/flow@1",
        "id": "canary-fails",
        "nodes": [
            {
                "id": "call",
                "type": "http",
                "config": {"url": "http://127.0.0.1:9/{{env.CANARY}}/x", "retries": 0, "timeout_s": 5},
            }
        ],
        "edges": [],
    }


class _Channel:
    def __init__(self, app: Any) -> None:
        self.out: list[dict[str, Any]] = []
        self.done = asyncio.Event()
        self.channel = FlowChannel(app.state.services, self._send)

    async def _send(self, message: dict[str, Any]) -> None:
        self.out.append(json.loads(json.dumps(message, default=str)))
        if message.get("type") == "run_finished":
            self.done.set()

    async def send(self, message: dict[str, Any]) -> None:
        await self.channel.handle(json.dumps(message))


def _dump_tables(path: Path) -> str:
    """Every row of every table but `variables` (whose values are encrypted), as text."""
    db = sqlite3.connect(path)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        parts = []
        for table in tables:
            if table == "variables":
                continue
            parts.extend(repr(row) for row in db.execute(f'SELECT * FROM "{table}"'))
        return "\n".join(parts)
    finally:
        db.close()


async def test_the_canary_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, echo: str, mcp_url: str
) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    caplog.set_level(logging.DEBUG)
    # Digits and dashes: the same in every encoding (JSON, URL) and under upper() (the MCP tool shouts).
    canary = "-".join(f"{secrets.randbelow(10**6):06d}" for _ in range(5))
    db_path = tmp_path / "plait.db"
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{db_path}",
        api_key=API_KEY,
        lease_ttl_s=3.0,
        sweep_interval_s=0.1,
        sse_heartbeat_s=0.5,
    )
    responses: list[str] = []
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", headers={"x-api-key": API_KEY}, timeout=60
        ) as client:

            async def get(url: str, **params: Any) -> httpx.Response:
                r = await client.get(url, params=params)
                assert r.status_code == 200, (url, r.text)
                responses.append(r.text)
                return r

            for name, value in (("CANARY", canary), ("MCP_TOKEN", "test-token")):
                r = await client.put(f"/api/v1/variables/{name}", json={"value": value, "is_secret": True})
                assert r.status_code == 200, r.text
            for document in (canary_flow(echo, mcp_url), failing_flow(), human_flow()):
                r = await client.post("/api/v1/flows", json={"document": document})
                assert r.status_code == 201, r.text

            # A synchronous run: the answer, then every view of it.
            r = await client.post(
                "/api/v1/flows/canary/runs", params={"version": "draft"}, json={"inputs": {}}
            )
            responses.append(r.text)
            answer = r.json()
            assert answer["status"] == "completed", answer
            run_id = answer["id"]
            assert answer["outputs"]["leak"] == {"env": "********", "echoed": ["********"], "code": "********",
                                                 "tool": "********"}  # fmt: skip
            # The run used the real value.
            assert _Echo.seen and _Echo.seen[-1]["query"]["api_key"] == [canary]
            assert _Echo.seen[-1]["headers"]["x-api-key"] == canary

            failed = await client.post(
                "/api/v1/flows/canary-fails/runs", params={"version": "draft"}, json={}
            )
            responses.append(failed.text)
            assert failed.json().get("status") == "failed", failed.text
            failed_id = failed.json()["id"]

            # A run waiting for a person: its task (read by its token) and the answer.
            waiting = await client.post(
                "/api/v1/flows/canary-human/runs", params={"version": "draft"}, json={}
            )
            responses.append(waiting.text)
            assert waiting.json().get("status") == "waiting", waiting.text
            token = waiting.json()["tasks"][0]["token"]
            task = await get(f"/api/v1/human-tasks/{token}")
            assert task.json()["message"] == "Use the key ********?"
            r = await client.post(
                f"/api/v1/human-tasks/{token}/submit", json={"action": "submit", "values": {"note": "fine"}}
            )
            responses.append(r.text)
            assert r.status_code == 200, r.text
            await get(f"/api/v1/runs/{waiting.json()['id']}")

            # A streamed run (SSE).
            async with client.stream(
                "POST", "/api/v1/flows/canary/runs", params={"version": "draft", "mode": "stream"}, json={}
            ) as stream:
                responses.append("".join([chunk async for chunk in stream.aiter_text()]))

            # The WebSocket flow channel: a run started there, and a replay of the first one.
            ws = _Channel(app)
            await ws.send({"type": "auth", "api_key": API_KEY})
            await ws.send({"type": "run", "flow_id": "canary", "version": "draft", "inputs": {}})
            await asyncio.wait_for(ws.done.wait(), 60)
            ws.done.clear()
            await ws.send({"type": "subscribe", "run_id": run_id})
            await asyncio.wait_for(ws.done.wait(), 60)
            channel_text = json.dumps(ws.out)
            assert "node_finished" in channel_text

            detail = (await get(f"/api/v1/runs/{run_id}")).json()
            assert detail["nodes"]["code"]["output"]["seen"] == "********"
            for rid in (run_id, failed_id):
                await get(f"/api/v1/runs/{rid}")
                await get(f"/api/v1/runs/{rid}/events")
                await get(f"/api/v1/runs/{rid}/decisions")
            listing = await get("/api/v1/runs")
            assert any(run["error"] for run in listing.json())
            await get("/api/v1/flows/canary")
            await get("/api/v1/flows/canary/export")
            await get("/api/v1/flows/canary/export", format="yaml")
            await get("/api/v1/variables")

            # A log line quoting the secret (as a node author's or a library's might).
            logging.getLogger("plait.nodes.custom").warning("calling %s with key=%s", echo, canary)
            logging.getLogger("plait.service").error("failed: " + canary)

    assert failed.json()["error"] and "********" in failed.json()["error"]
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("plait.db")}
    assert "plait.db" in files
    places = {
        "api responses": "\n".join(responses),
        "websocket channel": channel_text,
        "logs": caplog.text + "\n".join(r.getMessage() for r in caplog.records),
        "database tables": _dump_tables(db_path),
    }
    for where, text in places.items():
        assert canary not in text, where
    for name, data in files.items():
        assert canary.encode() not in data, name
    assert "********" in places["database tables"]


async def test_export_scrubs_the_stored_secret_values(client: httpx.AsyncClient) -> None:
    """A stored secret typed literally into a flow (where no field name or pattern gives it away)
    is scrubbed from the export by value; the stored draft itself is the owner's and unchanged."""
    value = "plain-looking-words-42"
    r = await client.put("/api/v1/variables/LITERAL", json={"value": value, "is_secret": True})
    assert r.status_code == 200, r.text
    document = {
        "schema": "plait/flow@1",
        "id": "literal",
        "nodes": [{"id": "m", "type": "message", "config": {"text": f"say {value} and {{{{env.LITERAL}}}}"}}],
        "edges": [],
    }
    assert (await client.post("/api/v1/flows", json={"document": document})).status_code == 201
    for fmt in ("json", "yaml"):
        text = (await client.get("/api/v1/flows/literal/export", params={"format": fmt})).text
        assert value not in text and "********" in text and "{{env.LITERAL}}" in text
