"""/api/v1/components: validate, register, list, get, delete; a registered component in a flow run."""

from __future__ import annotations

from typing import Any

import httpx

from plait.sdk.templates import FETCH_TEXT

SHOUT = """\
from plait.sdk import Component, Input, Output


class Shout(Component):
    display_name = "Shout"
    description = "Upper-cases a text."
    inputs = [Input("text", "string"), Input("marks", "integer", required=False, default=1)]
    outputs = [Output("text", "string")]

    def run(self, text, marks=1):
        return {"text": text.upper() + "!" * marks}
"""


async def palette(client: httpx.AsyncClient) -> list[str]:
    """The names in the server's node palette for the caller (built-in types, then components)."""
    r = await client.get("/api/v1/node-types")
    assert r.status_code == 200, r.text
    return [entry["name"] for entry in r.json()]


def shout_flow() -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "shouting",
        "inputs": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "shout",
                "type": "component",
                "config": {"component": "Shout", "inputs": {"text": "{{inputs.text}}", "marks": 2}},
            },
            {"id": "out", "type": "output", "config": {"name": "result", "value": "{{shout.text}}"}},
        ],
        "edges": [{"source": "start", "target": "shout"}, {"source": "shout", "target": "out"}],
    }


async def test_component_lifecycle_and_flow_run(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/components")
    assert r.status_code == 200 and r.json() == []

    r = await client.post("/api/v1/components/validate", json={"source": SHOUT})
    assert r.status_code == 200
    body = r.json()
    assert body["valid"] is True and body["class_name"] == "Shout" and body["error"] is None
    assert [i["name"] for i in body["inputs"]] == ["text", "marks"]
    assert (await client.get("/api/v1/components/Shout")).status_code == 404  # validate stores nothing

    r = await client.post("/api/v1/components", json={"source": SHOUT})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["name"] == "Shout" and created["version"] == 1 and created["source"] == SHOUT
    assert created["outputs"] == [{"name": "text", "type": "string", "description": ""}]

    listed = (await client.get("/api/v1/components")).json()
    assert [c["name"] for c in listed] == ["Shout"] and "source" not in listed[0]
    got = (await client.get("/api/v1/components/Shout")).json()
    assert got["display_name"] == "Shout" and got["source"] == SHOUT

    # the palette sees it
    names = await palette(client)
    assert "component:Shout" in names

    # run it through a flow
    r = await client.post("/api/v1/flows", json={"document": shout_flow()})
    assert r.status_code == 201, r.text
    r = await client.post(
        "/api/v1/flows/shouting/runs", json={"inputs": {"text": "hey"}}, params={"version": "draft"}
    )
    assert r.status_code == 200, r.text
    run = r.json()
    assert run["status"] == "completed", run
    assert run["outputs"] == {"result": "HEY!!"}

    # replacing bumps the version
    r = await client.post(
        "/api/v1/components", json={"source": SHOUT.replace('"!"', '"?"'), "class_name": "Shout"}
    )
    assert r.status_code == 201 and r.json()["version"] == 2

    r = await client.delete("/api/v1/components/Shout")
    assert r.status_code == 204
    assert (await client.get("/api/v1/components/Shout")).status_code == 404
    assert (await client.delete("/api/v1/components/Shout")).status_code == 404
    assert "component:Shout" not in await palette(client)


async def test_invalid_component_is_422_with_the_validation_result(client: httpx.AsyncClient) -> None:
    source = SHOUT.replace('text.upper() + "!" * marks', "open(text).read()")
    r = await client.post("/api/v1/components", json={"source": source})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "invalid_component"
    assert error["message"].startswith("invalid component: line 11: `open` is not allowed in components")
    assert error["details"]["valid"] is False and error["details"]["stage"] == "scan"
    assert (await client.get("/api/v1/components")).json() == []

    r = await client.post("/api/v1/components/validate", json={"source": source})
    assert r.status_code == 200 and r.json()["valid"] is False
    assert r.json()["error"].startswith("line 11: `open`")

    r = await client.post("/api/v1/components", json={"source": "import no_such_mod_q\n"})
    assert r.status_code == 422
    assert (
        r.json()["error"]["details"]["error"]
        == "line 1: ModuleNotFoundError: No module named 'no_such_mod_q'"
    )

    r = await client.post("/api/v1/components", json={"source": SHOUT, "class_name": "bad name"})
    assert r.status_code == 422 and "invalid class name" in r.json()["error"]["message"]

    reserved = SHOUT.replace('Output("text", "string")', 'Output("component_as_tool", "string")')
    r = await client.post("/api/v1/components/validate", json={"source": reserved})
    assert r.json()["valid"] is False and "`component_as_tool` is reserved" in r.json()["error"]

    too_big = SHOUT + "#" * (1 << 20)
    r = await client.post("/api/v1/components/validate", json={"source": too_big})
    assert r.json()["valid"] is False and "1 MiB" in r.json()["error"]


async def test_builtin_template_registers_despite_env_access(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/components", json={"source": FETCH_TEXT})
    assert r.status_code == 201, r.text
    assert r.json()["builtin"] is True and r.json()["name"] == "FetchText"
    modified = FETCH_TEXT.replace('"HTTPS_PROXY"', '"OPENAI_API_KEY"')
    r = await client.post("/api/v1/components", json={"source": modified})
    assert r.status_code == 422 and "environment access" in r.json()["error"]["message"]


async def test_components_require_a_key(app: Any, client: httpx.AsyncClient) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as anon:
        assert (await anon.get("/api/v1/components")).status_code == 401
        assert (await anon.post("/api/v1/components/validate", json={"source": SHOUT})).status_code == 401
    # the server hands its component service to every run it launches (RunServices.component_source)
    assert app.state.services.runs.launcher.services.component_source is app.state.services.components


async def _user_client(app: Any, email: str) -> httpx.AsyncClient:
    store = app.state.services.store
    user = await store.users.create(email=email, name=email)
    _, key = await store.api_keys.create(email, user_id=user.id)
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(
        transport=transport, base_url="http://test", headers={"x-api-key": key}, timeout=30
    )


async def test_components_are_per_user(app: Any, client: httpx.AsyncClient) -> None:
    alice = await _user_client(app, "alice@example.com")
    bob = await _user_client(app, "bob@example.com")
    async with alice, bob:
        # the same name for both users, each with their own code
        r = await alice.post("/api/v1/components", json={"source": SHOUT})
        assert r.status_code == 201, r.text
        assert (await alice.get("/api/v1/components/Shout")).json()["source"] == SHOUT
        assert (await bob.get("/api/v1/components/Shout")).status_code == 404
        assert (await bob.get("/api/v1/components")).json() == []
        assert (await bob.delete("/api/v1/components/Shout")).status_code == 404
        assert (await client.get("/api/v1/components")).json() == []  # the deployment-wide owner

        bob_source = SHOUT.replace('"!"', '"?"')
        r = await bob.post("/api/v1/components", json={"source": bob_source})
        assert r.status_code == 201 and r.json()["version"] == 1
        assert (await bob.get("/api/v1/components/Shout")).json()["source"] == bob_source
        assert (await alice.get("/api/v1/components/Shout")).json()["source"] == SHOUT
        assert [c["name"] for c in (await alice.get("/api/v1/components")).json()] == ["Shout"]
        # user components stay out of the (deployment-wide) palette
        assert "component:Shout" not in await palette(client)

        # a run uses the components of the flow's owner (bob runs it once alice shares it)
        r = await alice.post("/api/v1/flows", json={"document": shout_flow()})
        assert r.status_code == 201, r.text
        run = {"inputs": {"text": "hey"}}
        r = await bob.post("/api/v1/flows/shouting/runs", json=run, params={"version": "draft"})
        assert r.status_code == 404, r.text  # not shared with him yet
        r = await alice.put("/api/v1/flows/shouting/shares/bob@example.com", json={"role": "editor"})
        assert r.status_code == 200, r.text
        for caller in (alice, bob):
            r = await caller.post("/api/v1/flows/shouting/runs", json=run, params={"version": "draft"})
            assert r.status_code == 200, r.text
            assert r.json()["outputs"] == {"result": "HEY!!"}, r.json()

        bob_flow = {**shout_flow(), "id": "bob-shouting"}
        r = await bob.post("/api/v1/flows", json={"document": bob_flow})
        assert r.status_code == 201, r.text
        r = await bob.post("/api/v1/flows/bob-shouting/runs", json=run, params={"version": "draft"})
        assert r.status_code == 200 and r.json()["outputs"] == {"result": "HEY??"}, r.text

        # a flow of the deployment-wide owner sees neither user's component
        r = await client.post("/api/v1/flows", json={"document": {**shout_flow(), "id": "shared"}})
        assert r.status_code == 201, r.text
        r = await client.post("/api/v1/flows/shared/runs", json=run, params={"version": "draft"})
        assert r.json()["status"] == "failed" and "no component named 'Shout'" in r.json()["error"], r.text

        assert (await bob.delete("/api/v1/components/Shout")).status_code == 204
        assert (await bob.get("/api/v1/components/Shout")).status_code == 404
        assert (await alice.get("/api/v1/components/Shout")).status_code == 200
