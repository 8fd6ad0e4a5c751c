"""The cross-user matrix: every route of the OpenAPI document x every kind of caller, with the
status each must get. A route with no rule here fails `test_every_route_has_a_rule`, so a new
route cannot ship without saying who may call it.

Callers: the flow's owner (an editor), another editor, a user the flow is shared with as viewer,
one it is shared with as editor, the owner's read-only key, no credential, and the deployment's
admin key. Each call gets a fresh "world" (a flow of the owner's with a waiting run, a cancelled
run, shares, a variable, a component, a spare key), so destructive calls do not change what the
next caller sees. 0 leaks: what another user may not see is a 404, and lists never name it.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from plait.api import create_app
from plait.service import Settings

from .conftest import API_KEY, human_flow

OK = "2xx"
ACTORS = ("owner", "other", "vshare", "eshare", "readonly", "nokey", "admin")


def _rule(
    owner: str, other: str, vshare: str, eshare: str, readonly: str, nokey: str, admin: str
) -> dict[str, str]:
    return dict(zip(ACTORS, (owner, other, vshare, eshare, readonly, nokey, admin), strict=True))


# The expected outcome per caller, by kind of route.
RULES: dict[str, dict[str, str]] = {
    "flow_view": _rule(OK, "404", OK, OK, OK, "401", OK),
    "flow_edit": _rule(OK, "404", "403", OK, "403", "401", OK),
    "flow_own": _rule(OK, "404", "403", "403", "403", "401", OK),
    "run_view": _rule(OK, "404", OK, OK, OK, "401", OK),
    "run_control": _rule(OK, "404", "403", OK, "403", "401", OK),
    "mine_read": _rule(OK, OK, OK, OK, OK, "401", OK),  # each caller sees their own
    "mine_write": _rule(OK, OK, OK, OK, "403", "401", OK),
    "owner_read": _rule(OK, "404", "404", "404", OK, "401", "404"),  # per-user namespace
    "owner_write": _rule(OK, "404", "404", "404", "403", "401", "404"),
    "own_key": _rule(OK, "404", "404", "404", OK, "401", OK),
    "admin": _rule("403", "403", "403", "403", "403", "401", OK),
    "public": _rule(OK, OK, OK, OK, OK, OK, OK),
}


@dataclass
class World:
    """One fresh set of the owner's resources (ids unique per world)."""

    n: int
    flow: str
    waiting_run: str
    done_run: str
    task_token: str
    spare_key: str
    spare_user: str
    variable: str
    component: str = "Upper"
    trigger: str = ""  # a webhook trigger of the flow
    restore_point: int = 0  # a restore point of the flow
    artifact: str = ""  # a file of done_run (a document node's output)
    kb: str = ""  # a knowledge base of the owner (B3)
    kb_document: str = ""  # a document in it
    forbidden: list[str] = field(default_factory=list)  # strings other users' lists must not contain


Request = Callable[[World, dict[str, str]], tuple[str, dict[str, Any] | None]]


def _get(path: str) -> Request:
    return lambda w, u: (path.format(w=w, u=u), None)


def _with(path: str, body: Callable[[World, dict[str, str]], Any]) -> Request:
    return lambda w, u: (path.format(w=w, u=u), body(w, u))


COMPONENT = '''
from plait.sdk import Component, Input, Output

class Upper(Component):
    """Upper-cases a text."""
    inputs = [Input("text", "string")]
    outputs = [Output("text", "string")]

    def run(self, text):
        return {"text": text.upper()}
'''

# The smallest RAGFlow agent: Begin -> Message.
RAGFLOW_DSL = {
    "components": {
        "begin": {
            "obj": {"component_name": "Begin", "params": {}},
            "downstream": ["Message:Hi"],
            "upstream": [],
        },
        "Message:Hi": {
            "obj": {"component_name": "Message", "params": {"content": ["hi"]}},
            "downstream": [],
            "upstream": ["begin"],
        },
    }
}

# (method, OpenAPI path) -> (rule, request: path and JSON body for a world)
ROUTES: dict[tuple[str, str], tuple[str, Request]] = {
    ("GET", "/healthz"): ("public", _get("/healthz")),
    # MCP over streamable HTTP: any caller with `read` reaches it (each sees only their own flows:
    # tests/mcp); a ping is the smallest message.
    ("POST", "/mcp"): (
        "mine_read",
        _with("/mcp", lambda w, u: {"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    ),
    ("GET", "/api/v1/flows"): ("mine_read", _get("/api/v1/flows")),
    ("POST", "/api/v1/flows"): (
        "mine_write",
        _with("/api/v1/flows", lambda w, u: {"document": human_flow(w.flow + "-new")}),
    ),
    ("POST", "/api/v1/flows/import"): (
        "mine_write",
        _with(
            "/api/v1/flows/import", lambda w, u: {"document": human_flow(w.flow + "-new"), "overwrite": False}
        ),
    ),
    ("GET", "/api/v1/flows/{flow_id}"): ("flow_view", _get("/api/v1/flows/{w.flow}")),
    ("PUT", "/api/v1/flows/{flow_id}"): (
        "flow_edit",
        _with("/api/v1/flows/{w.flow}", lambda w, u: {"document": human_flow(w.flow), "name": "renamed"}),
    ),
    ("DELETE", "/api/v1/flows/{flow_id}"): ("flow_own", _get("/api/v1/flows/{w.flow}")),
    ("GET", "/api/v1/flows/{flow_id}/shares"): ("flow_view", _get("/api/v1/flows/{w.flow}/shares")),
    ("PUT", "/api/v1/flows/{flow_id}/shares/{user_id}"): (
        "flow_own",
        _with("/api/v1/flows/{w.flow}/shares/{u[other]}", lambda w, u: {"role": "viewer"}),
    ),
    ("DELETE", "/api/v1/flows/{flow_id}/shares/{user_id}"): (
        "flow_own",
        _get("/api/v1/flows/{w.flow}/shares/{u[vshare]}"),
    ),
    ("GET", "/api/v1/flows/{flow_id}/export"): ("flow_view", _get("/api/v1/flows/{w.flow}/export")),
    ("POST", "/api/v1/flows/{flow_id}/versions"): (
        "flow_edit",
        _with("/api/v1/flows/{w.flow}/versions", lambda w, u: {}),
    ),
    ("GET", "/api/v1/flows/{flow_id}/versions"): ("flow_view", _get("/api/v1/flows/{w.flow}/versions")),
    ("GET", "/api/v1/flows/{flow_id}/versions/{version}"): (
        "flow_view",
        _get("/api/v1/flows/{w.flow}/versions/1"),
    ),
    ("DELETE", "/api/v1/flows/{flow_id}/versions/{version}"): (
        "flow_edit",
        _get("/api/v1/flows/{w.flow}/versions/1"),
    ),
    ("POST", "/api/v1/flows/{flow_id}/runs"): (
        "flow_edit",
        _with("/api/v1/flows/{w.flow}/runs?mode=background", lambda w, u: {"inputs": {"query": "q"}}),
    ),
    # "Run this step": one node of the draft with an earlier run's outputs (plait.api.routes.node_runs)
    ("POST", "/api/v1/flows/{flow_id}/nodes/{node_id}/run"): (
        "flow_edit",
        _with("/api/v1/flows/{w.flow}/nodes/start/run", lambda w, u: {"from_run": w.done_run}),
    ),
    ("GET", "/api/v1/runs"): ("mine_read", _get("/api/v1/runs")),
    ("GET", "/api/v1/runs/{run_id}"): ("run_view", _get("/api/v1/runs/{w.waiting_run}")),
    ("GET", "/api/v1/runs/{run_id}/events"): ("run_view", _get("/api/v1/runs/{w.done_run}/events")),
    ("POST", "/api/v1/runs/{run_id}/cancel"): (
        "run_control",
        _with("/api/v1/runs/{w.waiting_run}/cancel", lambda w, u: None),
    ),
    ("POST", "/api/v1/runs/{run_id}/resume"): (
        "run_control",
        _with(
            "/api/v1/runs/{w.waiting_run}/resume",
            lambda w, u: {"node_id": "review", "data": {"action": "approve", "values": {"comment": "ok"}}},
        ),
    ),
    ("POST", "/api/v1/runs/{run_id}/retry"): (
        "run_control",
        _with("/api/v1/runs/{w.done_run}/retry", lambda w, u: {"from_node": "review"}),
    ),
    ("GET", "/api/v1/runs/{run_id}/decisions"): ("run_view", _get("/api/v1/runs/{w.waiting_run}/decisions")),
    ("GET", "/api/v1/runs/{run_id}/artifacts/{artifact_id}"): (
        "run_view",
        _get("/api/v1/runs/{w.done_run}/artifacts/{w.artifact}"),
    ),
    ("GET", "/api/v1/human-tasks/{token}"): ("public", _get("/api/v1/human-tasks/{w.task_token}")),
    ("POST", "/api/v1/human-tasks/{token}/submit"): (
        "public",
        _with(
            "/api/v1/human-tasks/{w.task_token}/submit",
            lambda w, u: {"action": "approve", "values": {"comment": "y"}},
        ),
    ),
    ("POST", "/api/v1/webhooks/{flow_id}"): (
        "flow_edit",
        _with("/api/v1/webhooks/{w.flow}", lambda w, u: {"query": "q"}),
    ),
    ("GET", "/api/v1/flows/{flow_id}/triggers"): ("flow_view", _get("/api/v1/flows/{w.flow}/triggers")),
    ("POST", "/api/v1/flows/{flow_id}/triggers"): (
        "flow_edit",
        _with(
            "/api/v1/flows/{w.flow}/triggers", lambda w, u: {"kind": "schedule", "config": {"cron": "@daily"}}
        ),
    ),
    ("GET", "/api/v1/flows/{flow_id}/triggers/{trigger_id}"): (
        "flow_view",
        _get("/api/v1/flows/{w.flow}/triggers/{w.trigger}"),
    ),
    ("PATCH", "/api/v1/flows/{flow_id}/triggers/{trigger_id}"): (
        "flow_edit",
        _with("/api/v1/flows/{w.flow}/triggers/{w.trigger}", lambda w, u: {"enabled": False}),
    ),
    ("DELETE", "/api/v1/flows/{flow_id}/triggers/{trigger_id}"): (
        "flow_edit",
        _get("/api/v1/flows/{w.flow}/triggers/{w.trigger}"),
    ),
    # A delivery is authenticated by the trigger's own secret only: no API key (not even the
    # owner's or the admin's) starts a run through it (tests/api/test_triggers_api.py: with it).
    ("POST", "/api/v1/hooks/{trigger_id}"): (
        "trigger_secret",
        _with("/api/v1/hooks/{w.trigger}", lambda w, u: {"query": "q"}),
    ),
    ("GET", "/api/v1/components"): ("mine_read", _get("/api/v1/components")),
    ("POST", "/api/v1/components"): (
        "mine_write",
        _with("/api/v1/components", lambda w, u: {"source": COMPONENT}),
    ),
    ("POST", "/api/v1/components/validate"): (
        "mine_write",
        _with("/api/v1/components/validate", lambda w, u: {"source": COMPONENT}),
    ),
    ("GET", "/api/v1/components/{name}"): ("owner_read", _get("/api/v1/components/{w.component}")),
    ("DELETE", "/api/v1/components/{name}"): ("owner_write", _get("/api/v1/components/{w.component}")),
    ("GET", "/api/v1/node-types"): ("mine_read", _get("/api/v1/node-types")),
    ("POST", "/api/v1/node-types/{type_name}/ports"): (
        "mine_read",
        _with("/api/v1/node-types/delay/ports", lambda w, u: {"config": {"seconds": 0}}),
    ),
    ("POST", "/api/v1/flows/validate"): (
        "mine_read",
        _with("/api/v1/flows/validate", lambda w, u: {"document": human_flow("v")}),
    ),
    ("POST", "/api/v1/flows/{flow_id}/duplicate"): (
        # Viewing is enough to copy a flow into one's own library; a read-only key cannot write.
        "flow_view_write",
        _with("/api/v1/flows/{w.flow}/duplicate", lambda w, u: {}),
    ),
    ("GET", "/api/v1/variables"): ("mine_read", _get("/api/v1/variables")),
    ("PUT", "/api/v1/variables/{name}"): (
        "mine_write",
        _with("/api/v1/variables/{w.variable}", lambda w, u: {"value": "mine", "is_secret": True}),
    ),
    ("DELETE", "/api/v1/variables/{name}"): ("owner_write", _get("/api/v1/variables/{w.variable}")),
    ("GET", "/api/v1/tools"): ("mine_read", _get("/api/v1/tools?mcp=false")),
    ("GET", "/api/v1/llm/providers"): ("mine_read", _get("/api/v1/llm/providers")),
    ("POST", "/api/v1/llm/test"): (
        # Answers 200 with ok false (a refused port for an admin, blocked loopback for the others).
        "mine_write",
        _with("/api/v1/llm/test", lambda w, u: {"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}),
    ),
    ("GET", "/api/v1/me"): ("mine_read", _get("/api/v1/me")),
    ("GET", "/api/v1/api-keys"): ("mine_read", _get("/api/v1/api-keys")),
    ("POST", "/api/v1/api-keys"): (
        "mine_read",
        _with("/api/v1/api-keys", lambda w, u: {"name": "k", "scopes": ["read"]}),
    ),
    ("DELETE", "/api/v1/api-keys/{key_id}"): ("own_key", _get("/api/v1/api-keys/{w.spare_key}")),
    ("GET", "/api/v1/users"): ("admin", _get("/api/v1/users")),
    ("POST", "/api/v1/users"): (
        "admin",
        _with("/api/v1/users", lambda w, u: {"email": f"new{w.n}@example.com", "role": "viewer"}),
    ),
    ("PATCH", "/api/v1/users/{user_id}"): (
        "admin",
        _with("/api/v1/users/{w.spare_user}", lambda w, u: {"name": "x"}),
    ),
    ("POST", "/api/v1/users/{user_id}/disable"): (
        "admin",
        _with("/api/v1/users/{w.spare_user}/disable", lambda w, u: None),
    ),
    ("POST", "/api/v1/users/{user_id}/api-keys"): (
        "admin",
        _with("/api/v1/users/{w.spare_user}/api-keys", lambda w, u: {"name": "k", "scopes": ["read"]}),
    ),
    ("POST", "/api/v1/auth/login"): (
        "public",
        _with(
            "/api/v1/auth/login", lambda w, u: {"email": "owner@example.com", "password": "owner-password"}
        ),
    ),
    ("POST", "/api/v1/auth/logout"): ("public", _with("/api/v1/auth/logout", lambda w, u: None)),
    # A message names a flow the caller can view, and needs `write` (a turn may register a
    # component). The script (ASSISTANT_SCRIPT below) answers every message as off-topic.
    ("POST", "/api/v1/assistant/stream"): (
        "flow_view_write",
        _with(
            "/api/v1/assistant/stream",
            lambda w, u: {"flow_id": w.flow, "input_value": "hi", "provider": "scripted"},
        ),
    ),
    ("POST", "/api/v1/assistant"): (
        "flow_view_write",
        _with(
            "/api/v1/assistant", lambda w, u: {"flow_id": w.flow, "input_value": "hi", "provider": "scripted"}
        ),
    ),
    ("GET", "/api/v1/assistant/config"): ("mine_read", _get("/api/v1/assistant/config")),
    ("POST", "/api/v1/assistant/sessions/reset"): (
        "mine_write",
        _with("/api/v1/assistant/sessions/reset?session_id=s1", lambda w, u: None),
    ),
    ("GET", "/api/v1/flows/{flow_id}/restore-points"): (
        "flow_view",
        _get("/api/v1/flows/{w.flow}/restore-points"),
    ),
    ("GET", "/api/v1/flows/{flow_id}/restore-points/{point_id}"): (
        "flow_view",
        _get("/api/v1/flows/{w.flow}/restore-points/{w.restore_point}"),
    ),
    ("POST", "/api/v1/flows/{flow_id}/restore-points/{point_id}/restore"): (
        "flow_edit",
        _with("/api/v1/flows/{w.flow}/restore-points/{w.restore_point}/restore", lambda w, u: None),
    ),
    # RAGFlow's agent API (plait.api.routes.ragflow_agents): an agent is a flow, a session a run.
    ("GET", "/api/v1/agents"): ("mine_read", _get("/api/v1/agents")),
    ("POST", "/api/v1/agents"): (
        "mine_write",
        _with("/api/v1/agents", lambda w, u: {"title": f"agent-{w.n}", "dsl": RAGFLOW_DSL}),
    ),
    ("GET", "/api/v1/agents/{flow_id}"): ("flow_view", _get("/api/v1/agents/{w.flow}")),
    ("PUT", "/api/v1/agents/{flow_id}"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}", lambda w, u: {"title": "renamed"}),
    ),
    ("PATCH", "/api/v1/agents/{flow_id}"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}", lambda w, u: {"description": "changed"}),
    ),
    ("DELETE", "/api/v1/agents/{flow_id}"): ("flow_own", _get("/api/v1/agents/{w.flow}")),
    ("POST", "/api/v1/agents/{flow_id}/run"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}/run", lambda w, u: {"inputs": {"query": "a"}}),
    ),
    ("POST", "/api/v1/agents/{flow_id}/stream"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}/stream", lambda w, u: {"inputs": {"query": "a"}}),
    ),
    ("POST", "/api/v1/agents/{flow_id}/cancel"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}/cancel", lambda w, u: {"session_id": w.waiting_run}),
    ),
    ("GET", "/api/v1/agents/{flow_id}/versions"): ("flow_view", _get("/api/v1/agents/{w.flow}/versions")),
    ("POST", "/api/v1/agents/{flow_id}/versions"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}/versions", lambda w, u: {"title": "again"}),
    ),
    ("GET", "/api/v1/agents/{flow_id}/versions/{version_id}"): (
        "flow_view",
        _get("/api/v1/agents/{w.flow}/versions/1"),
    ),
    ("DELETE", "/api/v1/agents/{flow_id}/versions/{version_id}"): (
        "flow_edit",
        _get("/api/v1/agents/{w.flow}/versions/1"),
    ),
    # RAGFlow's sessions and completions: a session is a run of the agent (flow).
    ("POST", "/api/v1/agents/{flow_id}/sessions"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}/sessions", lambda w, u: {}),
    ),
    ("GET", "/api/v1/agents/{flow_id}/sessions"): ("flow_view", _get("/api/v1/agents/{w.flow}/sessions")),
    ("DELETE", "/api/v1/agents/{flow_id}/sessions"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}/sessions", lambda w, u: {"ids": [w.done_run]}),
    ),
    ("POST", "/api/v1/agents/{flow_id}/completions"): (
        "flow_edit",
        _with("/api/v1/agents/{w.flow}/completions", lambda w, u: {"question": "a", "stream": True}),
    ),
    # Knowledge bases (issue 16) are the owner's, as components: another user's is a 404.
    ("GET", "/api/v1/knowledge"): ("mine_read", _get("/api/v1/knowledge")),
    ("POST", "/api/v1/knowledge"): (
        "mine_write",
        _with("/api/v1/knowledge", lambda w, u: {"name": f"new-{w.n}"}),
    ),
    ("GET", "/api/v1/knowledge/{kb_id}"): ("owner_read", _get("/api/v1/knowledge/{w.kb}")),
    ("DELETE", "/api/v1/knowledge/{kb_id}"): ("owner_write", _get("/api/v1/knowledge/{w.kb}")),
    ("GET", "/api/v1/knowledge/{kb_id}/documents"): (
        "owner_read",
        _get("/api/v1/knowledge/{w.kb}/documents"),
    ),
    ("POST", "/api/v1/knowledge/{kb_id}/documents"): (
        "owner_write",
        _with("/api/v1/knowledge/{w.kb}/documents?filename=more.txt", lambda w, u: "more text"),
    ),
    ("DELETE", "/api/v1/knowledge/{kb_id}/documents/{document_id}"): (
        "owner_write",
        _get("/api/v1/knowledge/{w.kb}/documents/{w.kb_document}"),
    ),
    ("GET", "/api/v1/knowledge/{kb_id}/chunks"): ("owner_read", _get("/api/v1/knowledge/{w.kb}/chunks")),
    ("POST", "/api/v1/knowledge/{kb_id}/search"): (
        "owner_read",
        _with("/api/v1/knowledge/{w.kb}/search", lambda w, u: {"query": "refund"}),
    ),
}
ASSISTANT_SCRIPT = '[{"json": {"translation": "hi", "intent": "off_topic"}, "repeat": true}]'
RULES["flow_view_write"] = _rule(OK, "404", OK, OK, "403", "401", OK)
RULES["trigger_secret"] = _rule("401", "401", "401", "401", "401", "401", "401")
LIST_ROUTES = {
    path for (method, path), (rule, _) in ROUTES.items() if method == "GET" and rule == "mine_read"
}


class Matrix:
    """An app with the users and keys of the matrix; `world()` makes a fresh set of resources."""

    def __init__(self, client: httpx.AsyncClient, services: Any = None) -> None:
        self.client = client
        self.services = services  # for what no route creates (a restore point)
        self.keys: dict[str, str | None] = {"nokey": None, "admin": API_KEY}
        self.users: dict[str, str] = {}
        self.counter = itertools.count(1)

    async def _call(self, method: str, path: str, key: str | None = API_KEY, body: Any = None) -> Any:
        headers = {"x-api-key": key} if key else {}
        resp = await self.client.request(method, path, json=body, headers=headers)
        assert resp.status_code < 300, (method, path, resp.status_code, resp.text)
        return (
            resp.json()
            if resp.content and resp.headers.get("content-type", "").startswith("application/json")
            else None
        )

    async def setup(self) -> None:
        for actor in ("owner", "other", "vshare", "eshare"):
            user = await self._call(
                "POST",
                "/api/v1/users",
                body={"email": f"{actor}@example.com", "role": "editor", "password": f"{actor}-password"},
            )
            self.users[actor] = user["id"]
            created = await self._call(
                "POST",
                f"/api/v1/users/{user['id']}/api-keys",
                body={"name": actor, "scopes": ["read", "write", "run"]},
            )
            self.keys[actor] = created["key"]
        read_only = await self._call(
            "POST", "/api/v1/api-keys", self.keys["owner"], {"name": "ro", "scopes": ["read"]}
        )
        self.keys["readonly"] = read_only["key"]

    async def world(self) -> World:
        n = next(self.counter)
        owner = self.keys["owner"]
        flow_id = f"matrix-flow-{n}"
        await self._call("POST", "/api/v1/flows", owner, {"document": human_flow(flow_id)})
        await self._call("POST", f"/api/v1/flows/{flow_id}/versions", owner, {})
        await self._call(
            "PUT", f"/api/v1/flows/{flow_id}/shares/{self.users['vshare']}", owner, {"role": "viewer"}
        )
        await self._call(
            "PUT", f"/api/v1/flows/{flow_id}/shares/{self.users['eshare']}", owner, {"role": "editor"}
        )
        waiting = await self._call(
            "POST", f"/api/v1/flows/{flow_id}/runs?mode=sync", owner, {"inputs": {"query": "a"}}
        )
        assert waiting["status"] == "waiting", waiting
        done = await self._call(
            "POST", f"/api/v1/flows/{flow_id}/runs?mode=sync", owner, {"inputs": {"query": "b"}}
        )
        await self._call("POST", f"/api/v1/runs/{done['id']}/cancel", owner)
        variable = f"OWNER_VAR_{n}"
        await self._call(
            "PUT", f"/api/v1/variables/{variable}", owner, {"value": "owner-value", "is_secret": True}
        )
        spare = await self._call(
            "POST", "/api/v1/api-keys", owner, {"name": f"spare-{n}", "scopes": ["read"]}
        )
        spare_user = await self._call("POST", "/api/v1/users", body={"email": f"spare{n}@example.com"})
        await self._call("POST", "/api/v1/components", owner, {"source": COMPONENT})
        trigger = await self._call("POST", f"/api/v1/flows/{flow_id}/triggers", owner, {"kind": "webhook"})
        artifact = await self.services.store.artifacts.put(
            done["id"], "doc", "report.txt", "text/plain", b"hi"
        )
        point = await self.services.restore_points.save(
            flow_id, human_flow(flow_id), note="before the assistant's changes", created_by=None
        )
        kb = await self._call("POST", "/api/v1/knowledge", owner, {"name": f"kb-{n}"})
        doc = await self.client.post(
            f"/api/v1/knowledge/{kb['id']}/documents?filename=refunds.txt",
            content=b"Damaged goods are refunded within 30 days.",
            headers={"x-api-key": owner or ""},
        )
        assert doc.status_code == 201, doc.text
        return World(
            n=n,
            flow=flow_id,
            waiting_run=waiting["id"],
            done_run=done["id"],
            task_token=waiting["tasks"][0]["token"],
            spare_key=spare["id"],
            spare_user=spare_user["id"],
            variable=variable,
            trigger=trigger["id"],
            restore_point=point,
            artifact=artifact.id,
            kb=kb["id"],
            kb_document=doc.json()["id"],
            forbidden=[flow_id, waiting["id"], done["id"], variable, kb["id"]],
        )


@pytest.fixture
async def matrix(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Matrix]:
    monkeypatch.setenv("PLAIT_ASSISTANT_SCRIPT", ASSISTANT_SCRIPT)
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path}/plait.db",
        api_key=API_KEY,
        lease_ttl_s=3.0,
        sweep_interval_s=0.1,
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=30) as client:
            m = Matrix(client, app.state.services)
            await m.setup()
            yield m


def test_every_route_has_a_rule() -> None:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    documented = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    missing = sorted(documented - set(ROUTES))
    assert not missing, f"routes without an access rule in this matrix: {missing}"
    assert not sorted(set(ROUTES) - documented), "rules for routes that do not exist"
    assert all(rule in RULES for rule, _ in ROUTES.values())


def _matches(expected: str, status: int) -> bool:
    return 200 <= status < 300 if expected == OK else status == int(expected)


@pytest.mark.parametrize("route", sorted(ROUTES), ids=lambda r: f"{r[0]} {r[1]}")
async def test_route_access(matrix: Matrix, route: tuple[str, str]) -> None:
    method, _template = route
    rule, build = ROUTES[route]
    wrong = []
    for actor in ACTORS:
        world = await matrix.world()
        path, body = build(world, matrix.users)
        key = matrix.keys[actor]
        headers = {"x-api-key": key} if key else {}
        resp = await matrix.client.request(method, path, json=body, headers=headers)
        expected = RULES[rule][actor]
        if not _matches(expected, resp.status_code):
            wrong.append(f"{actor}: expected {expected}, got {resp.status_code} {resp.text[:200]}")
        if actor == "other" and route in LIST_ROUTES:
            leaked = [s for s in world.forbidden if s in resp.text]
            if leaked:
                wrong.append(f"other: the listing names the owner's {leaked}")
    assert not wrong, f"{method} {route[1]}:\n" + "\n".join(wrong)


async def test_an_id_taken_by_a_flow_one_cannot_see_is_no_oracle(matrix: Matrix) -> None:
    """Flow ids are global: another user creating or importing (even with overwrite) a flow
    whose id is taken by one they cannot see gets their own flow under a free id, never a 409
    that would tell them it exists, and the owner's flow is untouched."""
    world = await matrix.world()
    other = {"x-api-key": matrix.keys["other"]}
    for path, body in (
        ("/api/v1/flows", {"document": human_flow(world.flow)}),
        ("/api/v1/flows/import", {"document": human_flow(world.flow), "overwrite": True}),
    ):
        resp = await matrix.client.post(path, json=body, headers=other)
        assert resp.status_code == 201, resp.text
        assert resp.json()["id"] != world.flow and resp.json()["access"] == "owner"
    owners = await matrix.client.get(
        f"/api/v1/flows/{world.flow}", headers={"x-api-key": matrix.keys["owner"]}
    )
    assert owners.json()["name"] != "renamed" and owners.json()["access"] == "owner"
    # One who can see it but only as a viewer cannot overwrite it.
    viewer = {"x-api-key": matrix.keys["vshare"]}
    resp = await matrix.client.post(
        "/api/v1/flows/import", json={"document": human_flow(world.flow), "overwrite": True}, headers=viewer
    )
    assert resp.status_code == 403, resp.text
