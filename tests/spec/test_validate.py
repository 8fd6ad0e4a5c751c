from __future__ import annotations

import json

import pytest

import plait
from plait.spec.models import FlowDocument
from plait_testing import flow


def problems_of(doc) -> list[plait.Problem]:
    with pytest.raises(plait.FlowValidationError) as info:
        plait.load_flow(doc)
    return info.value.problems


def codes(doc) -> list[str]:
    return [p.code for p in problems_of(doc)]


def test_valid_flow_loads():
    f = plait.load_flow(flow([{"id": "a", "type": "start"}, {"id": "b", "type": "output"}], [("a", "b")]))
    assert f.id == "t" and len(f.plan.nodes) == 2


def test_every_problem_is_reported_at_once_with_node_and_hint():
    doc = flow(
        [
            {"id": "a", "type": "start"},
            {"id": "A", "type": "output"},
            {"id": "x", "type": "swich"},
            {"id": "s", "type": "switch", "config": {"cases": []}},
            {"id": "o", "type": "output", "config": {"value": "{{nowhere.field}}"}},
        ],
        [("a", "ghost"), {"source": "a", "source_port": "nope", "target": "o"}],
    )
    found = problems_of(doc)
    by_code = {p.code: p for p in found}
    assert {
        "duplicate_id",
        "unknown_type",
        "invalid_config",
        "unknown_node",
        "unknown_port",
        "dangling_reference",
    } <= set(by_code)
    assert by_code["unknown_type"].node_id == "x" and "switch" in by_code["unknown_type"].hint
    assert by_code["invalid_config"].node_id == "s" and by_code["invalid_config"].field.startswith(
        "config.cases"
    )
    assert by_code["dangling_reference"].node_id == "o"
    assert all(p.hint for p in found)


def test_cycle_outside_loop_body_is_rejected():
    doc = flow(
        [
            {"id": "a", "type": "test_noop"},
            {"id": "b", "type": "test_noop"},
            {"id": "c", "type": "test_noop"},
        ],
        [("a", "b"), ("b", "c"), ("c", "b")],
    )
    found = problems_of(doc)
    cycle = [p for p in found if p.code == "cycle"]
    assert cycle and "b" in cycle[0].message and "c" in cycle[0].message and "loop" in cycle[0].hint


def test_reference_to_a_node_that_cannot_have_run_yet():
    doc = flow(
        [
            {"id": "a", "type": "test_noop"},
            {"id": "b", "type": "output", "config": {"value": "{{c.x}}"}},
            {"id": "c", "type": "test_noop"},
        ],
        [("a", "b"), ("a", "c")],
    )
    p = next(p for p in problems_of(doc) if p.code == "unreachable_reference")
    assert p.node_id == "b" and "edge" in p.hint


def test_ragflow_reference_syntax_and_case_insensitive_ids_resolve():
    doc = flow(
        [
            {"id": "Begin", "type": "start"},
            {"id": "Agent:Clever", "type": "test_echo", "config": {"value": "x"}},
            {"id": "o", "type": "output", "config": {"value": "{agent:clever@content} {{ begin@query }}"}},
        ],
        [("Begin", "Agent:Clever"), ("agent:clever", "o")],
    )
    plait.load_flow(doc)


def test_invalid_json_schema_is_reported():
    doc = flow([{"id": "a", "type": "test_noop", "input_schema": {"type": "nonsense"}}], inputs={"type": 5})
    found = problems_of(doc)
    assert [p.field for p in found if p.code == "invalid_schema"] == ["inputs", "input_schema"]


def test_shape_errors_name_the_node_and_field():
    found = problems_of({"schema": "plait/flow@1", "nodes": [{"id": "a", "type": "start", "confg": {}}]})
    assert found[0].node_id == "a" and found[0].field == "confg" and "spelling" in found[0].hint
    assert codes("nodes: [1, 2") == ["syntax"]
    assert codes("/no/such/flow.json") == ["file_not_found"]


def test_reserved_and_bad_ids():
    found = problems_of(flow([{"id": "inputs", "type": "start"}]))
    assert found[0].code == "reserved_id"
    found = problems_of(flow([{"id": "a.b", "type": "start"}]))
    assert found[0].field == "id"


def test_loop_body_is_validated_with_aliases():
    body = {"nodes": [{"id": "o", "type": "output", "config": {"value": "{{item}} {{outer}} {{ghost}}"}}]}
    doc = flow(
        [
            {"id": "outer", "type": "test_noop"},
            {"id": "m", "type": "map", "config": {"items": [1], "body": body}},
        ],
        [("outer", "m")],
    )
    found = problems_of(doc)
    assert len(found) == 1 and found[0].node_id == "m.body/o" and "ghost" in found[0].message


def test_document_schema_is_json_schema():
    schema = FlowDocument.model_json_schema(by_alias=True)
    assert "nodes" in schema["properties"] and "schema" in schema["properties"]
    json.dumps(schema)
