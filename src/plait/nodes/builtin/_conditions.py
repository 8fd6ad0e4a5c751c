"""Conditions shared by `if`, `switch`, `loop` exits and list/data filters.

12 operators as in RAGFlow/Dify switches. String comparisons ignore case unless asked not to.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from plait.expr import TemplateError, get_path, parse_ref
from plait.nodes.base import NodeError

Operator = Literal[
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
]


class Condition(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ref: str = Field(..., description="What to test: a reference such as 'classify.label' or '{{inputs.x}}'.")
    op: Operator = Field("==", description="Comparison operator.")
    value: Any = Field(None, description="Value to compare with (may be a template).")


class _Scope(Protocol):
    def lookup(self, root: str) -> Any: ...

    def render(self, value: Any) -> Any: ...


def resolve_ref(ctx: _Scope, text: str) -> Any:
    """The value a condition's `ref` points at (None if the node did not run or the path is missing)."""
    try:
        ref = parse_ref(text)
    except TemplateError as exc:
        raise NodeError(str(exc), hint="write the reference as node.field", retryable=False) from None
    try:
        root = ctx.lookup(ref.root)
    except KeyError:
        return None
    return get_path(root, ref.path)


def is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, dict, tuple, set)):
        return len(value) == 0
    return False


def _number(value: Any, ref: str) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except (TypeError, ValueError):
        raise NodeError(
            f"condition on {ref!r}: {value!r} is not a number",
            retryable=False,
            hint="compare numbers with > < >= <=, or use == for text",
        ) from None


def compare(left: Any, op: str, right: Any, *, case_sensitive: bool = False, ref: str = "value") -> bool:
    if op == "empty":
        return is_empty(left)
    if op == "not_empty":
        return not is_empty(left)
    if op in (">", "<", ">=", "<="):
        a, b = _number(left, ref), _number(right, ref)
        return {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]
    fold = (lambda s: s) if case_sensitive else (lambda s: s.casefold())
    if op in ("==", "!="):
        if isinstance(left, str) and isinstance(right, str):
            equal = fold(left) == fold(right)
        elif isinstance(left, (int, float)) and not isinstance(left, bool) and isinstance(right, str):
            equal = _loose_number_equal(left, right)
        elif isinstance(right, (int, float)) and not isinstance(right, bool) and isinstance(left, str):
            equal = _loose_number_equal(right, left)
        else:
            equal = left == right
        return equal if op == "==" else not equal
    if op in ("contains", "not_contains"):
        if left is None:
            found = False
        elif isinstance(left, str):
            found = fold(str(right)) in fold(left)
        elif isinstance(left, dict):
            found = right in left
        elif isinstance(left, (list, tuple)):
            items = [fold(x) if isinstance(x, str) else x for x in left]
            found = (fold(right) if isinstance(right, str) else right) in items
        else:
            found = fold(str(right)) in fold(str(left))
        return found if op == "contains" else not found
    text = "" if left is None else str(left)
    if op == "starts_with":
        return fold(text).startswith(fold(str(right)))
    if op == "ends_with":
        return fold(text).endswith(fold(str(right)))
    raise NodeError(f"unknown operator {op!r}", retryable=False)


def _loose_number_equal(number: float, text: str) -> bool:
    try:
        return float(text.strip()) == number
    except ValueError:
        return False


def evaluate(
    ctx: _Scope, conditions: list[Condition], logic: str = "and", case_sensitive: bool = False
) -> bool:
    results = (
        compare(resolve_ref(ctx, c.ref), c.op, ctx.render(c.value), case_sensitive=case_sensitive, ref=c.ref)
        for c in conditions
    )
    return all(results) if logic == "and" else any(results)


def condition_reference_texts(conditions: list[Condition]) -> list[str]:
    """Condition refs written without braces, as templates validation can check."""
    return [c.ref if "{" in c.ref else "{{" + c.ref + "}}" for c in conditions]
