"""The flow builder through the HTTP SSE endpoint (issue 13), the scripted provider playing a
tool-calling model. Each test names the scenario of assistant-spec.md section 3.1 it covers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from .conftest import linear_flow
from .test_assistant_api import ask, complete, intent, me, provider_requests

SPEC = """\
name: Echo
inputs:
  q: string
nodes:
  start: start
  out: output
edges:
  start -> out
config:
  out.name: answer
  out.value: "{{inputs.q}}"
"""


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def flow_updates(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "flow_update"]


@pytest.fixture
async def empty_canvas(client: httpx.AsyncClient) -> str:
    doc = {"schema": "plait/flow@1", "id": "empty", "nodes": [], "edges": []}
    r = await client.post("/api/v1/flows", json={"document": doc})
    assert r.status_code == 201, r.text
    return "empty"


@pytest.fixture
async def canvas(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/v1/flows", json={"document": linear_flow("full", 1)})
    assert r.status_code == 201, r.text
    return "full"


async def test_m_s1_a_flow_built_on_an_empty_canvas_is_a_proposal(
    client: httpx.AsyncClient, empty_canvas: str, script: Any
) -> None:
    script(
        [
            intent("build_flow", "build me an echo flow"),
            call("build_flow", spec=SPEC),
            {"content": "Built it."},
        ]
    )
    events = await ask(client, empty_canvas, "build me an echo flow")
    steps = [e["step"] for e in events if e["event"] == "progress"]
    assert steps[0] == "generating_flow" and steps[-1] == "flow_proposal_ready"
    (update,) = flow_updates(events)
    assert update["action"] == "set_flow" and "auto_apply" not in update
    assert [n["id"] for n in update["flow"]["nodes"]] == ["start", "out"]
    preview = next(e for e in events if e["event"] == "flow_preview")
    assert preview["node_count"] == 2 and preview["edge_count"] == 1 and "start" in preview["graph"]
    data = complete(events)
    assert data["result"].startswith("Built it.") and data["has_flow"] is True
    assert data["verified"] is True  # checked by a real run with a probe input
    # the canvas itself is unchanged until the user applies the proposal
    assert (await client.get("/api/v1/flows/empty")).json()["draft"]["nodes"] == []


async def test_m_s85_built_and_ran_in_one_turn_is_applied_at_once(
    client: httpx.AsyncClient, empty_canvas: str, script: Any
) -> None:
    script(
        [
            intent("run_flow", "build an echo flow and run it with hello"),
            call("build_flow", spec=SPEC),
            call("run_flow", inputs={"q": "hello"}),
            {"content": "It answered hello."},
        ]
    )
    events = await ask(client, empty_canvas, "build an echo flow and run it with hello")
    (update,) = flow_updates(events)
    assert update["action"] == "set_flow" and update["auto_apply"] is True
    assert not [e for e in events if e["event"] == "progress" and e["step"] == "flow_proposal_ready"]
    data = complete(events)
    assert set(data["run_metrics"]) == {"duration_seconds", "input_tokens", "output_tokens", "total_tokens"}
    # M-S77: a real run, in the flow's history
    runs = (await client.get("/api/v1/runs", params={"flow_id": "empty"})).json()
    assert any(r["status"] == "completed" for r in runs)
    # decision 5: the run's id is streamed when it starts (before the tool answers), so the
    # canvas can follow it live
    kinds = [e["event"] for e in events]
    (started,) = [e for e in events if e["event"] == "run_started"]
    assert started["flow_id"] == "empty" and started["run_id"] in {r["id"] for r in runs}
    assert kinds.index("run_started") < kinds.index("flow_update") < kinds.index("complete")


async def test_m_s4_an_incremental_edit_applies_live_without_a_proposal(
    client: httpx.AsyncClient, canvas: str, script: Any
) -> None:
    script(
        [
            intent("build_flow", "rename the output to result"),
            call("configure_component", component_id="out", params={"name": "result"}),
            {"content": "Renamed."},
        ]
    )
    events = await ask(client, canvas, "rename the output to result")
    (update,) = flow_updates(events)
    assert update["action"] == "configure" and update["component_id"] == "out"
    assert not [e for e in events if e["event"] == "flow_preview"]
    assert "verified" not in complete(events)


async def test_m_s7_a_spec_with_an_orphan_is_an_error_the_agent_fixes(
    client: httpx.AsyncClient, app: Any, empty_canvas: str, script: Any
) -> None:
    orphan = SPEC.replace("  out: output\n", "  out: output\n  lonely: output\n")
    script(
        [
            intent("build_flow"),
            call("build_flow", spec=orphan),
            call("build_flow", spec=SPEC),
            {"content": "Fixed and built."},
        ]
    )
    events = await ask(client, empty_canvas, "build me an echo flow")
    (update,) = flow_updates(events)  # the orphan spec emitted nothing
    assert [n["id"] for n in update["flow"]["nodes"]] == ["start", "out"]
    requests = provider_requests(app, await me(client))
    tool_results = [m.content for r in requests for m in r.messages if m.role == "tool"]
    assert any("lonely" in (t or "") and "error" in (t or "") for t in tool_results)
    metrics = (await client.get("/metrics")).text
    line = next(x for x in metrics.splitlines() if x.startswith("assistant_flow_orphan_rejection_total"))
    assert float(line.split()[-1]) >= 1
    assert 'assistant_flow_update_events_total{action="set_flow"}' in metrics


async def test_a_s26_a_plan_stops_the_turn(client: httpx.AsyncClient, empty_canvas: str, script: Any) -> None:
    script(
        [
            intent("build_flow"),
            call("propose_plan", plan="1. start\n2. llm\n3. output"),
            {"content": "never"},
        ]
    )
    events = await ask(client, empty_canvas, "build a big support system")
    (update,) = flow_updates(events)
    assert update["action"] == "propose_plan" and update["markdown"].startswith("1. start")
    assert complete(events)["has_flow"] is False


async def test_m_s18_a_document_is_written_inline(
    client: httpx.AsyncClient, canvas: str, script: Any
) -> None:
    script(
        [
            intent("manage_files", "document this flow"),
            call("write_file", path="FLOW_DOCS.md", content="# Full\n\nIt echoes.\n"),
            {"content": "Wrote FLOW_DOCS.md."},
        ]
    )
    events = await ask(client, canvas, "create a markdown file documenting this flow")
    assert [e["step"] for e in events if e["event"] == "progress"][0] == "generating_document"
    (written,) = [e for e in events if e["event"] == "file_written"]
    assert written == {
        "event": "file_written",
        "action": "write_file",
        "path": "FLOW_DOCS.md",
        "size": len("# Full\n\nIt echoes.\n"),
        "content": "# Full\n\nIt echoes.\n",
    }


async def test_m_s23_a_path_escape_is_refused_and_writes_nothing(
    client: httpx.AsyncClient, canvas: str, script: Any
) -> None:
    script(
        [
            intent("manage_files"),
            call("write_file", path="../escape.md", content="x"),
            {"content": "Refused."},
        ]
    )
    events = await ask(client, canvas, "write ../escape.md")
    assert not [e for e in events if e["event"] == "file_written"]
    complete(events)


async def test_m_s76_component_then_flow_in_one_loop(
    client: httpx.AsyncClient, empty_canvas: str, script: Any
) -> None:
    reverse = (
        "```python\nfrom plait.sdk import Component, Input, Output\n\n\nclass ReverseText(Component):\n"
        '    description = "Reverses a text."\n    inputs = [Input("text", "string")]\n'
        '    outputs = [Output("reversed", "string")]\n\n    def run(self, text):\n'
        '        return {"reversed": text[::-1]}\n```'
    )
    spec = (
        "inputs:\n  q: string\nnodes:\n  start: start\n  rev: ReverseText\n  out: output\n"
        'edges:\n  start -> rev\n  rev -> out\nconfig:\n  rev.inputs: {"text": "{{inputs.q}}"}\n'
        '  out.name: answer\n  out.value: "{{rev.reversed}}"\n'
    )
    script(
        [
            intent("component_then_flow", "make a reverse component, a flow with it, and run it"),
            call("generate_component", description="reverses a text"),
            {"content": reverse},
            call("build_flow", spec=spec),
            call("run_flow", inputs={"q": "abc"}),
            {"content": "It returned cba."},
        ]
    )
    events = await ask(client, empty_canvas, "make a reverse component, a flow with it, and run it")
    assert [e["step"] for e in events if e["event"] == "progress"][0] == "orchestrating"
    (update,) = flow_updates(events)
    assert update["auto_apply"] is True
    assert any(n.get("config", {}).get("component") == "ReverseText" for n in update["flow"]["nodes"])
    data = complete(events)
    assert data["result"] == "It returned cba." and data["run_metrics"]["duration_seconds"] > 0
    runs = (await client.get("/api/v1/runs", params={"flow_id": "empty"})).json()
    run = (await client.get(f"/api/v1/runs/{runs[0]['id']}")).json()
    assert run["outputs"] == {"answer": "cba"}


async def test_m_s10_secrets_stay_hidden_from_the_agent(
    client: httpx.AsyncClient, app: Any, script: Any
) -> None:
    doc = linear_flow("withkey", 1)
    doc["nodes"].insert(
        1,
        {
            "id": "call",
            "type": "http",
            "config": {"url": "https://example.com", "headers": {"Authorization": "Bearer sk-live-123456"}},
        },
    )
    r = await client.post("/api/v1/flows", json={"document": doc})
    assert r.status_code == 201, r.text
    script(
        [
            intent("question"),
            call("get_field_value", component_id="call", field_name="headers"),
            {"content": "ok"},
        ]
    )
    # a question never reaches the agent; ask as a flow request
    script(
        [
            intent("build_flow"),
            call("get_field_value", component_id="call", field_name="headers"),
            {"content": "ok"},
        ]
    )
    complete(await ask(client, "withkey", "what headers does the call node send?"))
    seen = json.dumps([m.content for r in provider_requests(app, await me(client)) for m in r.messages])
    assert "sk-live-123456" not in seen


async def test_issue_13_a_restore_point_undoes_the_assistants_changes(
    client: httpx.AsyncClient, canvas: str, script: Any
) -> None:
    """Before the turn's first change the draft is saved; `complete.restore_version_id` names
    it; restoring it puts the draft back (and is itself undoable)."""
    before = (await client.get(f"/api/v1/flows/{canvas}")).json()["draft"]
    script(
        [
            intent("build_flow", "rename the output"),
            call("configure_component", component_id="out", params={"name": "renamed"}),
            {"content": "Renamed."},
        ]
    )
    data = complete(await ask(client, canvas, "rename the output"))
    point = data["restore_version_id"]
    # the panel applies the live edit to the canvas (the draft changes)...
    changed = {
        **before,
        "nodes": [
            {**n, "config": {**n.get("config", {}), "name": "renamed"}} if n["id"] == "out" else n
            for n in before["nodes"]
        ],
    }
    assert (await client.put(f"/api/v1/flows/{canvas}", json={"document": changed})).status_code == 200
    # ...and "Undo the assistant's changes" restores the saved draft
    listed = (await client.get(f"/api/v1/flows/{canvas}/restore-points")).json()
    assert listed[0]["id"] == point and listed[0]["note"] == "before the assistant's changes"
    r = await client.post(f"/api/v1/flows/{canvas}/restore-points/{point}/restore")
    assert r.status_code == 200, r.text
    assert r.json()["draft"] == before
    # the draft it replaced became a restore point too
    newest = (await client.get(f"/api/v1/flows/{canvas}/restore-points")).json()[0]
    assert (
        newest["id"] != point
        and (await client.get(f"/api/v1/flows/{canvas}/restore-points/{newest['id']}")).json()["document"]
        == changed
    )
    # restore points are not versions: runs and the version list never see them
    assert (await client.get(f"/api/v1/flows/{canvas}/versions")).json() == []


async def test_a_question_makes_no_restore_point(client: httpx.AsyncClient, canvas: str, script: Any) -> None:
    script([intent("question"), {"content": "A flow is a graph."}])
    data = complete(await ask(client, canvas, "what is a flow?"))
    assert "restore_version_id" not in data
    assert (await client.get(f"/api/v1/flows/{canvas}/restore-points")).json() == []


ROUTER_SPEC = """\
name: Support triage
inputs:
  query: string
nodes:
  start: start
  route: switch
  billing: output
  bugs: output
edges:
  start -> route
  route.billing -> billing
  route.bug -> bugs
config:
  route.cases: [{"name": "billing", "when": [{"ref": "inputs.query", "op": "contains", "value": "charged"}]}, {"name": "bug", "when": [{"ref": "inputs.query", "op": "contains", "value": "crash"}]}]
  billing.name: team
  billing.value: billing
  bugs.name: team
  bugs.value: bugs
"""


async def test_issue_13_acceptance_build_a_router_and_run_it(
    client: httpx.AsyncClient, empty_canvas: str, script: Any
) -> None:
    """On an empty flow: build a flow that routes a message to billing or bugs and run it with 'I
    was charged twice' -> "Orchestrating...", a set_flow applied because the run succeeded, a
    complete naming billing with run metrics and usage, and the run in GET /api/v1/runs."""
    text = "build a flow that routes a message to billing or bugs and run it with 'I was charged twice'"
    script(
        [
            intent("run_flow", text),
            call("search_components", query="switch route"),
            call("build_flow", spec=ROUTER_SPEC),
            call("run_flow", inputs={"query": "I was charged twice"}),
            {"content": "The message went to billing."},
        ]
    )
    events = await ask(client, empty_canvas, text)
    first = next(e for e in events if e["event"] == "progress")
    assert first["step"] == "orchestrating" and first["message"] == "Orchestrating..."
    (update,) = flow_updates(events)
    assert update["action"] == "set_flow" and update["auto_apply"] is True
    data = complete(events)
    assert "billing" in data["result"]
    assert data["run_metrics"]["duration_seconds"] > 0 and data["usage"]["total_tokens"] > 0
    runs = (await client.get("/api/v1/runs")).json()
    (run,) = [r for r in runs if r["flow_id"] == "empty"]
    detail = (await client.get(f"/api/v1/runs/{run['id']}")).json()
    assert detail["status"] == "completed" and detail["outputs"] == {"team": "billing"}


async def test_m_s86_unsafe_inline_code_is_refused_before_running(
    client: httpx.AsyncClient, app: Any, empty_canvas: str, script: Any
) -> None:
    spec = (
        "nodes:\n  start: start\n  leak: code\n  out: output\nedges:\n  start -> leak\n  leak -> out\n"
        "config:\n  leak.code: |\n    import os\n    result = os.environ.get('PLAIT_SECRET_KEY')\n"
        '  out.value: "{{leak}}"\n'
    )
    script(
        [
            intent("run_flow"),
            call("build_flow", spec=spec),
            call("run_flow", inputs={}),
            {"content": "It was refused."},
        ]
    )
    data = complete(await ask(client, empty_canvas, "build and run a flow that prints the env"))
    tool_results = [
        m.content for r in provider_requests(app, await me(client)) for m in r.messages if m.role == "tool"
    ]
    assert any("Refused to run" in (t or "") for t in tool_results), tool_results
    assert "run_metrics" not in data
    assert (await client.get("/api/v1/runs", params={"flow_id": "empty"})).json() == []


async def test_m_s80_edits_proposed_with_a_run_still_to_do_expect_a_continuation(
    client: httpx.AsyncClient, canvas: str, script: Any
) -> None:
    from plait.assistant.texts import EDIT_CONTINUATION_INPUT

    script(
        [
            intent("run_flow", "rename the output and run it"),
            call("propose_field_edit", component_id="out", field_name="name", new_value="renamed"),
            {"content": "Accept the change and I will run it."},
            # the continuation the panel sends after the user accepts: no classifier call
            call("run_flow", inputs={"query": "x"}),
            {"content": "Ran it."},
        ]
    )
    events = await ask(client, canvas, "rename the output and run it")
    (edit,) = flow_updates(events)
    assert edit["action"] == "edit_field" and edit["new_value"] == "renamed" and edit["patch"]
    assert complete(events)["continuation_expected"] is True
    data = complete(await ask(client, canvas, EDIT_CONTINUATION_INPUT))
    assert data["intent"] == "build_flow" and data["result"] == "Ran it." and data["run_metrics"]


async def test_m_s81_edits_with_nothing_deferred_expect_no_continuation(
    client: httpx.AsyncClient, canvas: str, script: Any
) -> None:
    script(
        [
            intent("build_flow", "rename the output"),
            call("propose_field_edit", component_id="out", field_name="name", new_value="renamed"),
            {"content": "Accept the change when ready."},
        ]
    )
    assert complete(await ask(client, canvas, "rename the output"))["continuation_expected"] is False


# ------------------------------------------------------------------ more of section 3.1 over SSE
async def test_m_s5_m_s6_search_describe_add_and_connect_apply_live(
    client: httpx.AsyncClient, canvas: str, script: Any
) -> None:
    script(
        [
            intent("build_flow", "add a delay before the output"),
            call("search_components", query="wait delay"),
            call("describe_component", component_type="delay"),
            call("add_component", component_type="delay", component_id="pause", config={"seconds": 0}),
            call(
                "connect_components",
                source_id="start",
                source_output="out",
                target_id="pause",
                target_input="in",
            ),
            {"content": "Added a pause."},
        ]
    )
    events = await ask(client, canvas, "add a delay before the output")
    updates = flow_updates(events)
    assert [u["action"] for u in updates] == ["add_component", "connect"]
    assert updates[0]["node"]["id"] == "pause" and "position" in updates[0]["node"]
    assert updates[1]["edge"]["source"] == "start" and updates[1]["edge"]["target"] == "pause"
    assert not [e for e in events if e["event"] == "flow_preview"]  # M-S16: no proposal


async def test_m_s11_a_s40_the_canvas_is_summarised_capped_and_quoted(
    client: httpx.AsyncClient, app: Any, script: Any
) -> None:
    big = linear_flow("big", 60)
    assert (await client.post("/api/v1/flows", json={"document": big})).status_code == 201
    script([intent("build_flow"), call("describe_flow_io"), {"content": "It has 62 nodes."}])
    complete(await ask(client, "big", "what does this flow take and give?"))
    requests = provider_requests(app, await me(client))
    prompt = requests[1].messages[1].content
    block = prompt.split("[End of canvas reference]")[0]
    summary = block.split("\n", 1)[1]
    assert len(summary.rstrip("\n")) <= 2000 + len("\n... [truncated]")
    assert summary.rstrip("\n").endswith("... [truncated]")
    assert prompt.endswith("what does this flow take and give?")
    # the working flow starts from the canvas: describe_flow_io read the real 62 nodes
    result = json.loads(next(m.content for m in requests[2].messages if m.role == "tool"))
    assert "error" not in result


async def test_m_s14_decision_6_build_flow_is_refused_on_a_canvas_with_nodes(
    client: httpx.AsyncClient, app: Any, canvas: str, script: Any
) -> None:
    script([intent("build_flow"), call("build_flow", spec=SPEC), {"content": "I will edit it instead."}])
    events = await ask(client, canvas, "build me an echo flow")
    assert flow_updates(events) == []
    tool = next(
        m.content for r in provider_requests(app, await me(client)) for m in r.messages if m.role == "tool"
    )
    assert "error" in json.loads(tool)


async def test_m_s21_m_s22_reading_and_searching_files_emit_nothing(
    client: httpx.AsyncClient, app: Any, canvas: str, script: Any
) -> None:
    script(
        [
            intent("manage_files"),
            call("write_file", path="NOTES.md", content="line one\nthe API key lives in Settings\n"),
            call("read_file", path="NOTES.md"),
            call("grep_search", pattern="API key"),
            {"content": "Found it on line 2."},
        ]
    )
    events = await ask(client, canvas, "write NOTES.md then find 'API key' in it")
    assert len([e for e in events if e["event"] == "file_written"]) == 1  # only the write
    results = [
        json.loads(m.content)
        for r in provider_requests(app, await me(client))
        for m in r.messages
        if m.role == "tool"
    ]
    read, grep = results[-2], results[-1]
    assert "2" in json.dumps(read) and "the API key lives in Settings" in json.dumps(read)
    assert "NOTES.md" in json.dumps(grep)


async def test_a_s33_a_built_in_template_component_is_not_refused(
    client: httpx.AsyncClient, app: Any, empty_canvas: str, script: Any
) -> None:
    """FetchText reads an environment variable, which the scan refuses in user code; saved
    verbatim it is a built-in template and runs (here it fails on the network, not the gate)."""
    from plait.sdk.templates import FETCH_TEXT

    assert (await client.post("/api/v1/components", json={"source": FETCH_TEXT})).status_code == 201
    spec = (
        "inputs:\n  url: string\nnodes:\n  start: start\n  fetch: FetchText\n  out: output\n"
        'edges:\n  start -> fetch\n  fetch -> out\nconfig:\n  fetch.inputs: {"url": "{{inputs.url}}"}\n'
        '  out.value: "{{fetch.status}}"\n'
    )
    script(
        [
            intent("run_flow"),
            call("build_flow", spec=spec),
            call("run_flow", inputs={"url": "http://127.0.0.1:9/"}),
            {"content": "It could not reach the address."},
        ]
    )
    complete(await ask(client, empty_canvas, "build a fetcher and run it"))
    tool_results = [
        m.content for r in provider_requests(app, await me(client)) for m in r.messages if m.role == "tool"
    ]
    assert not any("Refused to run" in (t or "") for t in tool_results), tool_results
    assert (await client.get("/api/v1/runs", params={"flow_id": "empty"})).json()  # it really ran
