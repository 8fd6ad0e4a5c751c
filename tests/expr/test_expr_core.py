from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plait.expr import TemplateError, compile_template, find_refs, get_path, parse_ref, render

SCOPE = {
    "a": {"b": [1, {"c": "x"}], "json": '{"k": [10, 20]}', "n": 5, "none": None, "flag": True},
    "agent:clearcooksgo": {"content": "hello"},
    "begin": {"query": "Q"},
    "sys": {"query": "sq", "date": "2026-11-22"},
    "env": {"TOKEN": "t0k"},
    "inputs": {"name": "Ada"},
    "vars": {"count": 2},
    "item": "word",
    "index": 3,
}


def lookup(root):
    return SCOPE[root]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{a.b}}", [1, {"c": "x"}]),
        ("  {{ a.n }}  ", 5),
        ("{{a.none}}", None),
        ("{{a.flag}}", True),
        ("{{a.b.1.c}}", "x"),
        ("{{a.b.-1.c}}", "x"),
        ("{{a.json.k.1}}", 20),
        ("{{a.missing.deep}}", None),
        ("{{ghost.x}}", None),
        ("{Agent:ClearCooksGo@content}", "hello"),
        ("{{ agent:clearcooksgo@content }}", "hello"),
        ("{{{ Agent:ClearCooksGo@content }}}", "hello"),
        ("{begin@query}", "Q"),
        ("{sys.query}", "sq"),
        ("{{sys.date}}", "2026-11-22"),
        ("{{env.TOKEN}}", "t0k"),
        ("{{inputs.name}}", "Ada"),
        ("{{vars.count}}", 2),
        ("{{item}}", "word"),
        ("{{index}}", 3),
    ],
)
def test_whole_value_references_keep_their_type(text, expected):
    assert render(text, lookup) == expected


def test_references_inside_text():
    assert render("n={{a.n}} none=[{{a.none}}] list={{a.b}} ok={{a.flag}}", lookup) == (
        'n=5 none=[] list=[1, {"c": "x"}] ok=true'
    )
    assert render("Hi {inputs.name} / {Agent:ClearCooksGo@content}!", lookup) == "Hi {inputs.name} / hello!"


def test_json_and_single_braces_stay_literal():
    for text in ('{"a": 1, "b": {"c": 2}}', "{word}", "f(x) = {x}", "{ }"):
        assert render(text, lookup) == text
        assert compile_template(text).is_static


def test_jinja_templates_are_sandboxed():
    assert render("{{ item | upper }}!", lookup) == "WORD!"
    assert render("{% for x in a.b %}[{{ loop.index }}]{% endfor %}", lookup) == "[1][2]"
    assert render("{{ inputs.name ~ '-' ~ vars.count }}", lookup) == "Ada-2"
    with pytest.raises(TemplateError):
        render("{{ ''.__class__.__mro__[1].__subclasses__() }}", lookup)
    with pytest.raises(TemplateError, match="line 1"):
        compile_template("{% for x in %}")
    with pytest.raises(TemplateError):
        render("{{ vars.update({'x': 1}) }}", lookup)  # immutable sandbox


def test_deep_render_and_find_refs():
    value = {"k": ["{{a.n}}", {"x": "{begin@query} and {{item}}"}], "n": 3, "s": "plain"}
    assert render(value, lookup) == {"k": [5, {"x": "Q and word"}], "n": 3, "s": "plain"}
    assert [(r.root, r.path) for r in find_refs(value)] == [
        ("a", ("n",)),
        ("begin", ("query",)),
        ("item", ()),
    ]


def test_parse_ref_and_get_path():
    assert parse_ref("Agent:X@content.a.0").root == "agent:x"
    assert parse_ref("{{ A.B.0 }}").path == ("B", 0)
    with pytest.raises(TemplateError):
        parse_ref("not a ref!")
    assert get_path({"a": ["x", "y"]}, ["a", "1"]) == "y"
    assert get_path("[1, 2]", [0]) == 1
    assert get_path("not json", ["a"]) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@given(json_values)
def test_whole_value_roundtrip(value):
    scope = {"a": value}
    assert render("{{a}}", scope.__getitem__) == value
    assert isinstance(render("x {{a}} y", scope.__getitem__), str)
