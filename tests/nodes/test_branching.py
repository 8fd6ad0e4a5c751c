"""switch and if: ports, first match, else, and/or, case sensitivity, errors, flow validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import plait
from plait.nodes import NodeError, NodeResult, default_registry

# op -> (tested value, compared value) that match, and a pair that does not.
SWITCH_OPERATORS = {
    "==": (("Bug", "bug"), ("bug", "feature")),
    "!=": (("bug", "feature"), ("bug", "BUG")),
    "contains": (("Big BUG here", "bug"), ("fine", "bug")),
    "not_contains": (("fine", "bug"), ("a bug", "bug")),
    "starts_with": (("Hello", "he"), ("Hello", "lo")),
    "ends_with": (("Hello", "LO"), ("Hello", "he")),
    "empty": (("  ", None), ("x", None)),
    "not_empty": (([1], None), ([], None)),
    ">": (("10", 9), (9, 9)),
    "<": ((1, "2"), (2, 1)),
    ">=": ((2, 2), (1, 2)),
    "<=": ((2, "2.5"), (3, 2)),
}


def run_switch(make_node, make_ctx, config, roots=None, input=None) -> NodeResult:
    result = make_node("switch", config).execute(make_ctx(input, roots=roots or {}))
    assert isinstance(result, NodeResult)
    return result


@pytest.mark.parametrize("op", sorted(SWITCH_OPERATORS))
def test_switch_each_operator(make_node, make_ctx, op):
    (hit_value, hit_operand), (miss_value, miss_operand) = SWITCH_OPERATORS[op]
    for value, operand, port in ((hit_value, hit_operand, "case_1"), (miss_value, miss_operand, "else")):
        config = {"cases": [{"when": [{"ref": "inputs.v", "op": op, "value": operand}]}]}
        result = run_switch(make_node, make_ctx, config, roots={"inputs": {"v": value}})
        assert result.ports == (port,), (op, value, operand)


def test_switch_covers_all_twelve_operators():
    assert len(SWITCH_OPERATORS) == 12


def test_switch_fires_only_the_first_matching_case(make_node, make_ctx):
    config = {
        "cases": [
            {"name": "big", "when": [{"ref": "inputs.n", "op": ">", "value": 100}]},
            {"name": "positive", "when": [{"ref": "inputs.n", "op": ">", "value": 0}]},
            {"name": "also_positive", "when": [{"ref": "inputs.n", "op": ">=", "value": 1}]},
        ]
    }
    assert run_switch(make_node, make_ctx, config, roots={"inputs": {"n": 5}}).ports == ("positive",)
    assert run_switch(make_node, make_ctx, config, roots={"inputs": {"n": 500}}).ports == ("big",)
    assert run_switch(make_node, make_ctx, config, roots={"inputs": {"n": -5}}).ports == ("else",)


def test_switch_and_or_groups(make_node, make_ctx):
    both = [{"ref": "inputs.a", "value": 1}, {"ref": "inputs.b", "value": 2}]
    config = {"cases": [{"name": "all", "when": both}, {"name": "any", "when": both, "logic": "or"}]}
    assert run_switch(make_node, make_ctx, config, roots={"inputs": {"a": 1, "b": 2}}).ports == ("all",)
    assert run_switch(make_node, make_ctx, config, roots={"inputs": {"a": 1, "b": 3}}).ports == ("any",)
    assert run_switch(make_node, make_ctx, config, roots={"inputs": {"a": 0, "b": 3}}).ports == ("else",)


def test_switch_case_sensitivity(make_node, make_ctx):
    when = [{"ref": "classify.label", "op": "==", "value": "Bug"}]
    roots = {"classify": {"label": "bug"}}
    assert run_switch(make_node, make_ctx, {"cases": [{"when": when}]}, roots).ports == ("case_1",)
    sensitive = {"cases": [{"when": when}], "case_sensitive": True}
    assert run_switch(make_node, make_ctx, sensitive, roots).ports == ("else",)


def test_switch_output_passes_the_input_through(make_node, make_ctx):
    config = {
        "cases": [{"name": "yes", "when": [{"ref": "{sys.query}", "op": "contains", "value": "refund"}]}]
    }
    result = run_switch(
        make_node, make_ctx, config, roots={"sys": {"query": "Refund please"}}, input={"x": 1}
    )
    assert result.output == {"case": "yes", "value": {"x": 1}}
    assert result.ports == ("yes",)


def test_switch_values_may_be_templates_and_refs_ragflow_style(make_node, make_ctx):
    config = {"cases": [{"when": [{"ref": "{begin@limit}", "op": "<", "value": "{{inputs.max}}"}]}]}
    roots = {"begin": {"limit": 3}, "inputs": {"max": 10}}
    assert run_switch(make_node, make_ctx, config, roots).ports == ("case_1",)


def test_switch_numeric_error_names_the_ref(make_node, make_ctx):
    config = {"cases": [{"when": [{"ref": "inputs.v", "op": ">", "value": 1}]}]}
    with pytest.raises(NodeError, match="'inputs.v'"):
        run_switch(make_node, make_ctx, config, roots={"inputs": {"v": "abc"}})


def test_switch_ports_follow_case_names():
    switch = default_registry().get("switch")
    config = default_registry().parse_config(
        "switch", {"cases": [{"when": [{"ref": "a.b"}]}, {"name": "vip", "when": [{"ref": "a.b"}]}]}
    )
    assert switch.output_ports(config) == ["case_1", "vip", "else"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"cases": []}, "cases"),
        ({"cases": [{"when": []}]}, "when"),
        (
            {"cases": [{"name": "a", "when": [{"ref": "x.y"}]}, {"name": "a", "when": [{"ref": "x.y"}]}]},
            "unique",
        ),
        ({"cases": [{"name": "else", "when": [{"ref": "x.y"}]}]}, "unique"),
        ({"cases": [{"when": [{"ref": "x.y"}]}, {"name": "case_1", "when": [{"ref": "x.y"}]}]}, "unique"),
        ({"cases": [{"name": "bad name", "when": [{"ref": "x.y"}]}]}, "name"),
        ({"cases": [{"when": [{"ref": "x.y", "op": "like"}]}]}, "op"),
    ],
)
def test_switch_config_errors(config, message):
    with pytest.raises(ValidationError, match=message):
        default_registry().parse_config("switch", config)


def test_if_true_and_false(make_node, make_ctx):
    config = {"when": [{"ref": "inputs.n", "op": ">=", "value": 3}, {"ref": "inputs.tag", "value": "X"}]}
    node = make_node("if", config)
    yes = node.execute(make_ctx("in", roots={"inputs": {"n": 3, "tag": "x"}}))
    assert yes.ports == ("true",) and yes.output == {"result": True, "value": "in"}
    no = node.execute(make_ctx("in", roots={"inputs": {"n": 2, "tag": "x"}}))
    assert no.ports == ("false",) and no.output == {"result": False, "value": "in"}
    either = make_node("if", {**config, "logic": "or"}).execute(
        make_ctx(roots={"inputs": {"n": 2, "tag": "x"}})
    )
    assert either.ports == ("true",)
    sensitive = make_node("if", {**config, "case_sensitive": True})
    assert sensitive.execute(make_ctx(roots={"inputs": {"n": 3, "tag": "x"}})).ports == ("false",)


def test_if_ports():
    config = default_registry().parse_config("if", {"when": [{"ref": "a.b"}]})
    assert default_registry().get("if").output_ports(config) == ["true", "false"]


def test_switch_runs_in_a_flow_and_prunes_other_branches():
    doc = {
        "schema": "plait/flow@1",
        "id": "route",
        "nodes": [
            {"id": "start", "type": "start"},
            {
                "id": "route",
                "type": "switch",
                "config": {
                    "cases": [
                        {"name": "bug", "when": [{"ref": "inputs.q", "op": "contains", "value": "crash"}]}
                    ]
                },
            },
            {"id": "bug", "type": "output", "config": {"value": "bug: {{route.value.q}}"}},
            {"id": "other", "type": "output", "config": {"value": "other"}},
        ],
        "edges": [
            {"source": "start", "target": "route"},
            {"source": "route", "source_port": "bug", "target": "bug"},
            {"source": "route", "source_port": "else", "target": "other"},
        ],
    }
    result = plait.run_sync(doc, {"q": "App CRASHED"})
    assert result.status == "completed", result.error
    assert result.nodes["route"].ports == ("bug",)
    assert result.nodes["other"].status == "skipped"


def test_validation_reports_condition_refs_to_nodes_that_are_not_upstream():
    doc = {
        "schema": "plait/flow@1",
        "nodes": [
            {"id": "check", "type": "if", "config": {"when": [{"ref": "later.x", "op": "not_empty"}]}},
            {"id": "later", "type": "output", "config": {"value": 1}},
        ],
        "edges": [{"source": "check", "source_port": "true", "target": "later"}],
    }
    with pytest.raises(plait.FlowValidationError, match="later"):
        plait.load_flow(doc)
