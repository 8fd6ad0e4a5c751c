"""The flow-builder toolkit (plait.assistant.toolkit) on real node types and the real validator;
the runner and the component generator are fakes here (the agent loop wires the real ones)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plait.assistant.catalog import RegistryCatalog
from plait.assistant.events import FileWritten, FlowUpdate
from plait.assistant.files import FileSandbox
from plait.assistant.redaction import REDACTED, mask_field
from plait.assistant.tool_ports import GeneratedComponent, RunOutcome
from plait.assistant.toolkit import NO_FLOW, TOOL_DEFINITIONS, Toolkit
from plait.assistant.working_flow import WorkingFlow
from plait.llm.base import ToolSpec
from plait.sdk.templates import FETCH_TEXT, UPPERCASE_TEXT

TRIAGE_SPEC = """\
name: Support triage
inputs:
  query: string
nodes:
  start: start
  route: switch
  billing: message
  bugs: message
edges:
  start -> route
  route.billing -> billing
  route.bug -> bugs
config:
  route.cases: [{"name": "billing", "when": [{"ref": "inputs.query", "op": "contains", "value": "charged"}]}, {"name": "bug", "when": [{"ref": "inputs.query", "op": "contains", "value": "crash"}]}]
  billing.text: "Billing: {{inputs.query}}"
  bugs.text: "Bugs: {{inputs.query}}"
"""
REVERSE = """\
from plait.sdk import Component, Input, Output


class ReverseText(Component):
    description = "Reverses a text."
    inputs = [Input("text", "string")]
    outputs = [Output("reversed_text", "string")]

    def run(self, text):
        return {"reversed_text": text[::-1]}
"""


class FakeRunner:
    def __init__(self, outcome: RunOutcome | None = None) -> None:
        self.calls: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.outcome: RunOutcome = outcome or {
            "status": "succeeded",
            "result": {"billing": "Billing: I was charged twice"},
            "run_id": "run-1",
            "duration_seconds": 0.25,
            "input_tokens": 10,
            "output_tokens": 5,
        }

    async def run(self, flow: dict[str, Any], inputs: dict[str, Any]) -> RunOutcome:
        self.calls.append((flow, inputs))
        return self.outcome


class FakeGenerator:
    def __init__(self, outcome: GeneratedComponent) -> None:
        self.outcome = outcome
        self.asked: list[str] = []

    async def generate(self, description: str) -> GeneratedComponent:
        self.asked.append(description)
        return self.outcome


def make(
    draft: dict[str, Any] | None = None,
    *,
    components: list[dict[str, Any]] | None = None,
    runner: FakeRunner | None = None,
    generator: FakeGenerator | None = None,
    files: FileSandbox | None = None,
    **kwargs: Any,
) -> Toolkit:
    catalog = RegistryCatalog(user_components=components or [])
    return Toolkit(WorkingFlow(draft, catalog), catalog, files, generator, runner, **kwargs)


def component_flow(name: str) -> dict[str, Any]:
    return {
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "fetch",
                "type": "component",
                "config": {"component": name, "inputs": {"url": "{{inputs.url}}"}},
            },
        ],
        "edges": [{"source": "start", "target": "fetch"}],
    }


# ----------------------------------------------------------------------------------- surface
def test_specs_are_tool_specs_with_json_schema_arguments(tmp_path: Path) -> None:
    without_files = make().specs()
    assert all(isinstance(s, ToolSpec) and s.parameters["type"] == "object" for s in without_files)
    names = [s.name for s in without_files]
    assert "build_flow" in names and "read_file" not in names
    with_files = [s.name for s in make(files=FileSandbox(tmp_path)).specs()]
    assert with_files == list(TOOL_DEFINITIONS)
    assert {"search_components", "describe_component", "get_field_value", "propose_field_edit", "add_component",
            "remove_component", "connect_components", "configure_component", "build_flow", "propose_plan",
            "generate_component", "describe_flow_io", "run_flow", "read_file", "write_file", "edit_file",
            "glob_search", "grep_search"} == set(with_files)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("nope", {}, "unknown tool 'nope'"),
        ("add_component", "{not json", "not valid JSON"),
        ("add_component", ["llm"], "must be a JSON object"),
        ("add_component", {}, "'component_type' is a required property"),
        ("add_component", {"component_type": 3}, "3 is not of type 'string'"),
        ("connect_components", {"source_id": "a"}, "Arguments: source_id, source_output?, target_id"),
        ("read_file", {"path": "x"}, "unknown tool 'read_file'"),  # no file sandbox here
    ],
)
async def test_bad_arguments_never_raise(name: str, arguments: Any, expected: str) -> None:
    result = await make().call(name, arguments)
    assert expected in result["error"]


async def test_arguments_may_come_as_json_text() -> None:
    tools = make()
    result = await tools.call("add_component", json.dumps({"component_type": "start"}))
    assert result["node"]["id"] == "start" and result["valid"]


# ----------------------------------------------------------------------------------- catalog
async def test_m_s59_search_lists_the_users_components_with_the_built_ins() -> None:
    tools = make(
        components=[{"class_name": "SumComponent", "source": "...", "description": "Adds two numbers"}]
    )
    everything = await tools.call("search_components", {})
    names = [c["name"] for c in everything["components"]]
    assert names[0] == "SumComponent" and "llm" in names  # the user's own components first
    found = await tools.call("search_components", {"query": "sum numbers"})
    assert found["components"][0]["name"] == "SumComponent" and found["components"][0]["user_component"]


def test_m_s63_m_s69_a_user_component_never_shadows_a_built_in_and_bad_rows_are_skipped() -> None:
    catalog = RegistryCatalog(
        user_components=[
            {"class_name": "start", "source": "..."},
            {"source": "no class name"},
            {"class_name": "SumComponent", "source": "..."},
        ]
    )
    start = catalog.get("start")
    assert start is not None and not start.user and start.node_type == "start"
    assert catalog.user_component("start") is None
    sum_component = catalog.get("component:SumComponent")
    assert sum_component is not None and sum_component is catalog.get("SumComponent")
    assert sum_component.node_type == "component" and sum_component.config_defaults == {
        "component": "SumComponent"
    }


async def test_describe_component_gives_fields_and_ports() -> None:
    tools = make()
    described = await tools.call("describe_component", {"component_type": "if"})
    assert described["input_ports"] == ["in"]
    assert described["output_ports"] == ["true", "false"]
    assert {f["name"] for f in described["fields"]} >= {"when", "logic"}
    unknown = await tools.call("describe_component", {"component_type": "ChatInput"})
    assert "not found in registry" in unknown["error"]


# ----------------------------------------------------------------------------------- reading
async def test_m_s10_get_field_value_masks_secrets() -> None:
    draft = {
        "nodes": [
            {
                "id": "call",
                "type": "http",
                "config": {
                    "url": "https://api.example.com/v1?key={{env.EXAMPLE_KEY}}",
                    "headers": {"Authorization": "Bearer sk-abcdefghijklmnopqrstuvwx", "X-Trace": "on"},
                    "method": "POST",
                },
            },
            {"id": "code", "type": "code", "config": {"code": "def main():\n    return 1\n"}},
        ],
        "edges": [],
    }
    tools = make(draft)
    url = await tools.call("get_field_value", {"component_id": "call", "field_name": "url"})
    assert url["value"] == REDACTED  # a {{env.X}} reference is never shown
    headers = await tools.call("get_field_value", {"component_id": "call", "field_name": "headers"})
    assert headers["value"] == {"Authorization": REDACTED, "X-Trace": "on"}
    everything = await tools.call("get_field_value", {"component_id": "call"})
    assert everything["fields"]["method"] == "POST" and "sk-" not in json.dumps(everything)
    unset = await tools.call("get_field_value", {"component_id": "call", "field_name": "timeout_s"})
    assert unset["set"] is False and unset["value"] == 30.0
    hidden = await tools.call("get_field_value", {"component_id": "code"})
    assert hidden["not_shown"] == ["code"] and "code" not in hidden["fields"]
    missing = await tools.call("get_field_value", {"component_id": "nope"})
    assert missing["error"] == "Component 'nope' not found. Available: ['call', 'code']"
    bad_field = await tools.call("get_field_value", {"component_id": "call", "field_name": "colour"})
    assert bad_field["error"].startswith("Field 'colour' not found. Available: [")


async def test_m_s82_describe_flow_io_on_a_large_flow_is_read_from_the_wiring() -> None:
    nodes: list[dict[str, Any]] = [{"id": "begin", "type": "start"}]
    edges: list[dict[str, Any]] = []
    for i in range(200):
        nodes.append({"id": f"step{i}", "type": "message", "config": {"text": f"{{{{inputs.query}}}} {i}"}})
        edges.append({"source": "begin" if i == 0 else f"step{i - 1}", "target": f"step{i}"})
    nodes.append(
        {"id": "helper", "type": "agent", "config": {"tools": ["web_search"], "model": "gpt-4o-mini"}}
    )
    edges.append({"source": "step199", "target": "helper"})
    nodes.append({"id": "final", "type": "output", "config": {"name": "answer"}})
    edges.append({"source": "helper", "target": "final"})
    tools = make({"nodes": nodes, "edges": edges})
    first = await tools.call("describe_flow_io", {})
    assert first["inputs"] == [{"id": "begin", "type": "start"}]
    assert first["run_inputs"] == [{"name": "query", "required": False}]
    outputs = first["outputs"]  # message nodes are run outputs too, under their id
    assert outputs[0] == {"id": "step0", "type": "message", "key": "step0"} and len(outputs) == 201
    assert outputs[-1] == {"id": "final", "type": "output", "key": "answer"}
    assert first["tools"] == [{"id": "helper", "tool": "web_search"}]
    assert first["text"].splitlines()[0] == "inputs: begin (start)"
    assert await tools.call("describe_flow_io", {}) == first  # deterministic


# ----------------------------------------------------------------------------------- edits
async def test_m_s5_m_s6_incremental_edits_apply_live_and_report_problems() -> None:
    tools = make()
    added = await tools.call("add_component", {"component_type": "start"})
    assert added["valid"] and added["problems"] == []
    answer = await tools.call("add_component", {"component_type": "message", "component_id": "reply"})
    assert not answer["valid"]
    assert answer["problems"] == [
        {
            "code": "invalid_config",
            "message": "Field required",
            "node": "reply",
            "field": "config.text",
            "hint": "see `plait nodes message` for the config schema",
        }
    ]
    connected = await tools.call("connect_components", {"source_id": "start", "target_id": "reply"})
    assert connected["edge"]["target_port"] == "in"
    configured = await tools.call(
        "configure_component", {"component_id": "reply", "params": '{"text": "hi"}'}
    )
    assert configured["valid"] and configured["config"] == {"text": "hi"}
    removed = await tools.call("remove_component", {"component_id": "reply"})
    assert removed == {"removed": "reply", "problems": [], "valid": True}
    assert [e.action for e in tools.drain()] == [  # type: ignore[union-attr]
        "add_component",
        "add_component",
        "connect",
        "configure",
        "remove_component",
    ]


async def test_connect_mismatch_is_an_error_the_agent_replans_from() -> None:
    tools = make()
    await tools.call("add_component", {"component_type": "start"})
    await tools.call("add_component", {"component_type": "output"})
    tools.drain()
    result = await tools.call(
        "connect_components",
        {
            "source_id": "start",
            "source_output": "message",
            "target_id": "output",
            "target_input": "input_value",
        },
    )
    assert "has no output port 'message'; its output ports are: out" in result["error"]
    assert tools.drain() == []


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ("{bad", "Invalid JSON in params"),
        ("[1]", "params must be a JSON object, got list"),
        ({"nope": 1}, "no config field 'nope'. Allowed fields: name, value"),
    ],
)
async def test_configure_component_errors(params: Any, expected: str) -> None:
    tools = make({"nodes": [{"id": "out", "type": "output"}], "edges": []})
    result = await tools.call("configure_component", {"component_id": "out", "params": params})
    assert expected in result["error"]
    assert tools.drain() == []


async def test_m_s4_propose_field_edit_does_not_change_the_flow() -> None:
    tools = make({"nodes": [{"id": "ask", "type": "llm", "config": {"model": "gpt-4o"}}], "edges": []})
    result = await tools.call(
        "propose_field_edit", {"component_id": "ask", "field_name": "model", "new_value": "gpt-4o-mini"}
    )
    assert result["status"] == "proposed" and result["description"] == 'Set model to "gpt-4o-mini" on llm'
    assert tools.flow.node("ask")["config"]["model"] == "gpt-4o"  # type: ignore[index]
    [event] = tools.drain()
    assert isinstance(event, FlowUpdate) and event.action == "edit_field"
    assert event.fields["patch"] == [
        {"op": "replace", "path": "/nodes/0/config/model", "value": "gpt-4o-mini"}
    ]
    assert tools.edits_proposed == 1


async def test_propose_plan_stops_the_agent() -> None:
    tools = make()
    assert "plan" in (await tools.call("propose_plan", {"plan": ""}))["error"]
    result = await tools.call("propose_plan", {"plan": "1. start\n2. route"})
    assert result["status"] == "awaiting_user_approval" and "STOP" in result["message"]
    assert tools.drain() == [FlowUpdate("propose_plan", {"markdown": "1. start\n2. route"})]
    assert tools.plan_proposed


# ----------------------------------------------------------------------------------- build_flow
async def test_m_s1_build_flow_on_an_empty_canvas_proposes_a_laid_out_set_flow() -> None:
    tools = make({"schema": "plait/flow@1", "id": "my-flow", "name": "Draft", "nodes": [], "edges": []})
    result = await tools.call("build_flow", {"spec": TRIAGE_SPEC})
    assert result["status"] == "proposed"
    assert result["message"].startswith("Flow 'Support triage' built successfully (4 nodes, 3 edges).")
    [event] = tools.drain()
    assert isinstance(event, FlowUpdate) and event.action == "set_flow"
    flow = event.fields["flow"]
    assert flow["id"] == "my-flow"  # still the user's flow
    assert all("position" in n for n in flow["nodes"])
    assert {n["id"]: n["position"]["x"] for n in flow["nodes"]} == {
        "start": 0.0,
        "route": 240.0,
        "billing": 480.0,
        "bugs": 480.0,
    }


async def test_m_s7_an_orphan_in_the_spec_is_an_error_and_nothing_is_emitted() -> None:
    tools = make()
    spec = TRIAGE_SPEC.replace("  route.bug -> bugs\n", "")
    result = await tools.call("build_flow", {"spec": spec})
    assert "orphan components with no edges: ['bugs']" in result["error"]
    assert "call build_flow again NOW" in result["error"]
    assert result["problems"][0]["code"] == "orphan_nodes"
    assert tools.drain() == [] and tools.flow.is_empty()


async def test_decision_6_build_flow_refuses_a_canvas_with_nodes() -> None:
    tools = make({"nodes": [{"id": "start", "type": "start"}], "edges": []})
    result = await tools.call("build_flow", {"spec": TRIAGE_SPEC})
    assert "already has 1 component" in result["error"] and "add_component" in result["error"]
    assert tools.drain() == []


async def test_m_s60_build_flow_with_a_user_component() -> None:
    tools = make(components=[{"class_name": "SumComponent", "source": "...", "spec": {}}])
    spec = "nodes:\n  a: start\n  s: SumComponent\nedges:\n  a -> s\n"
    assert (await tools.call("build_flow", {"spec": spec}))["status"] == "proposed"
    assert tools.flow.node("s") == {
        "id": "s",
        "type": "component",
        "config": {"component": "SumComponent"},
        "position": {"x": 240.0, "y": 0.0},
    }


# ----------------------------------------------------------------------------------- run_flow
async def test_m_s84_m_s77_build_then_run_sees_the_new_flow_and_reports_metrics() -> None:
    runner = FakeRunner()
    tools = make(runner=runner)
    await tools.call("build_flow", {"spec": TRIAGE_SPEC})
    result = await tools.call("run_flow", {"inputs": "I was charged twice"})
    assert result["status"] == "succeeded" and result["result"] == {"billing": "Billing: I was charged twice"}
    assert (
        result["duration_seconds"],
        result["input_tokens"],
        result["output_tokens"],
        result["total_tokens"],
    ) == (
        0.25,
        10,
        5,
        15,
    )
    assert result["summary"] == "(Ran in 0.25s · used 15 tokens (10 in / 5 out))"
    [(flow, inputs)] = runner.calls
    assert inputs == {"query": "I was charged twice"}  # a text goes to the only run input
    assert [n["id"] for n in flow["nodes"]] == ["start", "route", "billing", "bugs"]
    assert tools.flow.ran is True
    assert [e.action for e in tools.drain()] == ["set_flow"]  # type: ignore[union-attr]  # flow_ran is internal
    assert tools.last_run is not None and tools.last_run["total_tokens"] == 15


async def test_m_s62_run_flow_on_an_empty_flow_is_an_error_without_flow_ran() -> None:
    runner = FakeRunner()
    tools = make(runner=runner)
    assert (await tools.call("run_flow", {}))["error"] == NO_FLOW
    assert runner.calls == [] and tools.flow.ran is False


async def test_a_failed_run_is_an_error_with_its_metrics_and_no_flow_ran() -> None:
    runner = FakeRunner({"status": "failed", "error": "OPENAI_API_KEY is not set", "duration_seconds": 0.1})
    tools = make(
        {"nodes": [{"id": "only", "type": "message", "config": {"text": "hi"}}], "edges": []}, runner=runner
    )
    result = await tools.call("run_flow", {"inputs": {"x": 1}})
    assert result["error"].startswith("The run failed: OPENAI_API_KEY is not set (Ran in 0.10s)")
    assert result["total_tokens"] == 0 and tools.flow.ran is False


async def test_run_flow_refuses_an_invalid_flow_with_every_problem() -> None:
    runner = FakeRunner()
    tools = make(
        {"nodes": [{"id": "a", "type": "message"}, {"id": "b", "type": "nope"}], "edges": []}, runner=runner
    )
    result = await tools.call("run_flow", {})
    assert {p["node"] for p in result["problems"]} == {"a", "b"} and runner.calls == []


async def test_m_s86_unsafe_inline_code_is_refused_before_the_runner() -> None:
    runner = FakeRunner()
    code = "import os\n\ndef main():\n    return os.environ.get('HOME')\n"
    draft = {"nodes": [{"id": "leak", "type": "code", "config": {"code": code}}], "edges": []}
    tools = make(draft, runner=runner)
    result = await tools.call("run_flow", {})
    assert result["error"].startswith("Refused to run: unsafe code in node leak: line 4: environment access")
    assert runner.calls == [] and tools.flow.ran is False
    for bad in ("open('/etc/passwd')", "breakpoint()", "().__class__.__bases__"):
        tools.flow.configure("leak", {"code": f"def main():\n    return {bad}\n"})
        assert "Refused to run" in (await tools.call("run_flow", {}))["error"]
    assert runner.calls == []


async def test_a_s33_m_t62_a_verbatim_built_in_is_exempt_after_normalisation() -> None:
    runner = FakeRunner()
    drifted = "\n\n" + "\n".join(line + "   " for line in FETCH_TEXT.splitlines()) + "\n\n"
    tools = make(
        component_flow("FetchText"),
        components=[{"class_name": "FetchText", "source": drifted}],
        runner=runner,
    )
    assert (await tools.call("run_flow", {"inputs": {"url": "https://example.com"}}))["status"] == "succeeded"
    assert len(runner.calls) == 1


async def test_m_t63_one_changed_character_brings_the_scan_back() -> None:
    runner = FakeRunner()
    changed = FETCH_TEXT.replace("Fetch text", "Fetch texts")
    tools = make(
        component_flow("FetchText"),
        components=[{"class_name": "FetchText", "source": changed}],
        runner=runner,
    )
    result = await tools.call("run_flow", {"inputs": {"url": "https://example.com"}})
    assert result["error"].startswith(
        "Refused to run: unsafe code in node fetch: line 18: environment access"
    )
    assert runner.calls == []
    safe_change = UPPERCASE_TEXT.replace("upper case", "capitals")  # changed, but nothing denied
    ok = make(
        component_flow("UppercaseText"),
        components=[{"class_name": "UppercaseText", "source": safe_change}],
        runner=runner,
    )
    assert (await ok.call("run_flow", {"inputs": {"url": "x"}}))["status"] == "succeeded"


async def test_m_t64_with_the_template_registry_broken_every_node_is_scanned() -> None:
    def broken() -> dict[str, str]:
        raise RuntimeError("registry unavailable")

    runner = FakeRunner()
    tools = make(
        component_flow("FetchText"),
        components=[{"class_name": "FetchText", "source": FETCH_TEXT}],
        runner=runner,
        templates=broken,
    )
    assert "Refused to run" in (await tools.call("run_flow", {"inputs": {"url": "x"}}))["error"]
    assert runner.calls == []


async def test_run_inputs_from_a_text_need_a_single_input() -> None:
    runner = FakeRunner()
    draft = {
        "inputs": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
        "nodes": [{"id": "m", "type": "message", "config": {"text": "{{inputs.a}} {{inputs.b}}"}}],
        "edges": [],
    }
    tools = make(draft, runner=runner)
    result = await tools.call("run_flow", {"inputs": "hello"})
    assert "several run inputs (a, b)" in result["error"] and runner.calls == []
    assert (await tools.call("run_flow", {"inputs": '{"a": "x", "b": "y"}'}))["status"] == "succeeded"
    assert runner.calls[-1][1] == {"a": "x", "b": "y"}


# ----------------------------------------------------------------------------------- generation
async def test_m_s76_generate_component_registers_it_for_the_rest_of_the_request() -> None:
    generator = FakeGenerator(
        {
            "validated": True,
            "attempts": 2,
            "class_name": "ReverseText",
            "source": REVERSE,
            "spec": {"inputs": [{"name": "text", "type": "string"}], "outputs": [{"name": "reversed_text"}]},
        }
    )
    tools = make(generator=generator)
    before = await tools.call("search_components", {"query": "reverse"})
    assert before["components"] == []
    result = await tools.call("generate_component", {"description": "reverse a string"})
    assert result["validated"] and result["class_name"] == "ReverseText" and result["attempts"] == 2
    after = await tools.call("search_components", {"query": "reverse"})  # the cache was cleared
    assert after["components"][0]["name"] == "ReverseText"
    spec = "nodes:\n  a: start\n  r: ReverseText\nedges:\n  a -> r\nconfig:\n  r.inputs.text: '{{inputs.text}}'\n"
    assert (await tools.call("build_flow", {"spec": spec}))["status"] == "proposed"
    assert generator.asked == ["reverse a string"]


async def test_a_component_that_never_validates_is_an_error_result() -> None:
    tools = make(generator=FakeGenerator({"validated": False, "attempts": 3, "error": "SyntaxError: line 2"}))
    result = await tools.call("generate_component", {"description": "x"})
    assert "could not be created: SyntaxError: line 2" in result["error"] and result["attempts"] == 3
    assert "not available" in (await make().call("generate_component", {"description": "x"}))["error"]


# ----------------------------------------------------------------------------------- files
async def test_m_s18_file_tools_through_the_toolkit(tmp_path: Path) -> None:
    tools = make(files=FileSandbox(tmp_path))
    assert (await tools.call("write_file", {"path": "FLOW_DOCS.md", "content": "# Doc\n"}))[
        "status"
    ] == "written"
    assert (await tools.call("read_file", {"path": "FLOW_DOCS.md"}))["content"] == "1\t# Doc"
    assert (
        await tools.call("edit_file", {"path": "FLOW_DOCS.md", "old_string": "Doc", "new_string": "Docs"})
    )["status"] == "edited"
    assert (await tools.call("glob_search", {}))["files"] == ["FLOW_DOCS.md"]
    assert (await tools.call("grep_search", {"pattern": "Docs"}))["count"] == 1
    refused = await tools.call("write_file", {"path": "../escape.md", "content": "x"})
    assert set(refused) == {"error", "path"}
    assert tools.drain() == [
        FileWritten("write_file", "FLOW_DOCS.md", 6, "# Doc\n"),
        FileWritten("edit_file", "FLOW_DOCS.md", 7),
    ]


def test_fields_a_schema_marks_secret_are_masked() -> None:
    assert mask_field("endpoint", "https://x", {"type": "string", "writeOnly": True}) == REDACTED
    assert mask_field("endpoint", "https://x", {"type": "string", "format": "password"}) == REDACTED
    assert mask_field("endpoint", "https://x", {"type": "string", "secret": True}) == REDACTED
    assert mask_field("max_tokens", 256, {"type": "integer"}) == 256  # not a token
    assert mask_field("bot_token", "abc") == REDACTED and mask_field("password", "x") == REDACTED
    assert mask_field("prompt", "Use {{ env.OPENAI_API_KEY }}") == REDACTED
