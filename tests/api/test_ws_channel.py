"""The flow channel in-process: `FlowChannel` on the app's services, its replies captured."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from plait.service.channel import FlowChannel

from .conftest import API_KEY, human_flow, linear_flow
from .test_editor_api import branching_flow


class Client:
    """A channel with its outgoing messages in a queue."""

    def __init__(self, app: Any, *, authenticated: bool = True) -> None:
        self.out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.services = app.state.services
        self.channel = FlowChannel(self.services, self._send)
        self.sign_in = authenticated  # as the local admin, before the first message

    async def _send(self, message: dict[str, Any]) -> None:
        json.dumps(message, default=str)  # what the WebSocket sends must serialise
        await self.out.put(message)

    async def send(self, message: dict[str, Any] | str) -> None:
        if self.sign_in:
            self.sign_in = False
            self.channel.who = await self.services.users.local_admin()
        await self.channel.handle(message if isinstance(message, str) else json.dumps(message))

    async def next(self, timeout: float = 10.0) -> dict[str, Any]:
        return await asyncio.wait_for(self.out.get(), timeout)

    async def until(self, pred: Any, timeout: float = 15.0) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        while True:
            msg = await self.next(timeout)
            seen.append(msg)
            if pred(msg):
                return seen


def finished(msg: dict[str, Any]) -> bool:
    return msg["type"] == "run_finished"


async def test_run_streams_the_live_events_of_a_branching_flow(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": branching_flow()})
    c = Client(app)
    await c.send({"type": "run", "flow_id": "br", "version": "draft", "inputs": {"n": 3}, "id": 7})
    accepted = await c.next()
    assert accepted["type"] == "run_accepted" and accepted["id"] == 7 and accepted["flow_id"] == "br"
    run_id = accepted["run_id"]
    events = await c.until(finished)
    assert all(e["run_id"] == run_id for e in events)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = [(e["type"], e.get("node_id")) for e in events]
    assert kinds[0] == ("run_started", None)
    assert ("node_started", "check") in kinds and ("node_finished", "check") in kinds
    assert ("node_skipped", "big") in kinds
    fired = [e for e in events if e["type"] == "edge_fired"]
    assert {(e["from"], e["to"]) for e in fired} == {("start", "check"), ("check", "small")}
    check = next(e for e in events if e["type"] == "node_finished" and e["node_id"] == "check")
    assert check["ok"] is True and check["branch"] == ["false"]
    assert events[-1]["status"] == "completed" and events[-1]["outputs"] == {"size": "small 3"}
    # The same events as the run's stored log (the SSE stream's source).
    stored = (await client.get(f"/api/v1/runs/{run_id}")).json()
    assert stored["last_seq"] == events[-1]["seq"]


async def test_camel_case_fields_of_the_seed_are_accepted(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": linear_flow("lin", 1)})
    c = Client(app)
    await c.send({"type": "run", "flowId": "lin", "input": {"query": "hi"}})
    accepted = await c.next()
    assert accepted["type"] == "run_accepted"
    events = await c.until(finished)
    assert events[-1]["outputs"] == {"result": "hi!"}


async def test_stop_cancels_a_long_run(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": linear_flow("slow", 1, delay=30)})
    c = Client(app)
    await c.send({"type": "run", "flow_id": "slow", "inputs": {"query": "x"}})
    run_id = (await c.next())["run_id"]
    await c.until(lambda m: m["type"] == "node_started" and m.get("node_id") == "d0")
    await c.send({"type": "stop", "runId": run_id, "id": "s"})
    seen = await c.until(lambda m: m["type"] == "stopped")
    assert seen[-1] == {"type": "stopped", "run_id": run_id, "status": "cancelled", "id": "s"}
    rest = [m for m in seen if m["type"] == "run_finished"]
    if not rest:
        rest = await c.until(finished)
    assert rest[-1]["status"] == "cancelled"


async def test_subscribe_replays_then_follows_a_waiting_run(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": human_flow("hum")})
    started = (await client.post("/api/v1/flows/hum/runs", json={"inputs": {"query": "q"}})).json()
    assert started["status"] == "waiting"
    run_id = started["id"]

    c = Client(app)
    await c.send({"type": "subscribe", "run_id": run_id})
    assert (await c.next()) == {"type": "subscribed", "run_id": run_id}
    replay = await c.until(lambda m: m["type"] == "run_finished")  # the pause
    assert replay[-1]["status"] == "waiting"
    waiting = next(m for m in replay if m["type"] == "waiting")
    assert waiting["node_id"] == "review"
    assert c.channel.subscriptions == [run_id]  # still attached while people answer

    token = started["tasks"][0]["token"]
    r = await client.post(
        f"/api/v1/human-tasks/{token}/submit", json={"action": "approve", "values": {"comment": "ok"}}
    )
    assert r.status_code == 200
    live = await c.until(lambda m: m["type"] == "run_finished" and m["status"] == "completed")
    assert live[-1]["outputs"] == {"decision": "yes: ok"}
    assert [m["seq"] for m in live] == sorted(m["seq"] for m in live)
    assert live[0]["seq"] == replay[-1]["seq"] + 1  # no gap, no repeat


async def test_subscribe_after_a_seq_and_unsubscribe(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": linear_flow("lin", 2)})
    done = (await client.post("/api/v1/flows/lin/runs", json={"inputs": {"query": "q"}})).json()
    c = Client(app)
    await c.send({"type": "subscribe", "run_id": done["id"], "after": 3})
    await c.next()
    events = await c.until(finished)
    assert events[0]["seq"] == 4
    await c.send({"type": "unsubscribe", "run_id": done["id"]})
    assert (await c.next())["type"] == "unsubscribed"


async def test_bad_messages_get_clear_errors(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": linear_flow("lin", 1)})
    c = Client(app)

    async def error_of(message: dict[str, Any] | str) -> dict[str, Any]:
        await c.send(message)
        reply = await c.next()
        assert reply["type"] == "error" and "seq" not in reply, reply
        return reply

    e = await error_of("{not json")
    assert e["code"] == "invalid_json" and "JSON" in e["message"]
    e = await error_of("[1, 2]")
    assert e["code"] == "invalid_message"
    e = await error_of({"type": "launch"})
    assert e["code"] == "unknown_type" and "run, stop, subscribe" in e["message"]
    e = await error_of({"type": "run"})
    assert e["code"] == "invalid_message" and "`flow_id`" in e["message"] and e["request"] == "run"
    e = await error_of({"type": "run", "flow_id": "ghost", "id": 1})
    assert e["code"] == "not_found" and "ghost" in e["message"] and e["id"] == 1
    e = await error_of({"type": "run", "flow_id": "lin", "inputs": {}})
    assert e["code"] == "invalid_input"
    assert e["details"]["problems"][0]["field"] == "inputs.query"
    e = await error_of({"type": "run", "flow_id": "lin", "inputs": "q"})
    assert e["code"] == "invalid_input" and "JSON object" in e["message"]
    e = await error_of({"type": "run", "flow_id": "lin", "version": "newest", "inputs": {"query": "q"}})
    assert "version" in e["message"]
    e = await error_of({"type": "stop", "run_id": "nope"})
    assert e["code"] == "not_found" and e["run_id"] == "nope"
    e = await error_of({"type": "subscribe", "run_id": "nope"})
    assert e["code"] == "not_found"
    e = await error_of({"type": "subscribe", "run_id": "x", "after": -1})
    assert "after" in e["message"]
    await c.send({"type": "ping", "id": "p"})
    assert await c.next() == {"type": "pong", "id": "p"}


async def test_stop_of_a_finished_run_is_a_conflict(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": linear_flow("lin", 1)})
    done = (await client.post("/api/v1/flows/lin/runs", json={"inputs": {"query": "q"}})).json()
    c = Client(app)
    await c.send({"type": "stop", "run_id": done["id"]})
    reply = await c.next()
    assert (
        reply["type"] == "error" and reply["code"] == "conflict" and "already completed" in reply["message"]
    )


async def test_unauthenticated_channel_needs_an_auth_message(app: Any) -> None:
    c = Client(app, authenticated=False)
    await c.send({"type": "ping"})
    reply = await c.next()
    assert reply["code"] == "unauthorized" and "api_key" in reply["message"]
    assert c.channel.closing == "unauthorized"

    c = Client(app, authenticated=False)
    await c.send({"type": "auth", "api_key": "wrong"})
    assert (await c.next())["code"] == "unauthorized" and c.channel.closing

    c = Client(app, authenticated=False)
    await c.send({"type": "auth", "apiKey": API_KEY, "id": 1})
    assert await c.next() == {"type": "authenticated", "id": 1}
    await c.send({"type": "ping"})
    assert (await c.next())["type"] == "pong"
    await c.channel.close()


async def test_a_waiting_event_means_the_task_is_readable(app: Any, client: httpx.AsyncClient) -> None:
    await client.post("/api/v1/flows", json={"document": human_flow("hum")})
    c = Client(app)
    await c.send({"type": "run", "flow_id": "hum", "inputs": {"query": "q"}})
    run_id = (await c.next())["run_id"]
    await c.until(lambda m: m["type"] == "waiting")
    detail = (await client.get(f"/api/v1/runs/{run_id}")).json()  # at once, as the canvas does
    assert [t["node_id"] for t in detail["tasks"]] == ["review"] and detail["tasks"][0]["token"]
    await c.channel.close()


async def test_running_an_invalid_draft_lists_its_problems(app: Any, client: httpx.AsyncClient) -> None:
    bad = linear_flow("bad", 1)
    bad["nodes"][1]["config"] = {"seconds": "soon"}
    await client.post("/api/v1/flows", json={"document": bad})
    c = Client(app)
    await c.send({"type": "run", "flow_id": "bad", "version": "draft", "inputs": {"query": "q"}})
    reply = await c.next()
    assert reply["type"] == "error" and reply["code"] == "invalid_flow"
    assert reply["details"]["problems"][0]["node_id"] == "d0"
    assert c.channel.subscriptions == []
