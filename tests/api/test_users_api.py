"""Users, keys, sessions and per-user variables through the HTTP API (the access rules of every
route are in test_access_matrix.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from plait.service.channel import FlowChannel

from .conftest import API_KEY


@pytest.fixture
async def admin(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(app, API_KEY) as c:
        yield c


def _client(app: Any, key: str | None = None) -> httpx.AsyncClient:
    headers = {"x-api-key": key} if key else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test", headers=headers, timeout=30
    )


async def _user(admin: httpx.AsyncClient, email: str, role: str = "editor", **extra: Any) -> tuple[str, str]:
    r = await admin.post("/api/v1/users", json={"email": email, "role": role, **extra})
    assert r.status_code == 201, r.text
    user_id = r.json()["id"]
    scopes = {"admin": ["read", "write", "run", "admin"], "editor": ["read", "write", "run"]}.get(
        role, ["read"]
    )
    r = await admin.post(f"/api/v1/users/{user_id}/api-keys", json={"name": "k", "scopes": scopes})
    assert r.status_code == 201, r.text
    return user_id, r.json()["key"]


def _flow(flow_id: str, value: str = "{{env.TOKEN}}") -> dict[str, Any]:
    return {
        "id": flow_id,
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "out", "type": "output", "config": {"name": "seen", "value": value}},
        ],
        "edges": [{"source": "start", "target": "out"}],
    }


async def test_password_login_sets_a_session_cookie_and_logout_ends_it(
    app: Any, admin: httpx.AsyncClient
) -> None:
    await _user(admin, "ann@example.com", password="correct horse")
    async with _client(app) as browser:
        for email, password in (
            ("ann@example.com", "wrong password"),
            ("nobody@example.com", "correct horse"),
        ):
            r = await browser.post("/api/v1/auth/login", json={"email": email, "password": password})
            assert r.status_code == 401 and r.json()["error"]["message"] == "wrong email or password"
        assert (await browser.get("/api/v1/me")).status_code == 401
        r = await browser.post(
            "/api/v1/auth/login", json={"email": "ANN@example.com ", "password": "correct horse"}
        )
        assert r.status_code == 200, r.text
        assert r.json()["user"]["email"] == "ann@example.com"
        set_cookie = r.headers["set-cookie"].lower()
        assert "httponly" in set_cookie and "samesite=strict" in set_cookie and "max-age=" in set_cookie
        me = (await browser.get("/api/v1/me")).json()
        assert me["auth"] == "session" and me["role"] == "editor" and me["scopes"] == ["read", "run", "write"]
        assert (await browser.post("/api/v1/flows", json={"document": _flow("mine")})).status_code == 201
        assert (await browser.post("/api/v1/auth/logout")).status_code == 204
        assert (await browser.get("/api/v1/me")).status_code == 401


async def test_weak_password_and_duplicate_email_are_clear_errors(admin: httpx.AsyncClient) -> None:
    r = await admin.post("/api/v1/users", json={"email": "bo@example.com", "password": "short"})
    assert r.status_code == 422 and "at least 8 characters" in r.json()["error"]["message"]
    await _user(admin, "bo@example.com")
    r = await admin.post("/api/v1/users", json={"email": "BO@example.com"})
    assert r.status_code == 409
    r = await admin.post("/api/v1/users", json={"email": "not-an-email"})
    assert r.status_code == 422


async def test_keys_cannot_grow_their_scopes(app: Any, admin: httpx.AsyncClient) -> None:
    _, key = await _user(admin, "kay@example.com")
    async with _client(app, key) as kay:
        r = await kay.post("/api/v1/api-keys", json={"name": "ro", "scopes": ["read"]})
        assert (
            r.status_code == 201 and r.json()["key"].startswith("plait_") and r.json()["scopes"] == ["read"]
        )
        read_only = r.json()["key"]
        r = await kay.post("/api/v1/api-keys", json={"name": "adm", "scopes": ["admin"]})
        assert r.status_code == 422 and "cannot have the scope" in r.json()["error"]["message"]
        listed = (await kay.get("/api/v1/api-keys")).json()
        assert len(listed) == 2 and all("key" not in k for k in listed)
    async with _client(app, read_only) as ro:
        r = await ro.post("/api/v1/api-keys", json={"name": "rw", "scopes": ["read", "write"]})
        assert r.status_code == 422  # a read-only key cannot mint a writing one
        r = await ro.post("/api/v1/flows", json={"document": _flow("x")})
        assert r.status_code == 403 and "lacks the `write` scope" in r.json()["error"]["message"]


async def test_a_viewer_reads_what_is_shared_and_writes_nothing(app: Any, admin: httpx.AsyncClient) -> None:
    owner_id, owner_key = await _user(admin, "own@example.com")
    viewer_id, viewer_key = await _user(admin, "vi@example.com", role="viewer")
    async with _client(app, owner_key) as owner, _client(app, viewer_key) as viewer:
        assert (await owner.post("/api/v1/flows", json={"document": _flow("f")})).status_code == 201
        # Shared as editor, a viewer-role user still cannot change or run it: the role caps it.
        assert (
            await owner.put(f"/api/v1/flows/f/shares/{viewer_id}", json={"role": "editor"})
        ).status_code == 200
        assert (await viewer.get("/api/v1/flows/f")).json()["access"] == "editor"
        r = await viewer.put("/api/v1/flows/f", json={"document": _flow("f", "changed")})
        assert r.status_code == 403 and "role `viewer`" in r.json()["error"]["message"]
        assert (await viewer.post("/api/v1/flows/f/runs", json={})).status_code == 403
        assert (await viewer.post("/api/v1/flows", json={"document": _flow("g")})).status_code == 403
        r = await admin.post(f"/api/v1/users/{viewer_id}/api-keys", json={"name": "w", "scopes": ["write"]})
        assert r.status_code == 422  # a key cannot exceed its user's role
        shares = (await owner.get("/api/v1/flows/f/shares")).json()
        assert shares == [{"user_id": viewer_id, "email": "vi@example.com", "name": "", "role": "editor"}]
        assert (await owner.delete(f"/api/v1/flows/f/shares/{viewer_id}")).status_code == 204
        assert (await viewer.get("/api/v1/flows/f")).status_code == 404
        r = await owner.put(f"/api/v1/flows/f/shares/{owner_id}", json={"role": "viewer"})
        assert r.status_code == 409


async def test_disabled_users_and_revoked_keys_stop_at_once(app: Any, admin: httpx.AsyncClient) -> None:
    user_id, key = await _user(admin, "dee@example.com", password="dee-password")
    async with _client(app, key) as dee, _client(app) as browser:
        assert (await dee.get("/api/v1/me")).status_code == 200
        r = await browser.post(
            "/api/v1/auth/login", json={"email": "dee@example.com", "password": "dee-password"}
        )
        assert r.status_code == 200
        r = await admin.post(f"/api/v1/users/{user_id}/disable")
        assert r.status_code == 200 and r.json()["disabled"] is True
        assert (await dee.get("/api/v1/me")).status_code == 401
        assert (await browser.get("/api/v1/me")).status_code == 401  # the session ended too
        r = await browser.post(
            "/api/v1/auth/login", json={"email": "dee@example.com", "password": "dee-password"}
        )
        assert r.status_code == 401
        await admin.patch(f"/api/v1/users/{user_id}", json={"disabled": False})
        assert (await dee.get("/api/v1/me")).status_code == 200
        key_id = next(k["id"] for k in (await dee.get("/api/v1/api-keys")).json())
        assert (await dee.delete(f"/api/v1/api-keys/{key_id}")).status_code == 204
        assert (await dee.get("/api/v1/me")).status_code == 401
    me = (await admin.get("/api/v1/me")).json()
    r = await admin.patch(f"/api/v1/users/{me['id']}", json={"role": "viewer"})
    assert r.status_code == 409  # nobody locks themselves out


async def test_variables_are_per_user_and_runs_read_their_starters(
    app: Any, admin: httpx.AsyncClient
) -> None:
    """A run reads the variables of the user it acts as, over the deployment-wide ones: sharing
    a flow never lends its owner's secrets (an editor could otherwise template them out)."""
    ann_id, ann_key = await _user(admin, "ann@example.com")
    _, bob_key = await _user(admin, "bob@example.com")
    r = await admin.put(
        "/api/v1/variables/TOKEN?scope=global",
        json={"value": "deployment"},  # not secret: outputs show it
    )
    assert r.status_code == 200 and r.json()["scope"] == "global"
    async with _client(app, ann_key) as ann, _client(app, bob_key) as bob:
        r = await ann.put("/api/v1/variables/TOKEN", json={"value": "ann-secret"})
        assert r.status_code == 200 and r.json() == {**r.json(), "scope": "user", "value": "ann-secret"}
        r = await ann.put("/api/v1/variables/KEY", json={"value": "hidden-value", "is_secret": True})
        assert r.json()["value"] == "********"
        r = await bob.put("/api/v1/variables/TOKEN?scope=global", json={"value": "bob-wins"})
        assert r.status_code == 403  # only admins set deployment-wide variables
        listed = [(v["name"], v["scope"]) for v in (await ann.get("/api/v1/variables")).json()]
        assert listed == [("KEY", "user"), ("TOKEN", "user"), ("TOKEN", "global")]
        assert [(v["name"], v["scope"]) for v in (await bob.get("/api/v1/variables")).json()] == [
            ("TOKEN", "global")
        ]

        await ann.post("/api/v1/flows", json={"document": _flow("reader")})
        r = await ann.post("/api/v1/flows/reader/runs", params={"version": "draft"}, json={})
        assert r.json()["outputs"] == {"seen": "ann-secret"}, r.text
        await ann.put(
            f"/api/v1/flows/reader/shares/{(await bob.get('/api/v1/me')).json()['id']}",
            json={"role": "editor"},
        )
        r = await bob.post("/api/v1/flows/reader/runs", params={"version": "draft"}, json={})
        assert r.json()["outputs"] == {"seen": "deployment"}, r.text  # his run, not her secret
        runs = {x["id"] for x in (await ann.get("/api/v1/runs", params={"flow_id": "reader"})).json()}
        assert r.json()["id"] in runs  # she sees runs of her flow, also his
        assert (await bob.delete("/api/v1/variables/TOKEN")).status_code == 404  # he has none
        assert ann_id


async def test_the_flow_channel_checks_access_per_run(app: Any, admin: httpx.AsyncClient) -> None:
    _, ann_key = await _user(admin, "ann@example.com")
    _, bob_key = await _user(admin, "bob@example.com")
    async with _client(app, ann_key) as ann:
        await ann.post("/api/v1/flows", json={"document": _flow("f", "hi")})
        run_id = (await ann.post("/api/v1/flows/f/runs", params={"version": "draft"}, json={})).json()["id"]
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    channel = FlowChannel(app.state.services, send)
    assert await channel.authenticate(bob_key)
    for message in (
        {"type": "subscribe", "run_id": run_id},
        {"type": "stop", "run_id": run_id},
        {"type": "run", "flow_id": "f", "version": "draft"},
    ):
        await channel.handle(json.dumps(message))
        assert sent[-1]["type"] == "error" and sent[-1]["code"] == "not_found", sent[-1]


async def test_password_guessing_is_throttled_per_email(app: Any, admin: httpx.AsyncClient) -> None:
    await _user(admin, "gus@example.com", password="right-password")
    async with _client(app) as browser:
        for _ in range(5):
            r = await browser.post(
                "/api/v1/auth/login", json={"email": "gus@example.com", "password": "guess"}
            )
            assert r.status_code == 401
        r = await browser.post(
            "/api/v1/auth/login", json={"email": "gus@example.com", "password": "right-password"}
        )
        assert r.status_code == 429 and "try again in" in r.json()["error"]["message"]
        r = await browser.post("/api/v1/auth/login", json={"email": "other@example.com", "password": "x" * 8})
        assert r.status_code == 401  # other emails are not held up


async def test_request_bodies_are_capped(app: Any, admin: httpx.AsyncClient, monkeypatch: Any) -> None:
    """The outer wall: a body over PLAIT_MAX_BODY_BYTES is a clear 413 before the route reads it,
    declared (content-length) or streamed (chunked)."""
    from plait.api.body_limit import BodyLimit

    limited = BodyLimit(app, max_bytes=1000)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=limited), base_url="http://test", headers={"x-api-key": API_KEY}
    ) as c:
        r = await c.post("/api/v1/flows/validate", content=b'{"content": "' + b"x" * 2000 + b'"}')
        assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"

        async def chunks() -> Any:
            for _ in range(5):
                yield b" " * 400

        r = await c.post(
            "/api/v1/flows/validate", content=chunks(), headers={"content-type": "application/json"}
        )
        assert r.status_code == 413
        r = await c.post("/api/v1/flows/validate", json={"document": _flow("small")})
        assert r.status_code == 200
