"""The working flow (plait.assistant.working_flow): in-place edits of a plait flow document,
checked against the real node types, each with its flow_update event."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from plait.assistant.catalog import RegistryCatalog
from plait.assistant.events import FlowUpdate
from plait.assistant.working_flow import FlowEditError, WorkingFlow

SUM = """\
from plait.sdk import Component, Input, Output


class SumNumbers(Component):
    description = "Adds two numbers."
    inputs = [Input("a", "number"), Input("b", "number")]
    outputs = [Output("total", "number")]

    def run(self, a, b):
        return {"total": a + b}
"""
SUM_SPEC = {
    "class_name": "SumNumbers",
    "description": "Adds two numbers.",
    "inputs": [{"name": "a", "type": "number"}, {"name": "b", "type": "number"}],
    "outputs": [{"name": "total", "type": "number"}],
}


@pytest.fixture
def catalog() -> RegistryCatalog:
    return RegistryCatalog(user_components=[{"class_name": "SumNumbers", "source": SUM, "spec": SUM_SPEC}])


def draft() -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "triage",
        "name": "Triage",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "answer", "type": "message", "config": {"text": "Hello {{inputs.name}}"}},
        ],
        "edges": [{"source": "start", "target": "answer"}],
    }


def actions(flow: WorkingFlow) -> list[str]:
    return [e.action for e in flow.drain()]


def test_starts_from_a_deep_copy_of_the_draft(catalog: RegistryCatalog) -> None:
    original = draft()
    flow = WorkingFlow(original, catalog)
    flow.configure("answer", {"text": "Bye"})
    assert original["nodes"][1]["config"]["text"] == "Hello {{inputs.name}}"
    assert WorkingFlow(None, catalog).doc == {"nodes": [], "edges": []}


def test_m_s5_add_component_appears_at_once_with_a_position(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    node = flow.add_node("llm", {"model": "gpt-4o-mini", "prompt": "Summarise {{start.text}}"})
    assert node["id"] == "llm" and node["type"] == "llm"
    assert node["position"] == {"x": 480.0, "y": 0.0}  # right of the rightmost node (start 0, answer 240)
    [event] = flow.drain()
    assert event == FlowUpdate("add_component", {"node": node})
    assert flow.node("LLM") is node  # ids are case-insensitive, as in the validator


def test_add_component_ids_are_fresh_and_never_reserved(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(None, catalog)
    assert flow.add_node("message", {"text": "a"})["id"] == "message"
    assert flow.add_node("message", {"text": "b"})["id"] == "message_2"
    assert (
        flow.add_node("loop", {"body": {"nodes": []}, "max_iterations": 2})["id"] == "loop_2"
    )  # `loop` is a reference root
    assert flow.add_node("SumNumbers")["id"] == "sum_numbers"
    with pytest.raises(FlowEditError, match="already exists"):
        flow.add_node("message", {"text": "c"}, "MESSAGE")
    with pytest.raises(FlowEditError, match="reserved"):
        flow.add_node("message", {"text": "c"}, "inputs")
    with pytest.raises(FlowEditError, match="invalid node id"):
        flow.add_node("message", {"text": "c"}, "a.b")


def test_add_component_unknown_type_says_to_search_first(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(None, catalog)
    with pytest.raises(FlowEditError) as info:
        flow.add_node("MessageHistory")
    assert "not found in registry" in info.value.message
    assert "search_components" in (info.value.hint or "")
    assert flow.drain() == []


def test_a_user_component_becomes_a_component_node(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(None, catalog)
    node = flow.add_node("SumNumbers", {"inputs": {"a": 1, "b": 2}})
    assert node["type"] == "component"
    assert node["config"] == {"component": "SumNumbers", "inputs": {"a": 1, "b": 2}}
    with pytest.raises(FlowEditError, match="has no input 'c'. Its inputs: a, b"):
        flow.configure(node["id"], {"inputs": {"c": 3}})


def test_remove_component_removes_incident_edges_and_requires(catalog: RegistryCatalog) -> None:
    doc = draft()
    doc["nodes"].append({"id": "later", "type": "message", "config": {"text": "x"}, "requires": ["answer"]})
    flow = WorkingFlow(doc, catalog)
    removed = flow.remove_node("Answer")
    assert removed["id"] == "answer"
    assert flow.edges == [] and flow.node_ids() == ["start", "later"]
    assert flow.node("later")["requires"] == []  # type: ignore[index]
    assert flow.drain() == [FlowUpdate("remove_component", {"component_id": "answer"})]
    with pytest.raises(FlowEditError, match="not found in working flow"):
        flow.remove_node("answer")


def test_m_s6_connect_emits_connect_with_both_ports(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    flow.add_node("output", {"name": "reply"})
    flow.drain()
    edge = flow.connect("answer", None, "output", None)
    assert edge == {"source": "answer", "source_port": "out", "target": "output", "target_port": "in"}
    assert flow.drain() == [FlowUpdate("connect", {"edge": edge})]
    assert flow.validate() == []


def test_connect_checks_the_ports_of_both_node_types(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    flow.add_node("if", {"when": [{"ref": "inputs.name", "op": "==", "value": "x"}]}, "check")
    flow.drain()
    with pytest.raises(FlowEditError) as info:
        flow.connect("start", "message", "check", None)
    text = info.value.message
    assert "start.message -> check.in" in text and "has no output port 'message'" in text
    assert "its output ports are: out" in text
    with pytest.raises(FlowEditError, match=r"node .start. \(start\) takes no input"):
        flow.connect("check", "true", "start", None)
    with pytest.raises(FlowEditError, match="has no input port 'data'; its input ports are: in"):
        flow.connect("start", None, "check", "data")
    with pytest.raises(FlowEditError, match=r"several output ports \(true, false\)"):
        flow.connect("check", None, "answer", None)
    assert flow.connect("check", "false", "answer", None)["source_port"] == "false"
    assert flow.drain() == [FlowUpdate("connect", {"edge": flow.edges[-1]})]


def test_connect_refuses_duplicates_self_edges_and_cycles(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    with pytest.raises(FlowEditError, match="already connected"):
        flow.connect("start", None, "answer", None)
    with pytest.raises(FlowEditError, match="cannot feed itself"):
        flow.connect("answer", None, "answer", None)
    flow.add_node("message", {"text": "x"}, "next")
    flow.connect("answer", None, "next", None)
    with pytest.raises(FlowEditError, match="cycle"):
        flow.connect("next", None, "answer", None)


def test_switch_ports_come_from_its_config(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    flow.add_node("switch", None, "route")
    with pytest.raises(FlowEditError, match="come from its config, which is not valid yet"):
        flow.connect("route", "billing", "answer", None)
    flow.configure(
        "route",
        {"cases": [{"name": "billing", "when": [{"ref": "inputs.q", "op": "contains", "value": "$"}]}]},
    )
    assert flow.connect("route", "billing", "answer", None)["source_port"] == "billing"


def test_m_s4_configure_merges_and_emits_configure(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    flow.add_node("llm", {"model": "gpt-4o", "temperature": 0.2}, "model")
    flow.drain()
    config = flow.configure("model", {"model": "gpt-4o-mini", "temperature": None})
    assert config == {"model": "gpt-4o-mini"}  # None resets a field to its default
    assert flow.drain() == [
        FlowUpdate(
            "configure", {"component_id": "model", "params": {"model": "gpt-4o-mini", "temperature": None}}
        )
    ]


def test_configure_names_the_unknown_field_and_the_allowed_ones(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    with pytest.raises(FlowEditError) as info:
        flow.configure("answer", {"txt": "hi"})
    assert "no config field 'txt'" in info.value.message
    assert "Allowed fields: name, text" in info.value.message
    with pytest.raises(FlowEditError, match="params must be a JSON object"):
        flow.configure("answer", ["text"])  # type: ignore[arg-type]
    assert flow.drain() == []


def test_validate_reports_every_problem_with_node_and_field(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    flow.add_node("message", None, "empty")
    flow.add_node("llm", {"prompt": "{{nowhere.text}}", "model": "gpt-4o-mini"}, "ask")
    problems = flow.validate()
    by_node = {(p["node"], p.get("field")) for p in problems}
    assert ("empty", "config.text") in by_node
    assert ("ask", "config.prompt") in by_node
    assert all("message" in p and "code" in p for p in problems)


def test_m_s84_set_flow_mutates_in_place(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(None, catalog)
    held = flow.doc
    new = draft()
    flow.set_flow(new)
    assert flow.doc is held and held["id"] == "triage" and len(held["nodes"]) == 2
    [event] = flow.drain()
    assert event.action == "set_flow" and event.fields["flow"]["nodes"][1]["position"] == {
        "x": 240.0,
        "y": 0.0,
    }
    held["name"] = "changed later"
    assert event.fields["flow"]["name"] == "Triage"  # the event is a snapshot


def test_auto_layout_columns_follow_the_longest_path(catalog: RegistryCatalog) -> None:
    doc = {
        "nodes": [
            {"id": "d", "type": "output"},
            {"id": "a", "type": "start"},
            {"id": "b", "type": "message", "config": {"text": "b"}},
            {"id": "c", "type": "message", "config": {"text": "c"}},
        ],
        "edges": [
            {"source": "a", "target": "b"},
            {"source": "b", "target": "d"},
            {"source": "a", "target": "c"},
            {"source": "c", "target": "d"},
            {"source": "a", "target": "d"},
        ],
    }
    flow = WorkingFlow(doc, catalog)
    first = flow.auto_layout()
    assert first["a"]["x"] == 0 and first["b"]["x"] == first["c"]["x"] == 240 and first["d"]["x"] == 480
    assert first["b"]["y"] != first["c"]["y"]
    assert WorkingFlow(copy.deepcopy(doc), catalog).auto_layout() == first  # deterministic


def test_propose_edit_is_a_json_patch_that_is_not_applied(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    edit = flow.propose_edit("answer", "text", "Hi {{inputs.name}}!")
    assert flow.node("answer")["config"]["text"] == "Hello {{inputs.name}}"  # type: ignore[index]
    assert edit["patch"] == [
        {"op": "replace", "path": "/nodes/1/config/text", "value": "Hi {{inputs.name}}!"}
    ]
    assert edit["old_value"] == "Hello {{inputs.name}}" and len(edit["id"]) == 8
    assert edit["description"] == 'Set text to "Hi {{inputs.name}}!" on message'
    [event] = flow.drain()
    assert event.action == "edit_field" and event.fields["component_id"] == "answer"
    added = flow.propose_edit("answer", "name", "greeting")
    assert added["patch"][0]["op"] == "add"
    with pytest.raises(FlowEditError, match="no config field 'colour'"):
        flow.propose_edit("answer", "colour", "red")


def test_propose_plan_needs_text(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(None, catalog)
    with pytest.raises(FlowEditError, match="empty"):
        flow.propose_plan("  ")
    flow.propose_plan("1. add a start node")
    assert flow.drain() == [FlowUpdate("propose_plan", {"markdown": "1. add a start node"})]
    assert flow.drain() == []


def test_m_s8_a_multi_port_source_connects_through_the_named_port(catalog: RegistryCatalog) -> None:
    """Langflow's select_output has no plait counterpart: every plait edge names its source port."""
    flow = WorkingFlow(draft(), catalog)
    flow.add_node("human", {"message": "Approve?", "actions": ["approve", "reject"]}, "review")
    flow.connect("start", None, "review", None)
    flow.drain()
    ports = flow.output_ports(flow.require_node("review"))
    assert len(ports) > 1
    edge = flow.connect("review", ports[1], "answer", None)
    assert edge["source_port"] == ports[1]
    assert [e.action for e in flow.drain()] == ["connect"]


def test_the_fingerprint_ignores_the_layout(catalog: RegistryCatalog) -> None:
    flow = WorkingFlow(draft(), catalog)
    before = flow.fingerprint()
    flow.auto_layout()
    assert flow.fingerprint() == before
    flow.configure("answer", {"text": "changed"})
    assert flow.fingerprint() != before
