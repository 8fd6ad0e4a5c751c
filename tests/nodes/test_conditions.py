"""The shared condition evaluator: operators, coercions, references, and/or, errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from plait.nodes import NodeError
from plait.nodes.builtin._conditions import (
    OPERATORS,
    Condition,
    ItemCondition,
    as_text,
    compare,
    evaluate,
    is_empty,
    item_filter,
    normalize_operator,
    resolve_ref,
    to_number,
)


@pytest.mark.parametrize(
    ("left", "op", "right", "expected"),
    [
        ("Bug", "==", "bug", True),
        ("bug ", "==", "bug", False),
        (5, "==", "5", True),
        ("5.0", "==", 5, True),
        (True, "==", "TRUE", True),
        (None, "==", "", True),
        ([1, 2], "==", [1, 2], True),
        ("a", "!=", "A", False),
        ("a", "!=", "b", True),
        ("Big BUG here", "contains", "bug", True),
        (["a", "B"], "contains", "b", True),
        ([1, 2], "contains", "2", True),
        ({"Key": 1}, "contains", "key", True),
        (None, "contains", "x", False),
        (12345, "contains", "234", True),
        ("fine", "not_contains", "bug", True),
        (None, "not_contains", "x", True),
        ("Hello", "starts_with", "he", True),
        ("Hello", "starts_with", "lo", False),
        ("Hello", "ends_with", "LO", True),
        (None, "ends_with", "", True),
        (None, "empty", None, True),
        ("  \n", "empty", None, True),
        ([], "empty", None, True),
        ({}, "empty", None, True),
        (0, "empty", None, False),
        (False, "empty", None, False),
        ("x", "not_empty", None, True),
        ([1], "not_empty", None, True),
        ("", "not_empty", None, False),
        ("10", ">", 9, True),
        (10, ">", "10", False),
        (1, "<", "2", True),
        (2.5, "<", 2, False),
        (2, ">=", 2, True),
        (" 3 ", ">=", "4", False),
        (3, "<=", 2, False),
        (-1, "<=", "-1", True),
    ],
)
def test_compare(left, op, right, expected):
    assert compare(left, op, right) is expected


def test_every_operator_is_covered_by_test_compare():
    assert set(OPERATORS) == {
        "==",
        "!=",
        "contains",
        "not_contains",
        "starts_with",
        "ends_with",
        "empty",
        "not_empty",
        ">",
        "<",
        ">=",
        "<=",
    }


@pytest.mark.parametrize(
    ("left", "op", "right"),
    [
        ("Bug", "==", "bug"),
        ("Big BUG", "contains", "bug"),
        ("Hello", "starts_with", "he"),
        (["A"], "contains", "a"),
    ],
)
def test_case_sensitive_text_comparisons(left, op, right):
    assert compare(left, op, right) is True
    assert compare(left, op, right, case_sensitive=True) is False


@pytest.mark.parametrize(("left", "right"), [("abc", 1), (1, "abc"), (None, 1), (True, 1), ([1], 1)])
def test_numeric_operator_on_non_number_names_the_subject(left, right):
    with pytest.raises(NodeError, match="'classify.score'.*not a number") as info:
        compare(left, ">", right, subject="classify.score")
    assert info.value.retryable is False and info.value.hint


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("=", "=="),
        ("≠", "!="),
        ("is", "=="),
        ("is not", "!="),
        ("not contains", "not_contains"),
        ("start with", "starts_with"),
        ("End With", "ends_with"),
        ("not empty", "not_empty"),
        ("≥", ">="),
        ("≤", "<="),
        ("contains", "contains"),
        ("weird", "weird"),
    ],
)
def test_ragflow_operator_spellings_are_normalised(spelling, canonical):
    assert normalize_operator(spelling) == canonical


def test_condition_validates_ref_and_op():
    assert Condition(ref="a.b", op="≥", value=1).op == ">="
    with pytest.raises(ValidationError, match="ref"):
        Condition(ref="not a ref!", op="==")
    with pytest.raises(ValidationError, match="op"):
        Condition(ref="a.b", op="~=")
    with pytest.raises(ValidationError, match="extra"):
        Condition(ref="a.b", op="==", other=1)


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("classify.label", "bug"),
        ("{{ classify.label }}", "bug"),
        ("{Classify@label}", "bug"),
        ("classify.tags.1", "y"),
        ("http.body.total", 3),
        ("classify.missing", None),
        ("skipped.label", None),
        ("vars.count", 2),
    ],
)
def test_resolve_ref_forms(make_ctx, ref, expected):
    ctx = make_ctx(
        roots={"classify": {"label": "bug", "tags": ["x", "y"]}, "http": {"body": '{"total": 3}'}},
        vars={"count": 2},
    )
    assert resolve_ref(ctx, ref) == expected


def test_resolve_ref_rejects_text_that_is_not_a_reference(make_ctx):
    with pytest.raises(NodeError, match="not a reference"):
        resolve_ref(make_ctx(), "two words")


def test_evaluate_and_or_with_template_values(make_ctx):
    ctx = make_ctx(roots={"inputs": {"a": 1, "b": 2, "limit": 2}})
    both = [Condition(ref="inputs.a", value=1), Condition(ref="inputs.b", op=">=", value="{{inputs.limit}}")]
    one = [Condition(ref="inputs.a", value=9), Condition(ref="inputs.b", value=2)]
    assert evaluate(ctx, both, "and") is True
    assert evaluate(ctx, one, "and") is False
    assert evaluate(ctx, one, "or") is True
    assert evaluate(ctx, [], "and") is True and evaluate(ctx, [], "or") is False


def test_evaluate_short_circuits(make_ctx):
    ctx = make_ctx(roots={"inputs": {"a": 1, "text": "abc"}})
    failing = Condition(ref="inputs.text", op=">", value=1)
    assert evaluate(ctx, [Condition(ref="inputs.a", value=1), failing], "or") is True
    with pytest.raises(NodeError, match="'inputs.text'"):
        evaluate(ctx, [Condition(ref="inputs.a", value=1), failing], "and")


def test_item_filter_renders_values_once_and_reads_item_paths(make_ctx):
    ctx = make_ctx(roots={"inputs": {"min": 2}})
    keep = item_filter(
        ctx,
        [ItemCondition(key="score", op=">=", value="{{inputs.min}}"), ItemCondition(key="tag.0", value="A")],
        "and",
        False,
    )
    assert keep({"score": 3, "tag": ["a"]}) is True
    assert keep({"score": 1, "tag": ["a"]}) is False
    assert item_filter(ctx, [ItemCondition(op="contains", value="x")], "and", True)("xyz") is True


def test_small_helpers():
    assert as_text(None) == "" and as_text({"a": 1}) == '{"a": 1}' and as_text("é") == "é"
    assert to_number(" 7 ") == 7 and to_number("2.5") == 2.5 and to_number(True) is None
    assert to_number("nan") is None and to_number("x") is None
    assert is_empty(" ") and not is_empty(0)
