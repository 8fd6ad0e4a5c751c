"""data_ops (7), list_ops (6), text (3), transform (templates + JSONPath), and the registry."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import plait
from plait.nodes import NodeError, default_registry

ROWS = [{"name": "Ada", "score": 3}, {"name": "bob", "score": 1}, {"name": "Cy", "score": 2}]


def run(make_node, make_ctx, type_name, config, input=None, roots=None):
    return make_node(type_name, config).execute(make_ctx(input, roots=roots or {}))


# ----------------------------------------------------------------------------- data_ops
@pytest.mark.parametrize(
    ("config", "data", "expected"),
    [
        ({"operation": "select_keys", "keys": ["c", "a", "zz"]}, {"a": 1, "b": 2, "c": 3}, {"c": 3, "a": 1}),
        ({"operation": "select_keys", "keys": ["name"]}, ROWS[:2], [{"name": "Ada"}, {"name": "bob"}]),
        ({"operation": "remove", "keys": ["a"]}, {"a": 1, "b": 2}, {"b": 2}),
        ({"operation": "remove", "keys": ["score"]}, ROWS[:1], [{"name": "Ada"}]),
        ({"operation": "rename", "renames": {"a": "z"}}, {"a": 1, "b": 2}, {"z": 1, "b": 2}),
        ({"operation": "rename", "renames": {"a": "b"}}, {"a": 1, "b": 2}, {"b": 1}),
        (
            {"operation": "append_or_update", "updates": {"b": 9, "c": "new"}},
            {"a": 1, "b": 2},
            {"a": 1, "b": 9, "c": "new"},
        ),
        ({"operation": "combine"}, [{"a": 1}, {"b": 2}], {"a": 1, "b": 2}),
        ({"operation": "combine"}, [{"a": 1}, {"a": 2}, {"a": [3, 4]}], {"a": [1, 2, 3, 4]}),
        ({"operation": "combine"}, {"a": 1}, {"a": 1}),
        (
            {"operation": "literal_eval"},
            "{'k': (1, 2), 'ok': True, 'none': None}",
            {"k": [1, 2], "ok": True, "none": None},
        ),
        ({"operation": "literal_eval"}, '{"a": [1, 2]}', {"a": [1, 2]}),
        (
            {"operation": "literal_eval"},
            {"n": "42", "t": "plain text", "l": "[1, 'x']", "s": "{1}"},
            {"n": 42, "t": "plain text", "l": [1, "x"], "s": [1]},
        ),
        ({"operation": "literal_eval"}, [{"a": "true"}, "{'b': None}"], [{"a": True}, {"b": None}]),
        (
            {"operation": "filter", "filter": {"when": [{"key": "score", "op": ">", "value": 1}]}},
            ROWS,
            [ROWS[0], ROWS[2]],
        ),
        (
            {
                "operation": "filter",
                "filter": {
                    "when": [{"key": "name", "value": "ADA"}, {"key": "score", "value": 1}],
                    "logic": "or",
                },
            },
            ROWS,
            ROWS[:2],
        ),
        (
            {
                "operation": "filter",
                "filter": {"when": [{"key": "name", "value": "ADA"}], "case_sensitive": True},
            },
            ROWS,
            [],
        ),
        (
            {"operation": "filter", "filter": {"when": [{"key": "score", "op": "<", "value": 5}]}},
            ROWS[0],
            [ROWS[0]],
        ),
    ],
)
def test_data_ops(make_node, make_ctx, config, data, expected):
    assert run(make_node, make_ctx, "data_ops", config, data) == expected


def test_data_ops_source_templates_json_text_and_several_inputs(make_node, make_ctx):
    roots = {"fetch": {"body": '{"user": {"id": 7, "name": "Ada", "pw": "x"}}'}, "inputs": {"tag": "vip"}}
    config = {"operation": "remove", "keys": ["pw"], "source": "{{fetch.body.user}}"}
    assert run(make_node, make_ctx, "data_ops", config, roots=roots) == {"id": 7, "name": "Ada"}
    json_body = {
        "operation": "append_or_update",
        "updates": {"tag": "{{inputs.tag}}"},
        "source": "{{fetch.body}}",
    }
    assert run(make_node, make_ctx, "data_ops", json_body, roots=roots)["tag"] == "vip"
    combine = make_node("data_ops", {"operation": "combine"})
    assert combine.execute(make_ctx(delivered={"a": {"x": 1}, "b": {"y": 2}})) == {"x": 1, "y": 2}
    listed = {"operation": "combine", "source": [{"x": 1}, "{{inputs}}"]}
    assert run(make_node, make_ctx, "data_ops", listed, roots=roots) == {"x": 1, "tag": "vip"}
    # Several references to lists of objects are spliced into one list, as in RAGFlow.
    spliced = {"operation": "select_keys", "keys": ["id"], "source": ["{{a.rows}}", "{{b.rows}}"]}
    two_lists = {"a": {"rows": [{"id": 1, "x": 0}]}, "b": {"rows": [{"id": 2}, {"id": 3}]}}
    assert run(make_node, make_ctx, "data_ops", spliced, roots=two_lists) == [{"id": 1}, {"id": 2}, {"id": 3}]


def test_data_ops_does_not_mutate_its_input(make_node, make_ctx):
    data = {"a": 1}
    run(make_node, make_ctx, "data_ops", {"operation": "append_or_update", "updates": {"b": 2}}, data)
    run(make_node, make_ctx, "data_ops", {"operation": "rename", "renames": {"a": "c"}}, data)
    assert data == {"a": 1}


@pytest.mark.parametrize(
    ("config", "data", "message"),
    [
        ({"operation": "select_keys", "keys": ["a"]}, "just text", "`source` is text"),
        ({"operation": "select_keys", "keys": ["a"]}, None, "`source` is empty"),
        ({"operation": "remove", "keys": ["a"]}, [{"a": 1}, 3], r"`source\[1\]` is a number 3"),
        ({"operation": "combine"}, 5, "`source` is a number"),
        (
            {"operation": "filter", "filter": {"when": [{"key": "a"}]}},
            "x",
            "not an object or a list of objects",
        ),
        (
            {"operation": "filter", "filter": {"when": [{"key": "a"}]}},
            [[{"a": 1}, 2]],
            r"`source\[0\]` is a number",
        ),
        ({"operation": "literal_eval"}, "__import__('os').system('id')", "cannot parse `source`"),
        ({"operation": "literal_eval"}, "b'bytes'", "cannot parse `source`"),
        (
            {"operation": "filter", "filter": {"when": [{"key": "a", "op": ">", "value": 1}]}},
            [{"a": "x"}],
            "'item.a'",
        ),
    ],
)
def test_data_ops_errors_name_the_field(make_node, make_ctx, config, data, message):
    with pytest.raises(NodeError, match=message):
        run(make_node, make_ctx, "data_ops", config, data)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"operation": "select_keys"}, "needs `keys`"),
        ({"operation": "remove"}, "needs `keys`"),
        ({"operation": "rename"}, "needs `renames`"),
        ({"operation": "append_or_update"}, "needs `updates`"),
        ({"operation": "filter"}, "needs `filter`"),
        ({"operation": "explode"}, "operation"),
        ({"operation": "combine", "sources": []}, "sources"),
    ],
)
def test_data_ops_config_errors(config, message):
    with pytest.raises(ValidationError, match=message):
        default_registry().parse_config("data_ops", config)


# ----------------------------------------------------------------------------- list_ops
ITEMS = [{"k": 3, "n": "c"}, {"k": 1, "n": "a"}, {"k": 3, "n": "d"}, {"n": "x"}, {"k": 2, "n": "b"}]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"operation": "nth", "n": 1}, ITEMS[0]),
        ({"operation": "nth", "n": 2}, ITEMS[1]),
        ({"operation": "nth", "n": -1}, ITEMS[-1]),
        ({"operation": "head", "n": 2}, ITEMS[:2]),
        ({"operation": "head", "n": 0}, []),
        ({"operation": "head", "n": 99}, ITEMS),
        ({"operation": "tail", "n": 2}, ITEMS[-2:]),
        ({"operation": "tail", "n": 0}, []),
        ({"operation": "tail", "n": 99}, ITEMS),
        (
            {"operation": "filter", "filter": {"when": [{"key": "k", "op": "==", "value": 3}]}},
            [ITEMS[0], ITEMS[2]],
        ),
        ({"operation": "filter", "filter": {"when": [{"key": "k", "op": "empty"}]}}, [ITEMS[3]]),
        ({"operation": "sort", "key": "k"}, [ITEMS[1], ITEMS[4], ITEMS[0], ITEMS[2], ITEMS[3]]),
        (
            {"operation": "sort", "key": "k", "reverse": True},
            [ITEMS[0], ITEMS[2], ITEMS[4], ITEMS[1], ITEMS[3]],
        ),
        ({"operation": "drop_duplicates", "key": "k"}, [ITEMS[0], ITEMS[1], ITEMS[3], ITEMS[4]]),
    ],
)
def test_list_ops(make_node, make_ctx, config, expected):
    assert (
        run(
            make_node,
            make_ctx,
            "list_ops",
            {**config, "source": "{{search.items}}"},
            roots={"search": {"items": ITEMS}},
        )
        == expected
    )


def test_list_ops_on_plain_values_and_inputs(make_node, make_ctx):
    assert run(make_node, make_ctx, "list_ops", {"operation": "sort"}, ["b", "a", "c"]) == ["a", "b", "c"]
    assert run(make_node, make_ctx, "list_ops", {"operation": "drop_duplicates"}, [1, 1, "1", [1], [1]]) == [
        1,
        "1",
        [1],
    ]
    assert run(make_node, make_ctx, "list_ops", {"operation": "nth", "n": 1}, "[5, 6]") == 5
    head = make_node("list_ops", {"operation": "head", "n": 1})
    assert head.execute(make_ctx(delivered={"a": "A", "b": "B"})) == ["A"]
    contains = {"operation": "filter", "filter": {"when": [{"op": "contains", "value": "an"}]}}
    assert run(make_node, make_ctx, "list_ops", contains, ["Ann", "bob", "Dan"]) == ["Ann", "Dan"]


@pytest.mark.parametrize(
    ("config", "data", "message"),
    [
        ({"operation": "nth", "n": 9}, [1, 2], "n=9 is out of range"),
        ({"operation": "nth", "n": -3}, [1, 2], "n=-3 is out of range"),
        ({"operation": "head", "n": 1}, {"a": 1}, "`source` is an object"),
        ({"operation": "head", "n": 1}, None, "`source` is empty"),
        ({"operation": "sort"}, [{"a": 1}, {"a": 2}], "cannot be ordered"),
        ({"operation": "sort", "key": "a"}, [{"a": 1}, {"a": "x"}], "'a' cannot be ordered"),
    ],
)
def test_list_ops_errors_name_the_field(make_node, make_ctx, config, data, message):
    with pytest.raises(NodeError, match=message):
        run(make_node, make_ctx, "list_ops", config, data)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"operation": "nth", "n": 0}, "n cannot be 0"),
        ({"operation": "head", "n": -1}, "n >= 0"),
        ({"operation": "filter"}, "needs `filter`"),
        ({"operation": "filter", "filter": {"when": []}}, "when"),
    ],
)
def test_list_ops_config_errors(config, message):
    with pytest.raises(ValidationError, match=message):
        default_registry().parse_config("list_ops", config)


# ----------------------------------------------------------------------------- text
@pytest.mark.parametrize(
    ("config", "data", "expected"),
    [
        ({"operation": "split"}, "a, b,,c ", ["a", "b", "c"]),
        ({"operation": "split", "delimiters": [",", ";"]}, "a, b;c", ["a", "b", "c"]),
        ({"operation": "split", "delimiters": ["\n", "\r\n"]}, "a\r\nb\nc", ["a", "b", "c"]),
        ({"operation": "split", "delimiters": [","], "trim": False}, "a, b,,c", ["a", " b", "", "c"]),
        ({"operation": "split"}, None, []),
        ({"operation": "merge", "separator": "-"}, ["a", 1, None, {"k": True}], 'a-1--{"k": true}'),
        ({"operation": "merge"}, ["x", "y"], "x,y"),
        ({"operation": "merge", "separator": " | "}, '["x", "y"]', "x | y"),
    ],
)
def test_text_split_and_merge(make_node, make_ctx, config, data, expected):
    assert run(make_node, make_ctx, "text", config, data) == expected


def test_text_template_renders_references_and_jinja(make_node, make_ctx):
    roots = {"inputs": {"name": "ada lovelace", "tags": ["a", "b"]}}
    config = {
        "operation": "template",
        "template": "Dear {{inputs.name | title}} ({{ inputs.tags | length }})",
    }
    assert run(make_node, make_ctx, "text", config, roots=roots) == "Dear Ada Lovelace (2)"
    whole = {"operation": "template", "template": "{{inputs.tags}}"}
    assert run(make_node, make_ctx, "text", whole, roots=roots) == '["a", "b"]'


def test_text_source_template_and_errors(make_node, make_ctx):
    config = {"operation": "split", "source": "{ask@csv}", "delimiters": ["|"]}
    assert run(make_node, make_ctx, "text", config, roots={"ask": {"csv": "x|y"}}) == ["x", "y"]
    with pytest.raises(NodeError, match="split: `source` is a number"):
        run(make_node, make_ctx, "text", {"operation": "split"}, 12)
    with pytest.raises(NodeError, match="merge: `source` is text"):
        run(make_node, make_ctx, "text", {"operation": "merge"}, "not a list")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"operation": "template"}, "needs `template`"),
        ({"operation": "split", "delimiters": []}, "delimiters"),
        ({"operation": "split", "delimiters": [""]}, "cannot be empty"),
    ],
)
def test_text_config_errors(config, message):
    with pytest.raises(ValidationError, match=message):
        default_registry().parse_config("text", config)


# ----------------------------------------------------------------------------- transform
def test_transform_templates_and_jsonpath(make_node, make_ctx):
    data = {"who": "you", "items": [{"name": "a", "n": 1}, {"name": "b", "n": 5}], "meta": {"total": 2}}
    config = {
        "mapping": {
            "names": "$.items[*].name",
            "first": "$.items[0].name",
            "last": "$.items[-1].name",
            "total": "$.meta.total",
            "count": "$.items.`len`",
            "missing": "$.meta.nope",
            "big": "$.items[?(@.n > 2)].name",
            "none_big": "$.items[?(@.n > 99)].name",
            "deep": "$..total",
            "whole": "$",
            "greeting": "hi {{inputs.who}}",
            "typed": "{{inputs.items}}",
            "price": "$5 off",
            "constant": 3,
        }
    }
    out = run(make_node, make_ctx, "transform", config, data, roots={"inputs": data})
    assert out == {
        "names": ["a", "b"],
        "first": "a",
        "last": "b",
        "total": 2,
        "count": 2,
        "missing": None,
        "big": ["b"],
        "none_big": [],
        "deep": [2],
        "whole": data,
        "greeting": "hi you",
        "typed": data["items"],
        "price": "$5 off",
        "constant": 3,
    }


def test_transform_source_json_text_and_keep_source(make_node, make_ctx):
    roots = {"fetch": {"body": '{"id": 7, "user": {"name": "Ada"}}'}}
    config = {
        "source": "{{fetch.body}}",
        "keep_source": True,
        "mapping": {"name": "$.user.name", "id": "{{fetch.body.id}}"},
    }
    assert run(make_node, make_ctx, "transform", config, roots=roots) == {
        "id": 7,
        "user": {"name": "Ada"},
        "name": "Ada",
    }
    with pytest.raises(NodeError, match="keep_source: `source` is a list"):
        run(make_node, make_ctx, "transform", {"keep_source": True, "mapping": {"a": "$[0]"}}, [1])


def test_transform_parses_jsonpath_once_at_construction(make_node, monkeypatch):
    from plait.nodes.builtin import data

    node = make_node("transform", {"mapping": {"a": "$.x.y"}})
    monkeypatch.setattr(data, "compile_jsonpath", lambda text: pytest.fail("parsed at run time"))
    assert node.execute(type("Ctx", (), {"input": {"x": {"y": 1}}})()) == {"a": 1}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"mapping": {"bad": "$[?("}}, r"mapping\['bad'\]: invalid JSONPath"),
        ({"mapping": {"bad": "$.a b"}}, r"mapping\['bad'\]: invalid JSONPath"),
        ({"mapping": {}}, "mapping"),
        ({"mapping": {"a": "x"}, "extra": 1}, "extra"),
    ],
)
def test_transform_config_errors(config, message):
    with pytest.raises(ValidationError, match=message):
        default_registry().parse_config("transform", config)


def test_transform_invalid_jsonpath_is_a_flow_validation_problem_naming_the_key():
    doc = {
        "schema": "plait/flow@1",
        "nodes": [{"id": "t", "type": "transform", "config": {"mapping": {"x": "$[?("}}}],
    }
    with pytest.raises(plait.FlowValidationError, match=r"mapping\['x'\]: invalid JSONPath"):
        plait.load_flow(doc)


def test_transform_jsonpath_is_not_checked_as_a_template_reference():
    doc = {
        "schema": "plait/flow@1",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "t", "type": "transform", "config": {"mapping": {"x": "$.a", "y": "{{start.a}}"}}},
        ],
        "edges": [{"source": "start", "target": "t"}],
    }
    result = plait.run_sync(doc, {"a": 1})
    assert result.status == "completed", result.error
    assert result.nodes["t"].output == {"x": 1, "y": 1}


# ----------------------------------------------------------------------------- registry
NEW_TYPES = ["switch", "if", "assign", "merge", "data_ops", "list_ops", "text", "transform"]


@pytest.mark.parametrize("type_name", NEW_TYPES)
def test_registry_describes_the_type_with_a_json_schema(type_name):
    described = {entry["name"]: entry for entry in default_registry().describe_all()}
    entry = described[type_name]
    schema = entry["config_schema"]
    assert schema["type"] == "object" and schema["properties"]
    assert schema.get("additionalProperties") is False
    assert entry["title"] and entry["description"] and entry["input_ports"] == ["in"]
    models = [schema, *schema.get("$defs", {}).values()]
    for model in models:  # the inspector form shows every title and description
        for field, spec in model["properties"].items():
            assert spec.get("title") and spec.get("description"), f"{type_name}: {model['title']}.{field}"
    node_class = default_registry().get(type_name)
    assert node_class.inline is True


def test_registry_ports():
    described = {entry["name"]: entry for entry in default_registry().describe_all()}
    assert described["if"]["output_ports"] == ["true", "false"]
    assert described["switch"]["output_ports"] == "dynamic"
    assert described["transform"]["output_ports"] == ["out"]
