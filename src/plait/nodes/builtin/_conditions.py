"""Conditions shared by `if`, `switch`, the loop's exit test and the data/list filters.

One comparison function serves every caller so the 12 operators (RAGFlow's Switch set) mean the
same thing everywhere: text comparisons ignore case unless asked not to, numbers written as text
compare as numbers, and `empty` treats whitespace-only text as empty. RAGFlow/Dify operator
spellings (`=`, `≠`, `start with`, `≥`...) are accepted and normalised, so imported documents
keep working without a translation table of their own.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import Annotated, Any, Literal, Protocol, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from plait.expr import Ref, TemplateError, get_path, parse_ref
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
OPERATORS: tuple[str, ...] = get_args(Operator)
Logic = Literal["and", "or"]

# Other spellings, keyed by their lower-case, single-spaced form ("not_contains" -> "not contains").
_OPERATOR_ALIASES: dict[str, str] = {
    "=": "==",
    "is": "==",
    "equals": "==",
    "≠": "!=",
    "is not": "!=",
    "not equals": "!=",
    "not contains": "not_contains",
    "start with": "starts_with",
    "starts with": "starts_with",
    "end with": "ends_with",
    "ends with": "ends_with",
    "is empty": "empty",
    "not empty": "not_empty",
    "is not empty": "not_empty",
    "≥": ">=",
    "≤": "<=",
}
LOGIC_DESCRIPTION = "and: every condition must hold; or: one is enough."
CASE_SENSITIVE_DESCRIPTION = "Compare text case-sensitively (default: 'Bug' equals 'bug')."
_NUMERIC_OPERATORS = frozenset({">", "<", ">=", "<="})
_OPERATOR_DOC = (
    "== and != compare values (text ignores case unless case-sensitive; '5' equals 5); contains / "
    "not_contains look in text, list items or object keys; starts_with / ends_with test text; "
    "empty / not_empty need no value (None, '', whitespace, [] and {} are empty); > < >= <= "
    "compare numbers (numeric text is converted)."
)


def normalize_operator(op: Any) -> Any:
    """The canonical operator for a RAGFlow/Dify spelling; anything unknown is returned unchanged."""
    if not isinstance(op, str):
        return op
    key = " ".join(op.strip().lower().replace("_", " ").split())
    if key in _OPERATOR_ALIASES:
        return _OPERATOR_ALIASES[key]
    canonical = key.replace(" ", "_")
    return canonical if canonical in OPERATORS else op


OperatorField = Annotated[Operator, BeforeValidator(normalize_operator)]


class Condition(BaseModel):
    """One test: the value a reference points at, compared with `value` by `op`."""

    model_config = ConfigDict(extra="forbid", title="Condition")

    ref: str = Field(
        ...,
        min_length=1,
        title="Reference",
        description="What to test: 'classify.label', '{{inputs.query}}', 'vars.count' or RAGFlow's "
        "'{cpn_id@param}'. A node that did not run reads as empty.",
        examples=["classify.label"],
    )
    op: OperatorField = Field("==", title="Operator", description=_OPERATOR_DOC)
    value: Any = Field(
        None,
        title="Value",
        description="What to compare with; may be a template such as '{{inputs.limit}}'. "
        "Ignored by empty / not_empty.",
    )

    @field_validator("ref")
    @classmethod
    def _ref_is_a_reference(cls, ref: str) -> str:
        parse_ref(ref)  # TemplateError is a ValueError: pydantic reports it on this field
        return ref

    @cached_property
    def parsed_ref(self) -> Ref:
        """The reference, parsed once per config rather than once per evaluation."""
        return parse_ref(self.ref)


class ItemCondition(BaseModel):
    """A test on each item of a list (data_ops / list_ops filters): a field of the item vs a value."""

    model_config = ConfigDict(extra="forbid", title="Item condition")

    key: str = Field(
        "",
        title="Field",
        description="Dot path inside each item, e.g. 'score' or 'author.name'; empty tests the item itself.",
    )
    op: OperatorField = Field("==", title="Operator", description=_OPERATOR_DOC)
    value: Any = Field(
        None, title="Value", description="What to compare with; may be a template. Rendered once per run."
    )

    @cached_property
    def path(self) -> tuple[str, ...]:
        return tuple(self.key.split(".")) if self.key else ()


class ConditionScope(Protocol):
    """What condition evaluation needs from a node context (the loop passes a scope with aliases)."""

    def lookup(self, root: str) -> Any: ...

    def render(self, value: Any) -> Any: ...


def resolve_ref(ctx: ConditionScope, ref: str | Ref) -> Any:
    """The value a reference points at; None when its node did not run (pruned) or the path is missing."""
    if isinstance(ref, str):
        try:
            ref = parse_ref(ref)
        except TemplateError as exc:
            raise NodeError(str(exc), hint="write a reference as node.field", retryable=False) from exc
    try:
        root = ctx.lookup(ref.root)
    except KeyError:
        return None
    return get_path(root, ref.path)


def reference_text(ref: str) -> str:
    """A condition's `ref` as a template, so flow validation can check that its node is upstream."""
    return ref if "{" in ref else "{{" + ref + "}}"


def condition_reference_texts(conditions: Iterable[Condition]) -> list[Any]:
    """Everything in these conditions that may reference other nodes: the refs and the values."""
    texts: list[Any] = []
    for condition in conditions:
        texts.append(reference_text(condition.ref))
        texts.append(condition.value)
    return texts


def as_text(value: Any) -> str:
    """A value as text, the way templates print it: strings as-is, None as '', other data as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=str)


def to_number(value: Any) -> int | float | None:
    """The number a value stands for (numeric text included), or None; booleans are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def is_empty(value: Any) -> bool:
    """None, whitespace-only text and empty collections are empty; 0 and False are values."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple, dict, set)):
        return not value
    return False


def compare(left: Any, op: str, right: Any, *, case_sensitive: bool = False, subject: str = "value") -> bool:
    """Apply one operator; `subject` names what `left` came from in error messages."""
    if op == "empty":
        return is_empty(left)
    if op == "not_empty":
        return not is_empty(left)
    if op in _NUMERIC_OPERATORS:
        return _compare_numbers(left, op, right, subject)
    if op in ("==", "!="):
        return _equal(left, right, case_sensitive) == (op == "==")
    if op in ("contains", "not_contains"):
        return _contains(left, right, case_sensitive) == (op == "contains")
    if op in ("starts_with", "ends_with"):
        text, part = _fold(as_text(left), case_sensitive), _fold(as_text(right), case_sensitive)
        return text.startswith(part) if op == "starts_with" else text.endswith(part)
    raise NodeError(f"condition on {subject!r}: unknown operator {op!r}", retryable=False)


def combine(results: Iterable[bool], logic: str) -> bool:
    """and: every result holds; or: at least one does. Lazy, so later conditions may not be evaluated."""
    return all(results) if logic == "and" else any(results)


def evaluate(
    ctx: ConditionScope, conditions: Iterable[Condition], logic: str = "and", case_sensitive: bool = False
) -> bool:
    """Whether the conditions hold for this run. No conditions: True for 'and', False for 'or'."""
    return combine(
        (
            compare(
                resolve_ref(ctx, c.parsed_ref),
                c.op,
                ctx.render(c.value),
                case_sensitive=case_sensitive,
                subject=c.ref,
            )
            for c in conditions
        ),
        logic,
    )


def item_filter(
    ctx: ConditionScope, conditions: list[ItemCondition], logic: str, case_sensitive: bool
) -> Callable[[Any], bool]:
    """A predicate for list items; condition values are rendered once, not once per item."""
    values = [ctx.render(c.value) for c in conditions]

    def matches(item: Any) -> bool:
        return combine(
            (
                compare(
                    get_path(item, c.path),
                    c.op,
                    value,
                    case_sensitive=case_sensitive,
                    subject=f"item.{c.key}" if c.key else "item",
                )
                for c, value in zip(conditions, values, strict=True)
            ),
            logic,
        )

    return matches


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


def _equal(left: Any, right: Any, case_sensitive: bool) -> bool:
    """Equality as a form user means it: 'Bug' == 'bug', '5' == 5, 'true' == True, '' == None."""
    if isinstance(left, str) and isinstance(right, str):
        return _fold(left, case_sensitive) == _fold(right, case_sensitive)
    if isinstance(left, str) or isinstance(right, str):
        text, other = (left, right) if isinstance(left, str) else (right, left)
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return to_number(text) == other
        if other is None or isinstance(other, bool):
            return _fold(text.strip(), case_sensitive) == as_text(other)
        return False
    return bool(left == right)


def _contains(container: Any, part: Any, case_sensitive: bool) -> bool:
    """Substring for text, an equal item for lists, an equal key for objects; nothing is in None."""
    if container is None:
        return False
    if isinstance(container, Mapping):
        return any(_equal(key, part, case_sensitive) for key in container)
    if isinstance(container, (list, tuple, set)):
        return any(_equal(item, part, case_sensitive) for item in container)
    return _fold(as_text(part), case_sensitive) in _fold(as_text(container), case_sensitive)


def _compare_numbers(left: Any, op: str, right: Any, subject: str) -> bool:
    a = _operand_number(left, op, subject, "its value")
    b = _operand_number(right, op, subject, "the value to compare with")
    if op == ">":
        return a > b
    if op == "<":
        return a < b
    if op == ">=":
        return a >= b
    return a <= b


def _operand_number(value: Any, op: str, subject: str, side: str) -> int | float:
    number = to_number(value)
    if number is None:
        raise NodeError(
            f"condition on {subject!r}: {side} {preview(value)} is not a number, so {op!r} cannot compare it",
            hint="use > < >= <= on numbers (or numeric text); use == or contains for text",
            retryable=False,
        )
    return number


def preview(value: Any, limit: int = 60) -> str:
    """A short repr for error messages, so a huge value does not flood the run log."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
