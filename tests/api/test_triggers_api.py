"""`/api/v1/flows/{flow_id}/triggers` and `/api/v1/hooks/{trigger_id}`: a webhook trigger is
called with its own secret (bearer) or an HMAC signature of timestamp and body, never an API key;
a bad signature is a 401, a replayed delivery a 409 (`replayed`), a body that does not match the
flow's input schema a 422 naming the field; the run records its trigger."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from plait.service.triggers import sign

from .conftest import linear_flow


async def _flow_with_hook(client: httpx.AsyncClient, config: dict[str, Any] | None = None) -> dict[str, Any]:
    assert (
        await client.post("/api/v1/flows", json={"document": linear_flow("hooked", n=1)})
    ).status_code == 201
    assert (await client.post("/api/v1/flows/hooked/versions", json={})).status_code == 201
    resp = await client.post(
        "/api/v1/flows/hooked/triggers", json={"kind": "webhook", "config": config or {}}
    )
    assert resp.status_code == 201, resp.text
    return resp.json()


def _signed(secret: str, body: dict[str, Any], t: int | None = None) -> tuple[bytes, dict[str, str]]:
    raw = json.dumps(body).encode()
    stamp = int(time.time()) if t is None else t
    return raw, {"x-plait-signature": sign(secret, stamp, raw), "content-type": "application/json"}


async def _wait_done(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while True:
        run = (await client.get(f"/api/v1/runs/{run_id}")).json()
        if run["status"] in ("completed", "failed", "cancelled"):
            return run
        assert time.monotonic() < deadline, run
        await asyncio.sleep(0.05)


async def test_a_webhook_with_its_secret_starts_a_run_that_records_the_trigger(
    app: Any, client: httpx.AsyncClient
) -> None:
    hook = await _flow_with_hook(client)
    assert hook["secret"].startswith("whsec_") and hook["url"] == f"/api/v1/hooks/{hook['id']}"
    listed = (await client.get("/api/v1/flows/hooked/triggers")).json()
    assert [t["id"] for t in listed] == [hook["id"]] and "secret" not in listed[0]
    bare = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")  # no API key
    async with bare:
        resp = await bare.post(
            hook["url"], json={"query": "hi"}, headers={"authorization": f"Bearer {hook['secret']}"}
        )
        assert resp.status_code == 202, resp.text
        run_id = resp.json()["id"]
        run = await _wait_done(client, run_id)
        assert run["status"] == "completed" and run["outputs"] == {"result": "hi!"}
        assert run["trigger_id"] == hook["id"]
        runs = (await client.get("/api/v1/runs", params={"flow_id": "hooked"})).json()
        assert [(r["id"], r["trigger_id"]) for r in runs] == [(run_id, hook["id"])]
        # X-Plait-Secret works too; an Idempotency-Key makes a resend a replay.
        headers = {"x-plait-secret": hook["secret"], "idempotency-key": "order-17"}
        assert (await bare.post(hook["url"], json={"query": "a"}, headers=headers)).status_code == 202
        again = await bare.post(hook["url"], json={"query": "a"}, headers=headers)
        assert again.status_code == 409 and again.json()["error"]["code"] == "replayed"
        # No secret, a wrong one, or an API key instead: 401.
        for headers in (
            {},
            {"authorization": "Bearer whsec_wrong"},
            {"x-api-key": client.headers["x-api-key"]},
        ):
            resp = await bare.post(hook["url"], json={"query": "x"}, headers=headers)
            assert resp.status_code == 401, (headers, resp.text)
        fires = (await client.get(f"/api/v1/flows/hooked/triggers/{hook['id']}")).json()["fires"]
        assert [f["status"] for f in fires] == ["started", "started"]


async def test_signed_deliveries_bad_signatures_and_replays(client: httpx.AsyncClient) -> None:
    hook = await _flow_with_hook(client, {"require_signature": True})
    secret, url = hook["secret"], hook["url"]
    raw, headers = _signed(secret, {"query": "signed"})
    resp = await client.post(url, content=raw, headers=headers)
    assert resp.status_code == 202, resp.text
    assert (await _wait_done(client, resp.json()["id"]))["trigger_id"] == hook["id"]
    # The same delivery again (same timestamp, body and signature): a replay.
    replay = await client.post(url, content=raw, headers=headers)
    assert replay.status_code == 409 and replay.json()["error"]["code"] == "replayed"
    # A bad signature: signed with another secret, a changed body, a changed timestamp.
    _, forged = _signed("whsec_other", {"query": "signed"})
    tampered = raw.replace(b"signed", b"evil!!")
    t = int(time.time())
    moved = {"x-plait-signature": sign(secret, t, raw).replace(f"t={t}", f"t={t + 1}")}
    for body, hdrs in ((raw, forged), (tampered, headers), (raw, moved)):
        resp = await client.post(url, content=body, headers=hdrs)
        assert resp.status_code == 401, resp.text
    stale, stale_headers = _signed(secret, {"query": "late"}, t=int(time.time()) - 600)
    resp = await client.post(url, content=stale, headers=stale_headers)
    assert resp.status_code == 401 and "too old" in resp.json()["error"]["message"]
    malformed = await client.post(url, content=raw, headers={"x-plait-signature": "v1=abc"})
    assert malformed.status_code == 401
    # This trigger takes signed deliveries only: its secret as a bearer token is refused.
    bearer = await client.post(url, json={"query": "x"}, headers={"authorization": f"Bearer {secret}"})
    assert bearer.status_code == 401 and "signed" in bearer.json()["error"]["message"]


async def test_a_body_that_does_not_match_the_input_schema_is_a_422_naming_the_field(
    client: httpx.AsyncClient,
) -> None:
    hook = await _flow_with_hook(client)
    auth = {"authorization": f"Bearer {hook['secret']}"}
    for body, field in (({"query": 5}, "query"), ({}, "query")):
        resp = await client.post(hook["url"], json=body, headers=auth)
        assert resp.status_code == 422, resp.text
        assert field in resp.text
    for raw in (b"[1, 2]", b"{not json"):
        resp = await client.post(hook["url"], content=raw, headers=auth)
        assert resp.status_code == 422, resp.text
    # A refused body is no delivery: nothing fired, and the same signed body once fixed is new.
    assert (await client.get(f"/api/v1/flows/hooked/triggers/{hook['id']}")).json()["fires"] == []
    raw, headers = _signed(hook["secret"], {"query": 7})
    assert (await client.post(hook["url"], content=raw, headers=headers)).status_code == 422
    raw, headers = _signed(hook["secret"], {"query": "7"})
    assert (await client.post(hook["url"], content=raw, headers=headers)).status_code == 202


async def test_managing_triggers(client: httpx.AsyncClient) -> None:
    hook = await _flow_with_hook(client)
    sched = await client.post(
        "/api/v1/flows/hooked/triggers",
        json={
            "kind": "schedule",
            "config": {"cron": "0 9 * * 1-5", "timezone": "Europe/Paris", "inputs": {"query": "daily"}},
        },
    )
    assert sched.status_code == 201, sched.text
    body = sched.json()
    assert body["next_fire_at"] > time.time() and "secret" not in body and body["config"]["missed"] == "skip"
    bad = await client.patch(f"/api/v1/flows/hooked/triggers/{body['id']}", json={"config": {"cron": "nope"}})
    assert bad.status_code == 422 and "config.cron" in bad.json()["error"]["message"]
    off = await client.patch(f"/api/v1/flows/hooked/triggers/{body['id']}", json={"enabled": False})
    assert (
        off.status_code == 200 and off.json()["enabled"] is False and off.json().get("next_fire_at") is None
    )
    # A disabled webhook takes no delivery.
    await client.patch(f"/api/v1/flows/hooked/triggers/{hook['id']}", json={"enabled": False})
    resp = await client.post(
        hook["url"], json={"query": "x"}, headers={"authorization": f"Bearer {hook['secret']}"}
    )
    assert resp.status_code == 404
    assert (await client.delete(f"/api/v1/flows/hooked/triggers/{hook['id']}")).status_code == 204
    assert (await client.get(f"/api/v1/flows/hooked/triggers/{hook['id']}")).status_code == 404
    assert [t["id"] for t in (await client.get("/api/v1/flows/hooked/triggers")).json()] == [body["id"]]
    # A trigger is reached through its own flow only.
    assert (
        await client.post("/api/v1/flows", json={"document": linear_flow("other", n=1)})
    ).status_code == 201
    assert (await client.get(f"/api/v1/flows/other/triggers/{body['id']}")).status_code == 404
    unknown = await client.post("/api/v1/flows/hooked/triggers", json={"kind": "email"})
    assert unknown.status_code == 422
