"""RAGFlow over HTTP: documents (`POST /api/v1/flows/import`, detected or `format: ragflow`;
`GET /api/v1/flows/{id}/export?format=ragflow`) and RAGFlow's agent API (`/api/v1/agents`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from knowledge_docs import QUESTION, three_documents
from plait.nodes import default_registry
from plait.spec.formats.ragflow import RagflowImportError, import_ragflow
from plait.tools import default_tools

from .conftest import API_KEY

FIXTURES = Path(__file__).parents[1] / "spec" / "ragflow_fixtures"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


async def test_import_detects_ragflow_and_runs_it(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/api/v1/flows/import", json={"document": fixture("switch"), "id": "rf-switch", "publish": True}
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["id"] == "rf-switch" and body["format"] == "ragflow" and body["problems"] == []
    assert isinstance(body["warnings"], list)
    r = await client.post("/api/v1/flows/rf-switch/runs?wait=true", json={"inputs": {"query": "北京"}})
    assert r.status_code in (200, 201), r.text
    assert r.json()["outputs"] == {"Message:RedHousesStart": "北京beijing"}


async def test_import_text_with_format_and_derived_id(client: httpx.AsyncClient) -> None:
    text = (FIXTURES / "questions_category.json").read_text(encoding="utf-8")
    r = await client.post("/api/v1/flows/import", json={"content": text, "format": "ragflow"})
    assert r.status_code == 201, r.text
    flow_id = r.json()["id"]
    assert flow_id.startswith("ragflow-")
    again = await client.post("/api/v1/flows/import", json={"content": text})
    assert again.status_code == 409  # the same document again: overwrite to replace it


async def test_refusals_are_422_naming_the_components(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/flows/import", json={"document": fixture("browser")})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "ragflow_unsupported"
    assert [c["id"] for c in err["details"]["components"]] == ["Browser:BusyHatsSink"]
    r = await client.post("/api/v1/flows/import", json={"document": fixture("resume")})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "ragflow_ingestion"
    assert "not an agent" in r.json()["error"]["message"]


async def test_bad_input_is_a_clear_422(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/flows/import", json={"content": "{oops", "format": "ragflow"})
    assert r.status_code == 422
    r = await client.post("/api/v1/flows/import", json={"document": {"foo": 1}})
    assert r.status_code == 422
    assert "neither a plait flow" in r.json()["error"]["message"]
    r = await client.post("/api/v1/flows/import", json={"document": {"foo": 1}, "format": "ragflow"})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "ragflow_format"


async def test_export_as_ragflow_and_back(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/v1/flows/import", json={"document": fixture("agent_msg"), "id": "rf-agent"})
    assert r.status_code == 201, r.text
    draft = r.json()["draft"]
    r = await client.get("/api/v1/flows/rf-agent/export?format=ragflow")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    exported = r.json()
    assert exported["components"]["begin"]["obj"]["component_name"] == "Begin"
    r = await client.post(
        "/api/v1/flows/import", json={"document": exported, "id": "rf-agent-2", "format": "ragflow"}
    )
    assert r.status_code == 201, r.text
    assert r.json()["draft"]["nodes"] == draft["nodes"]


async def test_export_refusal_names_the_nodes(client: httpx.AsyncClient) -> None:
    flow = {
        "schema": "plait/flow@1",
        "id": "waits",
        "nodes": [{"id": "start", "type": "start"}, {"id": "nap", "type": "delay", "config": {"seconds": 0}}],
        "edges": [{"source": "start", "target": "nap"}],
    }
    assert (await client.post("/api/v1/flows/import", json={"document": flow})).status_code == 201
    r = await client.get("/api/v1/flows/waits/export?format=ragflow")
    assert r.status_code == 422
    assert [n["id"] for n in r.json()["error"]["details"]["nodes"]] == ["nap"]


async def test_export_of_a_draft_with_problems_is_a_422(client: httpx.AsyncClient) -> None:
    flow = {
        "schema": "plait/flow@1",
        "id": "broken",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "route", "type": "switch", "config": {"cases": 3}},
        ],
        "edges": [{"source": "start", "target": "route"}],
    }
    assert (await client.post("/api/v1/flows/import", json={"document": flow})).status_code == 201
    r = await client.get("/api/v1/flows/broken/export?format=ragflow")
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid_flow"


# ---------------------------------------------------------------------------------------------
# The RAGFlow-compatible agent API (/api/v1/agents), called as a RAGFlow client calls it: bearer
# API key, RAGFlow's paths and JSON, the `{code, data, message}` envelope, SSE events.


@pytest.fixture
async def ragflow(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A RAGFlow client: `Authorization: Bearer <API key>`, nothing plait-specific."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://test",
        headers={"Authorization": f"Bearer {API_KEY}"},
        timeout=30,
    ) as c:
        yield c


def ok(r: httpx.Response) -> Any:
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["code"] == 0 and body["message"] == "success", body
    return body.get("data")


def sse(text: str) -> list[tuple[int, str, Any]]:
    """`(id, event, data)` of each event of an SSE body (comments skipped, data JSON-decoded)."""
    out = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        if "event" in fields:
            data = fields.get("data", "")
            out.append((int(fields["id"]), fields["event"], data if data == "[DONE]" else json.loads(data)))
    return out


def menu_agent() -> dict[str, Any]:
    """all.json (RAGFlow's own demo: a UserFillUp menu, a Switch over a dozen branches, more
    UserFillUp pauses), without its Retrieval branch while plait has no retrieval node."""
    doc = fixture("all")
    try:
        import_ragflow(doc, catalog=default_registry(), tools=default_tools().names())
        return doc
    except RagflowImportError:
        pass
    dsl = doc.get("dsl", doc)
    gone = {"Retrieval:KBSearch", "Message:KBDone", "UserFillUp:KBInput"}
    for cid in gone:
        dsl["components"].pop(cid, None)
    for comp in dsl["components"].values():
        for key in ("upstream", "downstream"):
            comp[key] = [c for c in comp.get(key, []) if c not in gone]
        for cond in comp["obj"]["params"].get("conditions", []) or []:
            cond["to"] = [c for c in cond.get("to", []) if c not in gone]
    graph = dsl.get("graph") or {}
    graph["nodes"] = [n for n in graph.get("nodes", []) if n.get("id") not in gone]
    graph["edges"] = [
        e for e in graph.get("edges", []) if e.get("source") not in gone and e.get("target") not in gone
    ]
    return doc


async def create_agent(client: httpx.AsyncClient, title: str, dsl: dict[str, Any]) -> str:
    assert (
        ok(await client.post("/api/v1/agents", json={"title": title, "description": "d", "dsl": dsl})) is True
    )
    found = ok(await client.get("/api/v1/agents", params={"title": title}))
    assert [a["title"] for a in found] == [title]
    return str(found[0]["id"])


async def test_agents_crud_and_versions_as_a_ragflow_client(ragflow: httpx.AsyncClient) -> None:
    agent = await create_agent(ragflow, "Switch demo", fixture("switch"))
    listed = ok(
        await ragflow.get("/api/v1/agents", params={"page": 1, "page_size": 30, "orderby": "update_time"})
    )
    assert agent in [a["id"] for a in listed]
    got = ok(await ragflow.get(f"/api/v1/agents/{agent}"))
    assert got["title"] == "Switch demo" and got["description"] == "d"
    assert got["dsl"]["components"]["begin"]["obj"]["component_name"] == "Begin"
    assert isinstance(got["create_time"], int) and isinstance(got["update_time"], int)
    versions = ok(await ragflow.get(f"/api/v1/agents/{agent}/versions"))
    assert [v["id"] for v in versions] == ["1"]  # create keeps a version, as RAGFlow's

    # Update with a new DSL (RAGFlow's PUT; the Go API's PATCH is the same): a new version.
    r = await ragflow.put(f"/api/v1/agents/{agent}", json={"title": "Agent msg", "dsl": fixture("agent_msg")})
    assert ok(r) is True
    r = await ragflow.patch(f"/api/v1/agents/{agent}", json={"description": "patched"})
    assert ok(r) is True
    got = ok(await ragflow.get(f"/api/v1/agents/{agent}"))
    assert got["title"] == "Agent msg" and got["description"] == "patched"
    assert any(c["obj"]["component_name"] == "Agent" for c in got["dsl"]["components"].values())
    published = ok(await ragflow.post(f"/api/v1/agents/{agent}/versions", json={"title": "v3"}))
    assert published["id"] == "3" and published["title"] == "v3"
    assert [v["id"] for v in ok(await ragflow.get(f"/api/v1/agents/{agent}/versions"))] == ["3", "2", "1"]
    one = ok(await ragflow.get(f"/api/v1/agents/{agent}/versions/1"))
    assert one["dsl"]["components"]["begin"]["obj"]["component_name"] == "Begin"
    assert "Switch:" in json.dumps(one["dsl"])  # version 1 is still the switch agent
    assert ok(await ragflow.delete(f"/api/v1/agents/{agent}/versions/1")) is True
    missing = (await ragflow.get(f"/api/v1/agents/{agent}/versions/1")).json()
    assert missing["code"] == 102 and "no version 1" in missing["message"]
    assert ok(await ragflow.delete(f"/api/v1/agents/{agent}")) is True
    gone = (await ragflow.get("/api/v1/agents", params={"title": "Agent msg"})).json()
    assert gone["code"] == 102 and gone["message"] == "The agent doesn't exist."
    assert (await ragflow.get(f"/api/v1/agents/{agent}")).status_code == 404


async def test_refusals_are_ragflow_envelopes(ragflow: httpx.AsyncClient) -> None:
    r = await ragflow.post("/api/v1/agents", json={"title": "x"})
    assert r.status_code == 200 and r.json() == {
        "code": 101,
        "data": False,
        "message": "No DSL data in request.",
    }
    r = await ragflow.post("/api/v1/agents", json={"dsl": fixture("switch")})
    assert r.json()["code"] == 101 and r.json()["message"] == "No title in request."
    r = await ragflow.post("/api/v1/agents", json={"title": "browser", "dsl": fixture("browser")})
    assert r.json()["code"] == 101 and "Browser:BusyHatsSink" in r.json()["message"]
    assert (await ragflow.get("/api/v1/agents", params={"title": "browser"})).json()["code"] == 102
    await create_agent(ragflow, "twice", fixture("switch"))
    r = await ragflow.post("/api/v1/agents", json={"title": "twice", "dsl": fixture("switch")})
    assert r.json()["code"] == 103 and "already exists" in r.json()["message"]
    r = await ragflow.post("/api/v1/agents", json={"title": "x", "dsl": "{oops"})
    assert r.json()["code"] == 101
    # No credential: plait's 401, as on every route.
    assert (await ragflow.get("/api/v1/agents", headers={"Authorization": ""})).status_code == 401


async def test_sync_run_with_ragflow_inputs(ragflow: httpx.AsyncClient) -> None:
    agent = await create_agent(ragflow, "switch", fixture("switch"))
    data = ok(
        await ragflow.post(f"/api/v1/agents/{agent}/run", json={"inputs": {"query": {"value": "北京"}}})
    )
    assert data["status"] == "completed" and data["answer"] == "北京beijing"
    assert data["waiting_for_user"] == [] and data["error"] is None
    draft = ok(await ragflow.post(f"/api/v1/agents/{agent}/run?version=draft", json={"question": "上海"}))
    assert draft["status"] == "completed" and draft["session_id"] != data["session_id"]
    r = await ragflow.post(f"/api/v1/agents/{agent}/run?version=v_9", json={"question": "x"})
    assert r.json()["code"] == 102


async def plait_events(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    r = await client.get(f"/api/v1/runs/{run_id}/events")
    assert r.status_code == 200
    return [data for _id, _event, data in sse(r.text)]


def expected_from_log(log: list[dict[str, Any]], outputs: set[str]) -> list[tuple[int, str, Any]]:
    """The RAGFlow stream the run's own events call for (plait.service.ragflow_events' rules,
    restated from the wire)."""
    out: list[tuple[int, str, Any]] = []
    for e in log:
        if e["type"] == "node_finished" and e["ok"] and e["node_id"] in outputs:
            out.append((e["seq"], "message", e["output"]["content"]))
        elif e["type"] == "run_finished" and e["status"] == "waiting":
            out.extend(
                (e["seq"], "waiting_for_user", (i["payload"].get("body") or {}).get("node") or i["node_id"])
                for i in e["interrupts"]
            )
        elif e["type"] == "run_finished":
            out.append((e["seq"], "done", "[DONE]"))
    return out


def summary(events: list[tuple[int, str, Any]]) -> list[tuple[int, str, Any]]:
    keep = {"message": "answer", "waiting_for_user": "cpn_id"}
    return [(i, name, data[keep[name]] if name in keep else data) for i, name, data in events]


async def test_stream_with_user_fill_up_pauses_matches_the_run_log(
    ragflow: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    agent = await create_agent(ragflow, "menu", menu_agent())
    first = await ragflow.post(f"/api/v1/agents/{agent}/stream", json={"question": "hi"})
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/event-stream")
    session = first.headers["x-session-id"]
    part1 = sse(first.text)
    assert [name for _, name, _ in part1][-1] == "waiting_for_user"
    assert all(name == "message" for _, name, _ in part1[:-1])
    ask = part1[-1][2]
    assert ask["cpn_id"] == "UserFillUp:Menu" and ask["session_id"] == session
    assert "wait_input" in ask["inputs"]["demo"]["options"] and ask["tips"]

    # Re-attaching while it waits gives the same stream again.
    replay = await ragflow.post(f"/api/v1/agents/{agent}/stream", json={"session_id": session})
    assert sse(replay.text) == part1

    # RAGFlow's way to answer: the session and the UserFillUp's inputs.
    second = await ragflow.post(
        f"/api/v1/agents/{agent}/stream",
        json={"session_id": session, "inputs": {"demo": {"type": "options", "value": "wait_input"}}},
    )
    part2 = sse(second.text)
    assert [name for _, name, _ in part2] == ["waiting_for_user"]
    assert part2[0][2]["cpn_id"] == "UserFillUp:JustWait"
    third = await ragflow.post(
        f"/api/v1/agents/{agent}/stream", json={"session_id": session, "inputs": {"anything": "here I am"}}
    )
    part3 = sse(third.text)
    names = [name for _, name, _ in part3]
    assert names[-1] == "done" and names[:-1] and all(n == "message" for n in names[:-1])
    assert part3[-1][2] == "[DONE]"

    # The three streams are the run's own event log, translated: same order, ids = seqs.
    log = await plait_events(client, session)
    detail = (await client.get(f"/api/v1/runs/{session}")).json()
    assert detail["status"] == "completed"
    outputs = {
        n["id"]
        for n in (await client.get(f"/api/v1/flows/{agent}")).json()["draft"]["nodes"]
        if n["type"] in ("message", "output")
    }
    assert summary(part1 + part2 + part3) == expected_from_log(log, outputs)
    ids = [i for i, _, _ in part1 + part2 + part3]
    assert ids == sorted(ids)

    # A re-attach after the first pause gets the rest, nothing lost or repeated.
    again = await ragflow.post(
        f"/api/v1/agents/{agent}/stream",
        json={"session_id": session},
        headers={"Last-Event-ID": str(part1[-1][0])},
    )
    # (the pause answered meanwhile is not asked again: only a pending one is waiting_for_user)
    assert summary(sse(again.text)) == summary(part3)


async def test_a_switch_branch_of_the_menu_and_a_sync_answer(ragflow: httpx.AsyncClient) -> None:
    agent = await create_agent(ragflow, "menu", menu_agent())
    paused = ok(await ragflow.post(f"/api/v1/agents/{agent}/run", json={"question": "hi"}))
    assert paused["status"] == "waiting"
    assert [w["cpn_id"] for w in paused["waiting_for_user"]] == ["UserFillUp:Menu"]
    done = ok(
        await ragflow.post(
            f"/api/v1/agents/{agent}/run",
            json={"session_id": paused["session_id"], "inputs": {"demo": "message"}},
        )
    )
    assert done["status"] == "completed" and done["session_id"] == paused["session_id"]
    assert done["answer"] and done["waiting_for_user"] == []


async def test_cancel_and_sessions_of_another_agent(ragflow: httpx.AsyncClient) -> None:
    menu = await create_agent(ragflow, "menu", menu_agent())
    other = await create_agent(ragflow, "switch", fixture("switch"))
    paused = ok(await ragflow.post(f"/api/v1/agents/{menu}/run", json={}))
    session = paused["session_id"]
    r = await ragflow.post(
        f"/api/v1/agents/{other}/stream", json={"session_id": session, "inputs": {"demo": "x"}}
    )
    assert r.json()["code"] == 102 and "don't own the session" in r.json()["message"]
    assert (await ragflow.post(f"/api/v1/agents/{menu}/cancel", json={})).json()["code"] == 101
    assert ok(await ragflow.post(f"/api/v1/agents/{menu}/cancel", json={"session_id": session})) is True
    stream = await ragflow.post(f"/api/v1/agents/{menu}/stream", json={"session_id": session})
    events = sse(stream.text)
    assert [name for _, name, _ in events][-2:] == ["error", "done"]


async def test_messages_and_pauses_inside_a_loop_body_are_streamed(ragflow: httpx.AsyncClient) -> None:
    """all.json's loop branch: a UserFillUp and a Message inside a RAGFlow Loop (a plait loop
    body, whose events carry `<loop>/<node>` ids) stream as RAGFlow's do."""
    agent = await create_agent(ragflow, "menu", menu_agent())
    first = await ragflow.post(f"/api/v1/agents/{agent}/stream", json={"question": "hi"})
    session = first.headers["x-session-id"]
    names = []
    for answer in ({"demo": "loop"}, {"value": "5"}, {"value": "1"}):
        r = await ragflow.post(
            f"/api/v1/agents/{agent}/stream", json={"session_id": session, "inputs": answer}
        )
        names.append([(name, data["answer"] if name == "message" else data) for _, name, data in sse(r.text)])
    assert [n for n, _ in names[0]] == ["waiting_for_user"]
    assert names[0][0][1]["cpn_id"].endswith("UserFillUp:LoopInput")
    assert [n for n, _ in names[1]] == ["message", "waiting_for_user"]  # "continue" said in the body
    assert "5" in names[1][0][1]
    assert [n for n, _ in names[2]][-1] == "done" and any(
        "1" in str(d) for n, d in names[2] if n == "message"
    )


# ---------------------------------------------------------------------------------------------
# RAGFlow's sessions and completions, as its HTTP API and ragflow-sdk call them.


def completion_lines(text: str) -> list[Any]:
    """The JSON of each `data:` line of a streamed completion."""
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


async def test_session_and_completions_as_ragflow_sdk(ragflow: httpx.AsyncClient) -> None:
    agent = await create_agent(ragflow, "switch", fixture("switch"))
    session = ok(await ragflow.post(f"/api/v1/agents/{agent}/sessions", json={}))
    assert session["agent_id"] == agent and session["message"][0]["role"] == "assistant"
    answer = ok(
        await ragflow.post(
            f"/api/v1/agents/{agent}/completions",
            json={"question": "北京", "stream": False, "session_id": session["id"]},
        )
    )
    assert answer["answer"] == "北京beijing" and answer["reference"] == []
    run_id = answer["session_id"]
    streamed = await ragflow.post(
        f"/api/v1/agents/{agent}/completions", json={"question": "北京", "stream": True}
    )
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    lines = completion_lines(streamed.text)
    assert lines[-1] == {"code": 0, "message": "", "data": True}
    assert [line["data"]["answer"] for line in lines[:-1]] == ["北京beijing", "北京beijing"]
    assert all(line["code"] == 0 and line["data"]["session_id"] for line in lines[:-1])
    # What ragflow-sdk's Session.ask() reads: `event` message ... message_end, `data.content`.
    assert [line["event"] for line in lines[:-1]] == ["message", "message_end"]
    assert lines[0]["data"]["content"] == "北京beijing"
    assert answer["data"]["content"] == "北京beijing"  # ask(stream=False)

    listed = ok(await ragflow.get(f"/api/v1/agents/{agent}/sessions", params={"page": 1, "page_size": 30}))
    assert {s["id"] for s in listed} >= {run_id, lines[0]["data"]["session_id"]}
    one = ok(await ragflow.get(f"/api/v1/agents/{agent}/sessions", params={"id": run_id}))
    assert [m["content"] for m in one[0]["message"]][1:] == ["北京", "北京beijing"]
    assert (
        ok(await ragflow.request("DELETE", f"/api/v1/agents/{agent}/sessions", json={"ids": [run_id]}))
        is True
    )
    gone = (await ragflow.get(f"/api/v1/agents/{agent}/sessions", params={"id": run_id})).json()
    assert gone["code"] == 102
    bad = (await ragflow.request("DELETE", f"/api/v1/agents/{agent}/sessions", json={})).json()
    assert bad["code"] == 101
    # Begin inputs in the body: the session's run starts now, its id is the run's.
    started = ok(await ragflow.post(f"/api/v1/agents/{agent}/sessions", json={"query": "北京"}))
    assert [m["content"] for m in started["message"]][1:] in (["北京"], ["北京", "北京beijing"])
    run = ok(await ragflow.post(f"/api/v1/agents/{agent}/run", json={"session_id": started["id"]}))
    assert run["session_id"] == started["id"] and run["answer"] == "北京beijing"


async def test_a_user_fill_up_is_answered_by_the_next_completion(ragflow: httpx.AsyncClient) -> None:
    agent = await create_agent(ragflow, "menu", menu_agent())
    first = completion_lines(
        (
            await ragflow.post(f"/api/v1/agents/{agent}/completions", json={"question": "hi", "stream": True})
        ).text
    )
    asked = first[-3]["data"]
    assert asked["waiting_for_user"]["cpn_id"] == "UserFillUp:Menu" and first[-1]["data"] is True
    assert first[-2]["event"] == "message_end" and asked["content"] == asked["waiting_for_user"]["tips"]
    session = asked["session_id"]
    second = ok(
        await ragflow.post(
            f"/api/v1/agents/{agent}/completions",
            json={"question": "wait_input", "stream": False, "session_id": session},
        )
    )
    assert second["session_id"] == session
    assert [w["cpn_id"] for w in second["waiting_for_user"]] == ["UserFillUp:JustWait"]
    third = ok(
        await ragflow.post(
            f"/api/v1/agents/{agent}/completions",
            json={"question": "here I am", "stream": False, "session_id": session},
        )
    )
    assert third["session_id"] == session and third["answer"] and third["waiting_for_user"] == []


async def test_an_sdk_session_keeps_its_id_through_pauses_and_turns(ragflow: httpx.AsyncClient) -> None:
    """ragflow-sdk: `agent.create_session()` (an empty body), then `session.ask(q)` posts the id it
    was created with every time; the session goes on with the same run, then a new one."""
    agent = await create_agent(ragflow, "menu", menu_agent())
    sid = ok(await ragflow.post(f"/api/v1/agents/{agent}/sessions", json={}))["id"]

    async def ask(question: str) -> dict[str, Any]:
        body = {"question": question, "stream": False, "session_id": sid}
        return dict(ok(await ragflow.post(f"/api/v1/agents/{agent}/completions", json=body)))

    first = await ask("hi")
    assert [w["cpn_id"] for w in first["waiting_for_user"]] == ["UserFillUp:Menu"]
    second = await ask("wait_input")
    assert second["session_id"] == first["session_id"]
    assert [w["cpn_id"] for w in second["waiting_for_user"]] == ["UserFillUp:JustWait"]
    third = await ask("here I am")
    assert third["session_id"] == first["session_id"] and third["waiting_for_user"] == []
    again = await ask("hi")  # the run has ended: the session's next turn is a new run
    assert again["session_id"] != first["session_id"]
    assert [w["cpn_id"] for w in again["waiting_for_user"]] == ["UserFillUp:Menu"]
    assert (await ask("message"))["session_id"] == again["session_id"]


async def test_completion_reference_from_a_retrieval(ragflow: httpx.AsyncClient) -> None:
    r = await ragflow.post("/api/v1/knowledge", json={"name": "support"})
    assert r.status_code == 201, r.text
    kb = r.json()["id"]
    for filename, data in three_documents():
        r = await ragflow.post(
            f"/api/v1/knowledge/{kb}/documents", params={"filename": filename}, content=data
        )
        assert r.status_code == 201, r.text
    dsl = {
        "components": {
            "begin": {
                "obj": {"component_name": "Begin", "params": {"prologue": "Ask about orders."}},
                "downstream": ["Retrieval:Find"],
                "upstream": [],
            },
            "Retrieval:Find": {
                "obj": {
                    "component_name": "Retrieval",
                    "params": {
                        "query": "{sys.query}",
                        "kb_ids": [kb],
                        "top_n": 1,
                        "similarity_threshold": 0.2,
                    },
                },
                "downstream": ["Message:Answer"],
                "upstream": ["begin"],
            },
            "Message:Answer": {
                "obj": {
                    "component_name": "Message",
                    "params": {"content": ["{Retrieval:Find@formalized_content}"]},
                },
                "downstream": [],
                "upstream": ["Retrieval:Find"],
            },
        },
        "globals": {"sys.query": "", "sys.user_id": "", "sys.conversation_turns": 0, "sys.files": []},
    }
    agent = await create_agent(ragflow, "kb", dsl)
    session = ok(await ragflow.post(f"/api/v1/agents/{agent}/sessions"))
    assert session["message"] == [{"role": "assistant", "content": "Ask about orders."}]
    answer = ok(
        await ragflow.post(
            f"/api/v1/agents/{agent}/completions",
            json={"question": QUESTION, "stream": False, "session_id": session["id"]},
        )
    )
    ref = answer["reference"]
    assert [c["document_name"] for c in ref["chunks"]] == ["refunds.pdf"]
    assert "30 days" in ref["chunks"][0]["content"] and ref["chunks"][0]["id"]
    assert ref["doc_aggs"] == [
        {"doc_name": "refunds.pdf", "doc_id": ref["chunks"][0]["document_id"], "count": 1}
    ]
    lines = completion_lines(
        (
            await ragflow.post(
                f"/api/v1/agents/{agent}/completions", json={"question": QUESTION, "stream": True}
            )
        ).text
    )
    assert lines[0]["data"]["reference"]["chunks"][0]["document_name"] == "refunds.pdf"
    assert lines[-2]["event"] == "message_end" and lines[-2]["data"]["reference"]["doc_aggs"][0]["count"] == 1
    run = ok(await ragflow.post(f"/api/v1/agents/{agent}/run", json={"question": QUESTION}))
    assert run["reference"]["chunks"][0]["document_name"] == "refunds.pdf"
    listed = ok(await ragflow.get(f"/api/v1/agents/{agent}/sessions", params={"id": answer["session_id"]}))
    assert listed[0]["message"][-1]["reference"]["chunks"][0]["document_name"] == "refunds.pdf"
