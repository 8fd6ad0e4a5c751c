"""Flow variables and joins: `assign` (RAGFlow/Dify VariableAssigner, 11 operators) and `merge`
(VariableAggregator: the first non-empty value per group).

`assign` never mutates a variable's current value in place (lists are rebuilt), because the
engine's checkpoints and other readers may hold the same object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from plait.expr import Ref, parse_ref
from plait.nodes.base import MultiInput, Node, NodeContext, NodeError
from plait.nodes.builtin._conditions import (
    as_text,
    is_empty,
    preview,
    reference_text,
    resolve_ref,
    to_number,
)
from plait.spec.assign import AssignOperator

_OPERATORS_WITHOUT_VALUE = frozenset({"clear", "remove_first", "remove_last"})
_TRUE_TEXTS = frozenset({"true", "1", "yes", "on"})
_FALSE_TEXTS = frozenset({"false", "0", "no", "off"})


class Assignment(BaseModel):
    """One change to one flow variable."""

    model_config = ConfigDict(extra="forbid", title="Assignment")

    variable: str = Field(
        ...,
        min_length=1,
        title="Variable",
        description="Name of the flow variable (read elsewhere as {{vars.NAME}}); 'vars.NAME' is accepted.",
    )
    op: AssignOperator = Field(
        "overwrite",
        title="Operator",
        description="overwrite: replace with the value as it is; set: replace, converting the value to "
        "the variable's current type ('3' -> 3); clear: the empty value of its type (''/0/[]/{}); "
        "+= -= *= /=: arithmetic; append / extend: add one item / a list of items; "
        "remove_first / remove_last: drop an item.",
    )
    value: Any = Field(
        None,
        title="Value",
        description="The operand, e.g. 1 or '{{fetch.body.total}}' (a whole reference keeps its type). "
        "Not used by clear, remove_first and remove_last.",
    )

    @field_validator("variable")
    @classmethod
    def _plain_variable_name(cls, variable: str) -> str:
        name = variable.strip().lstrip("{").rstrip("}").strip()
        name = name.removeprefix("vars.")
        if not name or "." in name or "{" in name or "}" in name:
            raise ValueError(f"{variable!r} is not a variable name; write the name alone, e.g. 'counter'")
        return name

    @model_validator(mode="after")
    def _value_given_when_needed(self) -> Assignment:
        if self.op not in _OPERATORS_WITHOUT_VALUE and "value" not in self.model_fields_set:
            raise ValueError(f"assigning {self.variable!r} with {self.op!r} needs a value")
        return self


class AssignConfig(BaseModel):
    """Assignments run in order, so a later one sees the result of an earlier one."""

    model_config = ConfigDict(extra="forbid", title="Assign variables")

    assignments: list[Assignment] = Field(
        ..., min_length=1, title="Assignments", description="Changes applied in order."
    )


class AssignNode(Node[AssignConfig]):
    type_name = "assign"
    title = "Assign variables"
    description = (
        "Changes flow variables: overwrite, set, clear, += -= *= /=, append, extend, remove_first, "
        "remove_last. Outputs {variable: new value}."
    )
    category = "data"
    Config = AssignConfig
    inline = True

    def execute(self, ctx: NodeContext) -> dict[str, Any]:
        changed: dict[str, Any] = {}
        for assignment in self.config.assignments:
            current = ctx.vars.get(assignment.variable)
            operand = None if assignment.op in _OPERATORS_WITHOUT_VALUE else ctx.render(assignment.value)
            new_value = apply_assignment(assignment.variable, current, assignment.op, operand)
            ctx.set_var(assignment.variable, new_value)
            changed[assignment.variable] = new_value
        return changed


def apply_assignment(variable: str, current: Any, op: str, operand: Any) -> Any:
    """The new value of `variable`; raises NodeError naming the variable when the types do not fit."""
    if op == "overwrite":
        return operand
    if op == "set":
        return _converted_like(variable, current, operand)
    if op == "clear":
        return _empty_like(current)
    if op in _ARITHMETIC:
        return _arithmetic(variable, current, op, operand)
    return _list_operation(variable, current, op, operand)


def _empty_like(value: Any) -> Any:
    for kind, empty in ((bool, False), (str, ""), (int, 0), (float, 0.0), (list, []), (dict, {})):
        if isinstance(value, kind):
            return empty
    return None


def _converted_like(variable: str, current: Any, value: Any) -> Any:
    """`set` keeps the variable's type: text from a form becomes the number, flag or list it holds."""
    if current is None or value is None:
        return value
    if isinstance(current, str):
        return as_text(value)
    if isinstance(current, bool):
        if isinstance(value, bool):
            return value
        text = as_text(value).strip().lower()
        if text in _TRUE_TEXTS or text in _FALSE_TEXTS:
            return text in _TRUE_TEXTS
    elif isinstance(current, (int, float)):
        number = to_number(value)
        if number is not None:
            return number
    elif isinstance(current, (list, dict)):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        if isinstance(value, type(current)):
            return value
    else:
        return value
    raise NodeError(
        f"assign {variable!r} set: cannot convert {preview(value)} to the variable's type "
        f"({type(current).__name__})",
        hint="use 'overwrite' to change the variable's type",
        retryable=False,
    )


def _arithmetic(variable: str, current: Any, op: str, operand: Any) -> int | float:
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        raise NodeError(
            f"assign {variable!r} {op}: the variable holds {preview(current)}, not a number",
            hint=f"initialise {variable!r} to a number in the flow's variables",
            retryable=False,
        )
    number = to_number(operand)
    if number is None:
        raise NodeError(
            f"assign {variable!r} {op}: the value {preview(operand)} is not a number", retryable=False
        )
    if op == "/=" and number == 0:
        raise NodeError(f"assign {variable!r} /=: division by zero", retryable=False)
    return _ARITHMETIC[op](current, number)


_ARITHMETIC: dict[str, Callable[[float, float], float]] = {  # ints stay ints at run time
    "+=": lambda a, b: a + b,
    "-=": lambda a, b: a - b,
    "*=": lambda a, b: a * b,
    "/=": lambda a, b: a / b,
}


def _list_operation(variable: str, current: Any, op: str, operand: Any) -> list[Any]:
    if current is None and op in ("append", "extend"):
        current = []  # an unset variable starts as an empty list, as in RAGFlow
    if not isinstance(current, list):
        raise NodeError(
            f"assign {variable!r} {op}: the variable holds {preview(current)}, not a list",
            hint=f"initialise {variable!r} to [] in the flow's variables",
            retryable=False,
        )
    if op == "append":
        return [*current, operand]
    if op == "extend":
        if not isinstance(operand, list):
            raise NodeError(
                f"assign {variable!r} extend: the value {preview(operand)} is not a list",
                hint="use append to add a single item",
                retryable=False,
            )
        return [*current, *operand]
    if op == "remove_first":
        return current[1:]
    return current[:-1]  # remove_last


class MergeGroup(BaseModel):
    """One output key: the first non-empty value among its references."""

    model_config = ConfigDict(extra="forbid", title="Group")

    name: str = Field(..., min_length=1, title="Name", description="Output key, read as {{merge_id.NAME}}.")
    refs: list[str] = Field(
        ...,
        min_length=1,
        title="References",
        description="Tried in order, e.g. ['billing.content', 'general.content']; nodes on pruned "
        "branches read as empty.",
    )

    @field_validator("refs")
    @classmethod
    def _refs_are_references(cls, refs: list[str]) -> list[str]:
        for ref in refs:
            parse_ref(ref)  # TemplateError is a ValueError: pydantic reports it on this field
        return refs

    @cached_property
    def parsed_refs(self) -> tuple[Ref, ...]:
        return tuple(parse_ref(ref) for ref in self.refs)


class MergeConfig(BaseModel):
    """Joins branches. Without groups the output is the first non-empty value delivered on `in`."""

    model_config = ConfigDict(extra="forbid", title="Merge")

    groups: list[MergeGroup] = Field(
        default_factory=list,
        title="Groups",
        description="Each group becomes one output key. Leave empty to output the first non-empty "
        "input instead.",
    )

    @field_validator("groups")
    @classmethod
    def _group_names_are_unique(cls, groups: list[MergeGroup]) -> list[MergeGroup]:
        names = [group.name for group in groups]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"group names must be unique: {', '.join(duplicates)}")
        return groups


class MergeNode(Node[MergeConfig]):
    type_name = "merge"
    title = "Merge"
    description = "Joins branches: the first non-empty value per group, or of the delivered inputs."
    category = "logic"
    Config = MergeConfig
    inline = True

    @classmethod
    def reference_texts(cls, config: MergeConfig) -> list[tuple[str, Any]]:
        groups: list[MergeGroup] = config.groups
        return [("groups", [[reference_text(ref) for ref in group.refs] for group in groups])]

    def execute(self, ctx: NodeContext) -> Any:
        groups: list[MergeGroup] = self.config.groups
        if groups:
            return {
                group.name: _first_non_empty(resolve_ref(ctx, ref) for ref in group.parsed_refs)
                for group in groups
            }
        # Relies on the engine's contract: several edges into `in` arrive as a MultiInput
        # {source_node_id: value} in edge order; pruned branches deliver nothing. A single
        # delivered value (even a dict) is the value itself.
        delivered = ctx.input
        if isinstance(delivered, MultiInput):
            return _first_non_empty(delivered.values())
        return None if is_empty(delivered) else delivered


def _first_non_empty(values: Any) -> Any:
    return next((value for value in values if not is_empty(value)), None)
