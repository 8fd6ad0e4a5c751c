"""parse_ref, find_refs and get_path: both reference syntaxes and path walking."""

from __future__ import annotations

import pytest

from plait.expr import Ref, TemplateError, find_refs, get_path, parse_ref
from plait.expr.refs import scan


@pytest.mark.parametrize(
    ("text", "root", "path"),
    [
        ("a.b.0.c", "a", ("b", 0, "c")),
        ("a", "a", ()),
        ("{{ a.b }}", "a", ("b",)),
        ("{{a.b}}", "a", ("b",)),
        ("  {{   node.out.-1   }}  ", "node", ("out", -1)),
        ("sys.query", "sys", ("query",)),
        ("{sys.query}", "sys", ("query",)),
        ("{env.API_KEY}", "env", ("API_KEY",)),
        ("inputs.x", "inputs", ("x",)),
        ("Agent:Foo@content.x", "agent:foo", ("content", "x")),
        ("{Agent:ClearCooksGo@content}", "agent:clearcooksgo", ("content",)),
        ("{{ begin@query }}", "begin", ("query",)),
        ("{{{ Retrieval:X@formalized_content }}}", "retrieval:x", ("formalized_content",)),
        ("{ { Begin@Query } }", "begin", ("Query",)),
        ("My-Node_2.Out", "my-node_2", ("Out",)),
    ],
)
def test_parse_ref_forms(text: str, root: str, path: tuple) -> None:
    ref = parse_ref(text)
    assert (ref.root, ref.path) == (root, path)
    assert ref.text == text.strip()


@pytest.mark.parametrize(
    "text", ["", "   ", "{{ }}", "a b", "a..b", "a.b +1", "{{ x | upper }}", "a@", "@b", "a@b@c"]
)
def test_parse_ref_rejects_non_references(text: str) -> None:
    with pytest.raises(TemplateError, match="not a reference"):
        parse_ref(text)


def test_template_error_is_value_error() -> None:
    assert issubclass(TemplateError, ValueError)


def test_ref_is_frozen_and_hashable() -> None:
    ref = parse_ref("a.b")
    assert ref == Ref("a", ("b",), "a.b")
    assert hash(ref) == hash(Ref("a", ("b",), "a.b"))
    with pytest.raises(AttributeError):
        ref.root = "x"  # type: ignore[misc]


# --- scanning inside text ----------------------------------------------------------------------


def _texts(text: str) -> list[str]:
    return [ref.text for _, _, ref, _ in scan(text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("{Agent:ClearCooksGo@content}", ["{Agent:ClearCooksGo@content}"]),
        ("{{Agent:A@content}}", ["{{Agent:A@content}}"]),
        ("{{{ Retrieval:X@formalized_content }}}", ["{{{ Retrieval:X@formalized_content }}}"]),
        ("{ {a@b} }", ["{ {a@b} }"]),
        ("say {sys.query} and {env.X}", ["{sys.query}", "{env.X}"]),
        ("{{ sys.date }}", ["{{ sys.date }}"]),
        (
            "{{item}} / {{ item.name }} / {{index}} / {{result}}",
            ["{{item}}", "{{ item.name }}", "{{index}}", "{{result}}"],
        ),
        # Unbalanced braces: the ref takes only as many as both sides have.
        ('{"x": {a@b}}', ["{a@b}"]),
        ("{{{sys.query}}", ["{{sys.query}}"]),
        # Plain refs are Jinja-shaped: exactly two adjacent braces.
        ("{{{x}}}", ["{{x}}"]),
        ("{ {{x}} }", ["{{x}}"]),
    ],
)
def test_scan_finds_references(text: str, found: list[str]) -> None:
    assert _texts(text) == found


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        "{word}",
        "{inputs.x}",
        "{ item }",
        "{ {x} }",
        "{{ a b }}",
        "{{ x | upper }}",
        "plain",
        "{@b}",
    ],
)
def test_scan_leaves_non_references(text: str) -> None:
    assert _texts(text) == []


def test_scan_marks_plain_form() -> None:
    kinds = [plain for *_, plain in scan("{{a.b}} {x@y} {sys.q} {{sys.q}}")]
    assert kinds == [True, False, False, False]


# --- find_refs -----------------------------------------------------------------------------------


def test_find_refs_walks_deep_in_order_with_duplicates() -> None:
    value = {
        "prompt": "Hi {{ inputs.name }}, see {Agent:Foo@content}",
        "nested": [{"x": "{{a.b}}"}, "{{ a.b }}", 3, None, ("{sys.query}",)],
        "n": 1,
        "keys {{ignored}}": "no refs",
    }
    refs = find_refs(value)
    assert [(r.root, r.path) for r in refs] == [
        ("inputs", ("name",)),
        ("agent:foo", ("content",)),
        ("a", ("b",)),
        ("a", ("b",)),
        ("sys", ("query",)),
    ]


def test_find_refs_plain_values() -> None:
    assert find_refs(None) == []
    assert find_refs(42) == []
    assert find_refs("no braces") == []
    assert find_refs('{"json": [1, 2]}') == []


def test_find_refs_jinja_reports_undeclared_roots() -> None:
    refs = find_refs(
        "{% for x in Items %}{{ x.name | upper }}{{ loop.index }}{% endfor %}{{ range(3) | list }}"
    )
    assert refs == [Ref("items", (), "Items")]


def test_find_refs_jinja_keeps_ragflow_refs() -> None:
    refs = find_refs("{% if flag %}{Agent:Foo@content.x}{% endif %}")
    assert [(r.root, r.path) for r in refs] == [("flag", ()), ("agent:foo", ("content", "x"))]


def test_find_refs_raises_on_broken_jinja() -> None:
    with pytest.raises(TemplateError):
        find_refs({"a": ["{% if %}"]})


# --- get_path ------------------------------------------------------------------------------------

DATA = {"a": {"b": [10, 20, {"c": "deep"}]}, "n": None, "0": "zero-key", "s": "text", 5: "int-key"}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ((), DATA),
        (("a", "b", 0), 10),
        (("a", "b", "1"), 20),
        (("a", "b", -1, "c"), "deep"),
        (("a", "b", "-3"), 10),
        (("a", "b", 3), None),
        (("a", "b", -4), None),
        (("a", "b", "x"), None),
        (("a", "missing", "c"), None),
        (("n", "x"), None),
        ((0,), "zero-key"),
        (("5",), "int-key"),
        (("s", "x"), None),
        (("s", 0), None),
    ],
)
def test_get_path(path: tuple, expected: object) -> None:
    assert get_path(DATA, path) == expected


def test_get_path_never_uses_attributes() -> None:
    class Obj:
        x = 1

    assert get_path(Obj(), ["x"]) is None
    assert get_path({"d": {}}, ["d", "items"]) is None
    assert get_path("abc", ["upper"]) is None


def test_get_path_decodes_json_strings_on_the_way() -> None:
    value = {"content": ' {"items": [{"name": "x"}, "[1, 2]"]} '}
    assert get_path(value, ["content", "items", 0, "name"]) == "x"
    assert get_path(value, ["content", "items", 1, -1]) == 2
    assert get_path('["a", "b"]', [1]) == "b"


def test_get_path_bad_json_is_none() -> None:
    assert get_path({"c": "{not json"}, ["c", "x"]) is None
    assert get_path({"c": "[1, 2"}, ["c", 0]) is None


def test_get_path_tuple_and_bool_index() -> None:
    assert get_path((1, 2), [1]) == 2
    assert get_path([1, 2], [True]) is None
