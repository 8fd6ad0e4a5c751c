"""switch/if (12 operators), assign (11 operators), merge, data_ops, list_ops, text, transform."""

from __future__ import annotations

import pytest

import plait

OPS = [
    ("==", "Bug", "bug", True),
    ("!=", "bug", "feature", True),
    ("contains", "Big BUG here", "bug", True),
    ("not_contains", "fine", "bug", True),
    ("starts_with", "Hello", "he", True),
    ("ends_with", "Hello", "LO", True),
    ("empty", "  ", None, True),
    ("not_empty", [1], None, True),
    (">", "10", 9, True),
    ("<", 1, "2", True),
    (">=", 2, 2, True),
    ("<=", 3, 2, False),
    ("contains", ["a", "B"], "b", True),
    ("==", 5, "5", True),
]


def run_node(node_type, config, inputs=None, variables=None):
    doc = {
        "schema": "plait/flow@1",
        "id": "t",
        "variables": variables or {},
        "nodes": [{"id": "s", "type": "start"}, {"id": "n", "type": node_type, "config": config}],
        "edges": [{"source": "s", "target": "n"}],
    }
    result = plait.run_sync(doc, inputs or {})
    return result


@pytest.mark.parametrize(("op", "left", "right", "expected"), OPS)
def test_if_operators(op, left, right, expected):
    result = run_node("if", {"when": [{"ref": "inputs.v", "op": op, "value": right}]}, {"v": left})
    assert result.status == "completed", result.error
    assert result.nodes["n"].ports == (("true",) if expected else ("false",))


def test_switch_first_match_else_and_logic():
    cfg = {
        "cases": [
            {
                "name": "both",
                "when": [
                    {"ref": "inputs.a", "op": "==", "value": 1},
                    {"ref": "inputs.b", "op": "==", "value": 2},
                ],
            },
            {
                "when": [
                    {"ref": "inputs.a", "op": "==", "value": 1},
                    {"ref": "inputs.b", "op": "==", "value": 9},
                ],
                "logic": "or",
            },
        ]
    }
    assert run_node("switch", cfg, {"a": 1, "b": 2}).nodes["n"].ports == ("both",)
    assert run_node("switch", cfg, {"a": 1, "b": 3}).nodes["n"].ports == ("case_2",)
    assert run_node("switch", cfg, {"a": 0, "b": 3}).nodes["n"].ports == ("else",)
    sensitive = {"cases": [{"when": [{"ref": "inputs.a", "op": "==", "value": "X"}]}], "case_sensitive": True}
    assert run_node("switch", sensitive, {"a": "x"}).nodes["n"].ports == ("else",)


def test_switch_number_error_names_the_ref():
    result = run_node("if", {"when": [{"ref": "inputs.v", "op": ">", "value": 1}]}, {"v": "abc"})
    assert result.status == "failed" and "inputs.v" in result.error


@pytest.mark.parametrize(
    ("op", "start", "value", "expected"),
    [
        ("overwrite", 1, 5, 5),
        ("set", "a", "b", "b"),
        ("clear", [1], None, []),
        ("clear", "x", None, ""),
        ("+=", 1, 2, 3),
        ("-=", 5, 2, 3),
        ("*=", 2, 3, 6),
        ("/=", 6, 3, 2),
        ("append", [1], 2, [1, 2]),
        ("extend", [1], [2, 3], [1, 2, 3]),
        ("remove_first", [1, 2, 3], None, [2, 3]),
        ("remove_last", [1, 2, 3], None, [1, 2]),
    ],
)
def test_assign_operators(op, start, value, expected):
    result = run_node(
        "assign", {"assignments": [{"variable": "v", "op": op, "value": value}]}, variables={"v": start}
    )
    assert result.status == "completed", result.error
    assert result.nodes["n"].output == {"v": expected}


@pytest.mark.parametrize(
    ("op", "start", "value", "message"),
    [
        ("+=", "x", 1, "not a number"),
        ("/=", 1, 0, "division by zero"),
        ("append", 3, 1, "not a list"),
    ],
)
def test_assign_errors(op, start, value, message):
    result = run_node(
        "assign", {"assignments": [{"variable": "v", "op": op, "value": value}]}, variables={"v": start}
    )
    assert result.status == "failed" and message in result.error and "'v'" in result.error


def test_data_ops():
    data = {"a": 1, "b": 2, "c": 3}
    assert run_node("data_ops", {"operation": "select_keys", "keys": ["a", "c"]}, data).nodes["n"].output == {
        "a": 1,
        "c": 3,
    }
    assert run_node("data_ops", {"operation": "remove", "keys": ["a"]}, data).nodes["n"].output == {
        "b": 2,
        "c": 3,
    }
    assert run_node("data_ops", {"operation": "rename", "renames": {"a": "z"}}, data).nodes["n"].output == {
        "z": 1,
        "b": 2,
        "c": 3,
    }
    assert run_node(
        "data_ops", {"operation": "append_or_update", "updates": {"a": "{{inputs.b}}", "d": 4}}, data
    ).nodes["n"].output == {"a": 2, "b": 2, "c": 3, "d": 4}
    assert run_node("data_ops", {"operation": "combine", "source": [{"x": 1}, "{{inputs}}"]}, {"y": 2}).nodes[
        "n"
    ].output == {"x": 1, "y": 2}
    assert run_node("data_ops", {"operation": "literal_eval", "source": "{'k': (1, 2)}"}, {}).nodes[
        "n"
    ].output == {"k": [1, 2]}
    rows = {"rows": [{"n": 1}, {"n": 5}, {"n": 9}]}
    assert run_node(
        "data_ops",
        {
            "operation": "filter",
            "source": "{{inputs.rows}}",
            "filter": {"when": [{"key": "n", "op": ">", "value": 2}]},
        },
        rows,
    ).nodes["n"].output == [{"n": 5}, {"n": 9}]
    bad = run_node("data_ops", {"operation": "literal_eval", "source": "__import__('os')"}, {})
    assert bad.status == "failed" and "cannot parse" in bad.error


def test_list_ops():
    items = {"xs": [{"k": 3}, {"k": 1}, {"k": 3}, {"k": 2}]}
    base = {"source": "{{inputs.xs}}"}

    def out(cfg):
        return run_node("list_ops", {**base, **cfg}, items).nodes["n"].output

    assert out({"operation": "nth", "n": -1}) == {"k": 2}
    assert out({"operation": "head", "n": 2}) == [{"k": 3}, {"k": 1}]
    assert out({"operation": "tail", "n": 1}) == [{"k": 2}]
    assert out({"operation": "sort", "key": "k"}) == [{"k": 1}, {"k": 2}, {"k": 3}, {"k": 3}]
    assert out({"operation": "sort", "key": "k", "reverse": True})[0] == {"k": 3}
    assert out({"operation": "drop_duplicates", "key": "k"}) == [{"k": 3}, {"k": 1}, {"k": 2}]
    assert out({"operation": "filter", "filter": {"when": [{"key": "k", "op": "==", "value": 3}]}}) == [
        {"k": 3},
        {"k": 3},
    ]
    assert "out of range" in run_node("list_ops", {**base, "operation": "nth", "n": 9}, items).error


def test_text_and_transform():
    assert run_node("text", {"operation": "split", "source": "a, b;c", "delimiters": [",", ";"]}, {}).nodes[
        "n"
    ].output == ["a", "b", "c"]
    assert (
        run_node("text", {"operation": "merge", "source": ["a", 1], "separator": "-"}, {}).nodes["n"].output
        == "a-1"
    )
    assert (
        run_node("text", {"operation": "template", "template": "Hi {{inputs.x | title}}"}, {"x": "ada"})
        .nodes["n"]
        .output
        == "Hi Ada"
    )
    out = (
        run_node(
            "transform",
            {
                "source": "{{inputs}}",
                "mapping": {
                    "names": "$.items[*].name",
                    "first": "$.items[0].name",
                    "greeting": "hi {{inputs.who}}",
                },
            },
            {"who": "you", "items": [{"name": "a"}, {"name": "b"}]},
        )
        .nodes["n"]
        .output
    )
    assert out == {"names": ["a", "b"], "first": "a", "greeting": "hi you"}
    with pytest.raises(plait.FlowValidationError, match="invalid JSONPath"):
        plait.load_flow(
            {
                "schema": "plait/flow@1",
                "nodes": [{"id": "t", "type": "transform", "config": {"mapping": {"x": "$[?("}}}],
            }
        )


def test_merge_first_non_empty_of_delivered_inputs():
    doc = {
        "schema": "plait/flow@1",
        "id": "m",
        "nodes": [
            {"id": "a", "type": "test_echo", "config": {"value": ""}},
            {"id": "b", "type": "test_echo", "config": {"value": "B"}},
            {"id": "j", "type": "merge"},
        ],
        "edges": [{"source": "a", "target": "j"}, {"source": "b", "target": "j"}],
    }
    assert plait.run_sync(doc).nodes["j"].output == "B"
