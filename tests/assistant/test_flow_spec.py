"""The compact flow spec of build_flow (plait.assistant.flow_spec): plait types and ports,
line-numbered errors, the orphan rule and plait's own validator."""

from __future__ import annotations

import pytest

from plait.assistant.catalog import RegistryCatalog
from plait.assistant.flow_spec import FlowSpecError, coerce_value, orphans, parse_flow_spec
from plait.assistant.working_flow import validate_flow

TRIAGE = """\
name: Support triage
description: Routes a message to billing or bugs

inputs:
  query: string
  urgent: boolean?

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
  # a comment
  billing.text: |
    Billing team: we will look at
      "{{inputs.query}}".

  bugs.text: Engineering will look at it.
"""


@pytest.fixture
def catalog() -> RegistryCatalog:
    return RegistryCatalog(
        user_components=[
            {
                "class_name": "SumNumbers",
                "source": "...",
                "spec": {"inputs": [{"name": "a", "type": "number"}, {"name": "b", "type": "number"}]},
            }
        ]
    )


def problems_of(text: str, catalog: RegistryCatalog) -> list[dict]:
    with pytest.raises(FlowSpecError) as info:
        parse_flow_spec(text, known_types=catalog)
    return info.value.problems


def test_a_full_spec_gives_a_valid_plait_flow(catalog: RegistryCatalog) -> None:
    doc = parse_flow_spec(TRIAGE, known_types=catalog)
    assert doc["schema"] == "plait/flow@1" and doc["id"] == "support-triage"
    assert doc["name"] == "Support triage" and doc["description"] == "Routes a message to billing or bugs"
    assert doc["inputs"] == {
        "type": "object",
        "properties": {"query": {"type": "string"}, "urgent": {"type": "boolean"}},
        "required": ["query"],
    }
    assert [(n["id"], n["type"]) for n in doc["nodes"]] == [
        ("start", "start"),
        ("route", "switch"),
        ("billing", "message"),
        ("bugs", "message"),
    ]
    assert doc["edges"][0] == {
        "source": "start",
        "source_port": "out",
        "target": "route",
        "target_port": "in",
    }
    assert doc["edges"][1]["source_port"] == "billing"
    billing = doc["nodes"][2]["config"]["text"]
    assert (
        billing == 'Billing team: we will look at\n  "{{inputs.query}}".'
    )  # `|`: dedented, inner indent kept
    assert doc["nodes"][1]["config"]["cases"][1]["name"] == "bug"  # JSON value
    assert validate_flow(doc, catalog) == []


def test_values_are_json_where_they_parse(catalog: RegistryCatalog) -> None:
    assert coerce_value("0.5") == 0.5 and coerce_value("3") == 3
    assert coerce_value("True") is True and coerce_value("none") is None
    assert coerce_value('["a", "b"]') == ["a", "b"]
    assert coerce_value("gpt-4o-mini") == "gpt-4o-mini"
    assert coerce_value("'{{a.text}}'") == "{{a.text}}"
    assert coerce_value("Classify: {{inputs.query}}") == "Classify: {{inputs.query}}"


def test_a_number_on_a_text_field_is_text(catalog: RegistryCatalog) -> None:
    spec = "nodes:\n  a: start\n  b: message\nedges:\n  a -> b\nconfig:\n  b.text: 42\n  b.name: true\n"
    config = parse_flow_spec(spec, known_types=catalog)["nodes"][1]["config"]
    assert config == {"text": "42", "name": "true"}
    spec = "nodes:\n  a: start\n  b: llm\nedges:\n  a -> b\nconfig:\n  b.model: gpt-4o\n  b.max_tokens: 64\n"
    assert parse_flow_spec(spec, known_types=catalog)["nodes"][1]["config"]["max_tokens"] == 64


def test_an_empty_value_takes_the_indented_block_as_json_or_yaml(catalog: RegistryCatalog) -> None:
    spec = """\
nodes:
  a: start
  b: llm
edges:
  a -> b
config:
  b.model: gpt-4o-mini
  b.fallback_models:
    - gpt-4o
    - gpt-4.1
  b.temperature: 0.2
  b.max_tokens:
    256
"""
    config = parse_flow_spec(spec, known_types=catalog)["nodes"][1]["config"]
    assert config == {
        "model": "gpt-4o-mini",
        "fallback_models": ["gpt-4o", "gpt-4.1"],
        "temperature": 0.2,
        "max_tokens": 256,
    }


def test_user_components_become_component_nodes_with_nested_config(catalog: RegistryCatalog) -> None:
    spec = """\
nodes:
  start: start
  sum: SumNumbers
  done: output
edges:
  start -> sum
  sum -> done
config:
  sum.inputs.a: "{{inputs.a}}"
  sum.inputs.b: 2
  done.value: '{{sum.total}}'
"""
    doc = parse_flow_spec(spec, known_types=catalog)
    assert doc["nodes"][1] == {
        "id": "sum",
        "type": "component",
        "config": {"component": "SumNumbers", "inputs": {"a": "{{inputs.a}}", "b": 2}},
    }


def test_default_ports_need_naming_on_branching_nodes(catalog: RegistryCatalog) -> None:
    spec = """\
nodes:
  s: start
  check: if
  yes: message
edges:
  s -> check
  check -> yes
config:
  check.when: [{"ref": "inputs.x", "op": "==", "value": 1}]
  yes.text: ok
"""
    [problem] = problems_of(spec, catalog)
    assert problem["line"] == 7
    assert "several output ports: true, false" in problem["message"]
    assert "check.true -> ..." in problem["hint"]


def test_line_errors_name_the_line_and_what_to_write(catalog: RegistryCatalog) -> None:
    spec = """\
name: x
title: nope
nodes:
  a start
  b: mesage
  c: message
edges:
  a => c
  c -> zz
config:
  c text: hi
  zz.text: hi
"""
    problems = problems_of(spec, catalog)
    lines = [p["line"] for p in problems]
    assert lines == sorted(lines)
    by_line = {p["line"]: p for p in problems}
    assert "before the first section" in by_line[2]["message"]
    assert "`ID: type`" in by_line[4]["hint"]
    assert "unknown type 'mesage'" in by_line[5]["message"] and "message" in by_line[5]["hint"]
    assert "A.port -> B.port" in by_line[8]["hint"]
    assert "unknown target 'zz'" in by_line[9]["message"]
    assert "`ID.field: value`" in by_line[11]["hint"]
    assert "unknown node 'zz'" in by_line[12]["message"]


def test_no_nodes_and_empty_specs_are_refused(catalog: RegistryCatalog) -> None:
    assert "no nodes" in problems_of("name: x\n", catalog)[0]["message"]
    assert "empty" in problems_of("   ", catalog)[0]["message"]


def test_m_s7_orphan_nodes_are_refused_with_their_names(catalog: RegistryCatalog) -> None:
    spec = """\
nodes:
  a: start
  b: message
  lonely: message
edges:
  a -> b
config:
  b.text: hi
  lonely.text: alone
"""
    problems = problems_of(spec, catalog)
    assert problems[0]["code"] == "orphan_nodes"
    assert "orphan components with no edges: ['lonely']" in problems[0]["message"]
    one = parse_flow_spec("nodes:\n  only: message\nconfig:\n  only.text: hi\n", known_types=catalog)
    assert orphans(one) == [] and len(one["nodes"]) == 1  # decision 2: a one-node flow is fine


def test_every_validator_problem_at_once_with_node_and_field(catalog: RegistryCatalog) -> None:
    spec = """\
nodes:
  a: start
  b: message
  c: llm
edges:
  a -> b
  b -> c
config:
  c.prompt: "{{nowhere.text}}"
  c.model: gpt-4o-mini
"""
    problems = problems_of(spec, catalog)
    assert {(p["line"], p["node"], p["field"]) for p in problems} == {
        (3, "b", "config.text"),
        (4, "c", "config.prompt"),
    }
    with pytest.raises(FlowSpecError) as info:
        parse_flow_spec(spec, known_types=catalog)
    assert "2 problems" in str(info.value)


def test_a_wrong_port_is_reported_on_its_edge_line(catalog: RegistryCatalog) -> None:
    spec = "nodes:\n  a: start\n  b: output\nedges:\n  a.message -> b\n"
    [problem] = problems_of(spec, catalog)
    assert problem["line"] == 5 and problem["field"] == "source_port"
    assert "no output port 'message'" in problem["message"] and problem["hint"] == "use one of: out"


def test_duplicate_and_reserved_ids(catalog: RegistryCatalog) -> None:
    problems = problems_of("nodes:\n  a: start\n  A: start\n  inputs: message\n", catalog)
    assert "used twice" in problems[0]["message"]
    assert "reserved" in problems[1]["message"]
