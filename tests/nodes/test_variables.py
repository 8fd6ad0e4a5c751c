"""assign (11 operators and their errors) and merge (groups, delivered inputs)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from plait.nodes import NodeError, default_registry


def assign(make_node, make_ctx, op, start, value=None, *, roots=None):
    entry = {"variable": "v", "op": op}
    if value is not None:
        entry["value"] = value
    ctx = make_ctx(roots=roots or {}, vars={"v": start})
    output = make_node("assign", {"assignments": [entry]}).execute(ctx)
    assert output == {"v": ctx.vars["v"]}
    return ctx.vars["v"]


@pytest.mark.parametrize(
    ("op", "start", "value", "expected"),
    [
        ("overwrite", 1, "five", "five"),
        ("overwrite", "a", [1], [1]),
        ("set", "a", "b", "b"),
        ("set", 1, "42", 42),
        ("set", 1.5, "2.5", 2.5),
        ("set", False, "true", True),
        ("set", [], "[1, 2]", [1, 2]),
        ("set", {}, '{"a": 1}', {"a": 1}),
        ("set", "text", 7, "7"),
        ("set", None, [1], [1]),
        ("clear", [1], None, []),
        ("clear", "x", None, ""),
        ("clear", 5, None, 0),
        ("clear", 2.5, None, 0.0),
        ("clear", True, None, False),
        ("clear", {"a": 1}, None, {}),
        ("clear", None, None, None),
        ("+=", 1, 2, 3),
        ("+=", 1, "2", 3),
        ("-=", 5, 2, 3),
        ("*=", 2, 3.5, 7.0),
        ("/=", 6, 4, 1.5),
        ("append", [1], 2, [1, 2]),
        ("append", [1], [2], [1, [2]]),
        ("append", None, "x", ["x"]),
        ("extend", [1], [2, 3], [1, 2, 3]),
        ("remove_first", [1, 2, 3], None, [2, 3]),
        ("remove_first", [], None, []),
        ("remove_last", [1, 2, 3], None, [1, 2]),
        ("remove_last", [], None, []),
    ],
)
def test_assign_operators(make_node, make_ctx, op, start, value, expected):
    assert assign(make_node, make_ctx, op, start, value) == expected


def test_assign_covers_all_eleven_operators():
    schema = default_registry().describe("assign")["config_schema"]
    assert set(schema["$defs"]["Assignment"]["properties"]["op"]["enum"]) == {
        "overwrite",
        "clear",
        "set",
        "+=",
        "-=",
        "*=",
        "/=",
        "append",
        "extend",
        "remove_first",
        "remove_last",
    }


@pytest.mark.parametrize(
    ("op", "start", "value", "message"),
    [
        ("+=", "x", 1, "not a number"),
        ("-=", None, 1, "not a number"),
        ("*=", True, 2, "not a number"),
        ("+=", 1, "abc", "the value 'abc' is not a number"),
        ("/=", 1, 0, "division by zero"),
        ("append", 3, 1, "not a list"),
        ("extend", "abc", [1], "not a list"),
        ("extend", [1], 2, "the value 2 is not a list"),
        ("remove_first", None, None, "not a list"),
        ("remove_last", {"a": 1}, None, "not a list"),
        ("set", 1, "many", "cannot convert 'many' to the variable's type (int)"),
        ("set", True, "maybe", "(bool)"),
        ("set", [], "{}", "(list)"),
    ],
)
def test_assign_errors_name_the_variable(make_node, make_ctx, op, start, value, message):
    with pytest.raises(NodeError, match="'v'") as info:
        assign(make_node, make_ctx, op, start, value)
    assert message in info.value.message
    assert info.value.retryable is False


def test_assign_values_are_templates_and_assignments_run_in_order(make_node, make_ctx):
    ctx = make_ctx(roots={"fetch": {"body": {"total": 4, "tags": ["a", "b"]}}}, vars={"n": 1, "tags": []})
    node = make_node(
        "assign",
        {
            "assignments": [
                {"variable": "n", "op": "+=", "value": "{{fetch.body.total}}"},
                {"variable": "n", "op": "*=", "value": 10},
                {"variable": "{{vars.tags}}", "op": "extend", "value": "{{fetch.body.tags}}"},
                {"variable": "label", "op": "overwrite", "value": "n={{vars.n}}"},
            ]
        },
    )
    assert node.execute(ctx) == {"n": 50, "tags": ["a", "b"], "label": "n=50"}
    assert ctx.vars == {"n": 50, "tags": ["a", "b"], "label": "n=50"}


def test_assign_never_mutates_the_current_value(make_node, make_ctx):
    original = [1]
    ctx = make_ctx(vars={"v": original})
    make_node("assign", {"assignments": [{"variable": "v", "op": "append", "value": 2}]}).execute(ctx)
    assert original == [1] and ctx.vars["v"] == [1, 2]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"variable": "v", "op": "+="}, "needs a value"),
        ({"variable": "v", "op": "append"}, "needs a value"),
        ({"variable": "a.b", "op": "clear"}, "not a variable name"),
        ({"variable": "  ", "op": "clear"}, "not a variable name"),
        ({"variable": "v", "op": "++"}, "op"),
    ],
)
def test_assign_config_errors(entry, message):
    with pytest.raises(ValidationError, match=message):
        default_registry().parse_config("assign", {"assignments": [entry]})


def test_assign_accepts_vars_prefix_and_clear_without_value():
    config = default_registry().parse_config(
        "assign",
        {"assignments": [{"variable": "vars.count", "op": "clear"}, {"variable": "{{x}}", "op": "clear"}]},
    )
    assert [a.variable for a in config.assignments] == ["count", "x"]


def test_merge_groups_take_the_first_non_empty_reference(make_node, make_ctx):
    node = make_node(
        "merge",
        {
            "groups": [
                {"name": "text", "refs": ["billing.content", "engineering.content", "general.content"]},
                {"name": "nothing", "refs": ["billing.content", "gone.x"]},
                {"name": "code", "refs": ["{engineering@status}"]},
            ]
        },
    )
    ctx = make_ctx(roots={"billing": {"content": "  "}, "engineering": {"content": "E", "status": 0}})
    assert node.execute(ctx) == {"text": "E", "nothing": None, "code": 0}


def test_merge_without_groups_takes_the_first_non_empty_delivered_input(make_node, make_ctx):
    node = make_node("merge", {})
    assert node.execute(make_ctx(delivered={"a": "", "b": None, "c": "C", "d": "D"})) == "C"
    assert node.execute(make_ctx(delivered={"a": [], "b": {}})) is None
    assert node.execute(make_ctx({"a": "", "b": "B"})) == {"a": "", "b": "B"}  # one edge: its value
    assert node.execute(make_ctx("  ")) is None
    assert node.execute(make_ctx()) is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"groups": [{"name": "a", "refs": []}]}, "refs"),
        ({"groups": [{"name": "a", "refs": ["not a ref!"]}]}, "not a reference"),
        ({"groups": [{"name": "a", "refs": ["x.y"]}, {"name": "a", "refs": ["x.z"]}]}, "unique"),
    ],
)
def test_merge_config_errors(config, message):
    with pytest.raises(ValidationError, match=message):
        default_registry().parse_config("merge", config)
