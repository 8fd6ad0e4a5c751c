"""`/ws` on the real server (a `plait serve` subprocess), driven by the `websockets` client."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from .conftest import API_KEY, human_flow, linear_flow
from .test_editor_api import branching_flow
from .test_server import Server, create_published


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    srv = Server(Path(tmp_path_factory.mktemp("ws"))).start()
    with srv.client() as c:
        create_published(c, branching_flow("br"))
        create_published(c, linear_flow("slow", 1, delay=30))
        create_published(c, human_flow("hum"))
    yield srv
    srv.stop()


def ws_url(server: Server, query: str = "") -> str:
    return f"ws://127.0.0.1:{server.port}/ws{query}"


def recv(ws: ClientConnection, timeout: float = 15) -> dict[str, Any]:
    return json.loads(ws.recv(timeout=timeout))


def recv_until(ws: ClientConnection, pred: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    seen = []
    while True:
        msg = recv(ws)
        seen.append(msg)
        if pred(msg):
            return seen


def test_run_over_the_socket_with_the_key_in_the_url(server: Server) -> None:
    with connect(ws_url(server, f"?api_key={API_KEY}")) as ws:
        ws.send(json.dumps({"type": "run", "flow_id": "br", "inputs": {"n": 99}}))
        accepted = recv(ws)
        assert accepted["type"] == "run_accepted"
        events = recv_until(ws, lambda m: m["type"] == "run_finished")
    types = [e["type"] for e in events]
    for kind in ("run_started", "node_started", "node_finished", "edge_fired", "node_skipped"):
        assert kind in types, kind
    assert events[-1]["status"] == "completed" and events[-1]["outputs"] == {"size": "big 99"}
    started = next(e for e in events if e["type"] == "node_started" and e["node_id"] == "check")
    assert started["node_type"] == "if"
    # The SSE stream of the same run carries the same events.
    with server.client() as c:
        detail = c.get(f"/api/v1/runs/{accepted['run_id']}").json()
    assert detail["last_seq"] == events[-1]["seq"]


def test_auth_as_first_message_and_stop(server: Server) -> None:
    with connect(ws_url(server)) as ws:
        ws.send(json.dumps({"type": "auth", "api_key": API_KEY}))
        assert recv(ws)["type"] == "authenticated"
        ws.send(json.dumps({"type": "run", "flow_id": "slow", "inputs": {"query": "q"}}))
        run_id = recv(ws)["run_id"]
        recv_until(ws, lambda m: m["type"] == "node_started" and m.get("node_id") == "d0")
        ws.send(json.dumps({"type": "stop", "run_id": run_id}))
        seen = recv_until(ws, lambda m: m["type"] == "run_finished")
        assert seen[-1]["status"] == "cancelled"
        stopped = [m for m in seen if m["type"] == "stopped"] or [recv(ws)]
        assert stopped[0]["status"] == "cancelled"


def test_header_key_works_for_non_browser_clients(server: Server) -> None:
    with connect(ws_url(server), additional_headers={"x-api-key": API_KEY}) as ws:
        ws.send(json.dumps({"type": "ping"}))
        assert recv(ws) == {"type": "pong"}


def test_a_wrong_key_closes_with_4401(server: Server) -> None:
    with connect(ws_url(server, "?api_key=wrong")) as ws:
        msg = recv(ws)
        assert msg["type"] == "error" and msg["code"] == "unauthorized"
        with pytest.raises(ConnectionClosed) as info:
            ws.recv(timeout=5)
    assert info.value.rcvd is not None and info.value.rcvd.code == 4401


def test_messages_before_auth_are_refused(server: Server) -> None:
    with connect(ws_url(server)) as ws:
        ws.send(json.dumps({"type": "run", "flow_id": "br", "inputs": {"n": 1}}))
        msg = recv(ws)
        assert msg["code"] == "unauthorized" and "api_key" in msg["message"]
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)


def test_bad_frames_keep_the_connection(server: Server) -> None:
    with connect(ws_url(server, f"?api_key={API_KEY}")) as ws:
        ws.send("not json")
        assert recv(ws)["code"] == "invalid_json"
        ws.send(json.dumps({"type": "dance"}))
        assert recv(ws)["code"] == "unknown_type"
        ws.send(b'{"type": "ping"}')
        assert recv(ws)["type"] == "pong"


def test_attach_to_a_waiting_run_and_watch_it_finish(server: Server) -> None:
    with server.client() as c:
        started = c.post("/api/v1/flows/hum/runs", json={"inputs": {"query": "q"}}).json()
        assert started["status"] == "waiting"
        with connect(ws_url(server, f"?api_key={API_KEY}")) as ws:
            ws.send(json.dumps({"type": "subscribe", "run_id": started["id"]}))
            assert recv(ws)["type"] == "subscribed"
            replay = recv_until(ws, lambda m: m["type"] == "run_finished")
            assert replay[-1]["status"] == "waiting"
            token = started["tasks"][0]["token"]
            r = c.post(
                f"/api/v1/human-tasks/{token}/submit", json={"action": "reject", "values": {"comment": "no"}}
            )
            assert r.status_code == 200
            live = recv_until(ws, lambda m: m["type"] == "run_finished")
            assert live[-1]["status"] == "completed" and live[-1]["outputs"] == {"decision": "no: no"}


def test_the_key_in_the_url_is_not_logged(tmp_path: Path) -> None:
    srv = Server(tmp_path, args=["--log-level", "info"]).start()
    try:
        with connect(ws_url(srv, f"?api_key={API_KEY}")) as ws:
            ws.send(json.dumps({"type": "ping"}))
            assert recv(ws) == {"type": "pong"}
    finally:
        srv.stop()
    log = srv.log()
    assert "WebSocket /ws?api_key=********" in log  # logged, with the key masked
    assert API_KEY not in log
