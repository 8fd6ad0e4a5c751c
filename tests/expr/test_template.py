"""Templates: whole-value references, text substitution, RAGFlow syntax, Jinja mode and the sandbox."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plait.expr import Ref, Template, TemplateError, compile_template, render

SCOPE: dict[str, Any] = {
    "begin": {"query": "what is plait?", "n": 3},
    "agent:clearcooksgo": {"content": "cooked", "json": '{"items": [{"name": "x"}, {"name": "y"}]}'},
    "retrieval:x": {"formalized_content": "chunks", "hits": [{"score": 0.5}, {"score": 0.9}]},
    "a": {
        "list": [1, 2, 3],
        "dict": {"k": "v", "ü": "é"},
        "int": 7,
        "float": 1.5,
        "flag": True,
        "off": False,
        "none": None,
        "str": "hello",
        "obj": 3 + 4j,
        "items": "key not method",
    },
    "inputs": {"x": "X", "nums": [1, 2]},
    "vars": {"counter": 2},
    "sys": {"query": "Q", "date": "2025-01-01"},
    "env": {"NAME": "secret", "a": "A"},
    "item": {"name": "it"},
    "index": 4,
    "result": ["r"],
    "names": ["ann", "bob"],
}


def lookup(root: str) -> Any:
    return SCOPE[root]


def r(value: Any) -> Any:
    return render(value, lookup)


# --- whole-value references keep their type --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{a.list}}", [1, 2, 3]),
        ("{{ a.dict }}", {"k": "v", "ü": "é"}),
        ("{{a.int}}", 7),
        ("{{a.float}}", 1.5),
        ("{{a.flag}}", True),
        ("{{a.none}}", None),
        ("{{a.missing}}", None),
        ("{{ nosuchnode.out }}", None),
        ("  {{a.list}}\n", [1, 2, 3]),
        ("{{a.list.-1}}", 3),
        ("{{ inputs.nums }}", [1, 2]),
        ("{{vars.counter}}", 2),
        ("{{sys.query}}", "Q"),
        ("{{ sys.date }}", "2025-01-01"),
        ("{{env.NAME}}", "secret"),
        ("{{item}}", {"name": "it"}),
        ("{{ item.name }}", "it"),
        ("{{index}}", 4),
        ("{{result}}", ["r"]),
        ("{{ result.0 }}", "r"),
        ("{{ a.items }}", "key not method"),
    ],
)
def test_whole_value(text: str, expected: Any) -> None:
    assert r(text) == expected
    assert type(r(text)) is type(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{Agent:ClearCooksGo@content}", "cooked"),
        ("{{Agent:ClearCooksGo@content}}", "cooked"),
        ("{{ begin@query }}", "what is plait?"),
        ("{{{ Retrieval:X@formalized_content }}}", "chunks"),
        ("{ { Retrieval:X@hits.1.score } }", 0.9),
        ("{BEGIN@n}", 3),
        ("{begin@Query}", None),  # path segments keep their case
        ("{sys.query}", "Q"),
        ("{env.a}", "A"),
        ("{agent:clearcooksgo@json.items.-1.name}", "y"),
        ("{Missing:Node@x}", None),
    ],
)
def test_ragflow_references(text: str, expected: Any) -> None:
    assert r(text) == expected


# --- references inside text --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Q: {{begin.query}}!", "Q: what is plait?!"),
        ("n={{a.int}} f={{a.float}}", "n=7 f=1.5"),
        ("{{a.flag}}/{{a.off}}", "true/false"),
        ("[{{a.none}}][{{a.missing}}][{{ghost}}]", "[][][]"),
        ("l={{a.list}}", "l=[1, 2, 3]"),
        ("d={{a.dict}}", 'd={"k": "v", "ü": "é"}'),
        ("c={{a.obj}}", "c=(3+4j)"),
        ("{{a.str}} {{a.str}}", "hello hello"),
        ("ask {sys.query} as {{ inputs.x }} via {Agent:ClearCooksGo@content}", "ask Q as X via cooked"),
        ("{{{ Retrieval:X@formalized_content }}} and {{ begin@query }}", "chunks and what is plait?"),
        ("#{{index}}: {{item.name}}", "#4: it"),
        ("{{{a.int}}}", "{7}"),
    ],
)
def test_text_substitution(text: str, expected: str) -> None:
    assert r(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": [1, 2]}',
        'Reply as JSON: {"answer": "..."}',
        "{word} and {another_word}",
        "{inputs.x}",
        "set {} and {  }",
        "function f() { return 1; }",
        "{#not closed",
    ],
)
def test_literal_braces_stay_text(text: str) -> None:
    tpl = compile_template(text)
    assert tpl.is_static
    assert tpl.refs == ()
    assert r(text) == text


def test_json_prompt_with_ragflow_ref_keeps_json_braces() -> None:
    assert r('{"q": "{sys.query}", "c": {Agent:ClearCooksGo@content}}') == '{"q": "Q", "c": cooked}'


def test_lookup_key_error_is_none_but_other_errors_propagate() -> None:
    def failing(root: str) -> Any:
        raise RuntimeError("boom")

    assert render("{{x}}", lambda root: {}[root]) is None
    with pytest.raises(RuntimeError):
        render("{{x}}", failing)


def test_lookup_receives_lower_cased_roots() -> None:
    seen: list[str] = []

    def spy(root: str) -> Any:
        seen.append(root)
        return {"Out": 1}

    assert render("{{ MyNode.Out }} {Agent:AbC@Out}", spy) == "1 1"
    assert seen == ["mynode", "agent:abc"]


# --- compile_template and Template ---------------------------------------------------------------------


def test_static_template() -> None:
    tpl = compile_template("no refs {here}")
    assert isinstance(tpl, Template)
    assert tpl.is_static and tpl.refs == ()
    assert tpl.render(lookup) == "no refs {here}"


def test_template_refs_in_order() -> None:
    tpl = compile_template("{{a.b.0}} {x@y.z} {sys.query} {{a.b.0}}")
    assert tpl.text == "{{a.b.0}} {x@y.z} {sys.query} {{a.b.0}}"
    assert not tpl.is_static
    assert tpl.refs == (
        Ref("a", ("b", 0), "{{a.b.0}}"),
        Ref("x", ("y", "z"), "{x@y.z}"),
        Ref("sys", ("query",), "{sys.query}"),
        Ref("a", ("b", 0), "{{a.b.0}}"),
    )


def test_compile_template_is_cached() -> None:
    assert compile_template("{{a.int}} cached") is compile_template("{{a.int}} cached")


def test_render_fast_path_skips_cache() -> None:
    before = compile_template.cache_info()
    assert r("no braces at all") == "no braces at all"
    assert compile_template.cache_info() == before


def test_render_deep_walk() -> None:
    obj = object()
    value = {
        "prompt": "hi {{inputs.x}}",
        "whole": "{{a.list}}",
        "nested": [{"v": "{sys.query}"}, 5, None, True, 2.5, obj, ("{{a.int}}",)],
        "{{ keys }}": "kept",
    }
    out = r(value)
    assert out == {
        "prompt": "hi X",
        "whole": [1, 2, 3],
        "nested": [{"v": "Q"}, 5, None, True, 2.5, obj, ("{{a.int}}",)],
        "{{ keys }}": "kept",
    }
    assert out["nested"][5] is obj
    assert value["prompt"] == "hi {{inputs.x}}"  # input not mutated


def test_render_returns_new_containers() -> None:
    value = {"a": [1, 2]}
    out = r(value)
    assert out == value
    assert out is not value and out["a"] is not value["a"]


# --- Jinja mode -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{ begin.query | upper }}", "WHAT IS PLAIT?"),
        ("{{ a.int + 1 }}", "8"),
        ("{{ names[0] }}", "ann"),
        ("{{ names | join(', ') }}", "ann, bob"),
        ("{% for n in names %}<{{ n }}>{% endfor %}", "<ann><bob>"),
        ("{% for h in Retrieval_hits %}{{ h }}{% endfor %}", ""),
        ("{% if a.flag %}yes{% else %}no{% endif %}", "yes"),
        ("{% if a.off %}yes{% else %}no{% endif %}", "no"),
        ("{# comment #}{{ index * 2 }}", "8"),
        ("{{ missing.deep.er }}|{{ missing | default('d') }}", "|d"),
        ("{{ a.list }} {{ a.dict }} {{ a.flag }} {{ a.none }}", '[1, 2, 3] {"k": "v", "ü": "é"} true '),
        ("{{ a.items }}", "key not method"),
        ("{{ Item.name | title }}", "It"),
        ("{% set x = 2 %}{{ x * index }}", "8"),
        ("{{ range(3) | list }}", "[0, 1, 2]"),
        ("line1\n{{ a.int }}\n", "line1\n7\n"),
    ],
)
def test_jinja(text: str, expected: str) -> None:
    assert r(text) == expected


def test_jinja_mixed_with_ragflow_refs() -> None:
    text = "{% if a.flag %}{Agent:ClearCooksGo@content} {sys.query} {{ Begin@n }}{% endif %} {{ a.int | string }}"
    assert r(text) == "cooked Q 3 7"


def test_jinja_plain_refs_with_non_jinja_paths_still_resolve() -> None:
    assert r("{{ a.list.-1 }} {{ agent:clearcooksgo.content }} {{ x | default('-') }}") == "3 cooked -"


def test_jinja_refs_are_undeclared_roots() -> None:
    tpl = compile_template("{% for n in Names %}{{ n | upper }}{{ loop.index }}{% endfor %}{{ a.int + 1 }}")
    assert tpl.refs == (Ref("names", (), "Names"), Ref("a", (), "a"))
    assert not tpl.is_static


def test_jinja_output_is_always_str() -> None:
    assert r("{{ a.list | list }}") == "[1, 2, 3]"
    assert r("{{ a.int + 1 }}") == "8"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("{% if %}", 1),
        ("{{ a b }}", 1),
        ("ok\nok\n{% for x in %}", 3),
        ("{{ a.list | }}", 1),
        ("{% if x %}never closed", 1),
    ],
)
def test_jinja_syntax_error_names_line(text: str, line: int) -> None:
    with pytest.raises(TemplateError, match=rf"line {line}: \S"):
        compile_template(text)


@pytest.mark.parametrize(
    "text",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ a.str.__class__.__mro__[1].__subclasses__() }}",
        "{{ names.append('x') }}",
        "{{ cycler.__init__.__globals__ | string }}",
        "{% for c in ().__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
        "{{ 10 ** 100000 }}",
        "{{ 'x' * 10000000 }}",
    ],
)
def test_sandbox_blocks_escapes(text: str) -> None:
    with pytest.raises(TemplateError):
        r(text)


def test_plain_dunder_paths_never_touch_attributes() -> None:
    # A plain dotted path is a reference, walked by keys/indexes only: nothing to escape through.
    assert r("{{ a.str.__class__.__mro__ }}") is None
    assert r("{{ cycler.__init__.__globals__ }}") is None


def test_jinja_runtime_error_is_template_error() -> None:
    with pytest.raises(TemplateError, match="ZeroDivisionError"):
        r("{{ 1 / 0 }}")


def test_jinja_does_not_mutate_scope() -> None:
    r("{% set _ = names.append('z') if false %}{{ names | length }}")
    assert SCOPE["names"] == ["ann", "bob"]


# --- properties -----------------------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(_values)
def test_whole_reference_round_trips_any_value(value: Any) -> None:
    scope = {"a": value}
    assert render("{{a}}", scope.__getitem__) == value
    assert render("{{ a }}", scope.__getitem__) == value


@given(_values)
def test_embedded_reference_is_always_text(value: Any) -> None:
    out = render("x {{a}} y", {"a": value}.__getitem__)
    assert isinstance(out, str)
    assert out.startswith("x ") and out.endswith(" y")
    if isinstance(value, (dict, list)):
        assert json.loads(out[2:-2]) == value


@given(st.text(alphabet=st.characters(blacklist_characters="{"), max_size=50))
def test_text_without_braces_is_returned_as_is(text: str) -> None:
    assert render(text, lookup) is text


def test_float_text_rendering() -> None:
    assert r("{{a.float}}x") == "1.5x"
    assert math.isclose(r("{{a.float}}"), 1.5)
