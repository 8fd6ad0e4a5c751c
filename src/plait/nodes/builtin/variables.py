"""Flow variables and joins: `assign` (11 operators) and `merge` (first non-empty per group)."""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from plait.nodes.base import MultiInput, Node, NodeContext, NodeError
from plait.nodes.builtin._conditions import condition_reference_texts, is_empty, resolve_ref
from plait.nodes.registry import register

AssignOp = Literal[
    "overwrite", "clear", "set", "+=", "-=", "*=", "/=", "append", "extend", "remove_first", "remove_last"
]


class Assignment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    variable: str = Field(..., min_length=1, description="Flow variable name ({{vars.NAME}}).")
    op: AssignOp = Field("overwrite", description="overwrite/set replace the value; clear empties it.")
    value: Any = Field(None, description="Operand (may be a template).")


class AssignConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    assignments: list[Assignment] = Field(..., min_length=1)


def _empty_like(value: Any) -> Any:
    if isinstance(value, bool):
        return False
    for kind, empty in ((str, ""), (int, 0), (float, 0.0), (list, []), (dict, {})):
        if isinstance(value, kind):
            return empty
    return None


def apply_assignment(current: Any, op: str, operand: Any, variable: str) -> Any:
    if op in ("overwrite", "set"):
        return operand
    if op == "clear":
        return _empty_like(current)
    if op in ("+=", "-=", "*=", "/="):
        for side, v in (("variable", current), ("value", operand)):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise NodeError(
                    f"assign {variable!r} {op}: the {side} is {v!r}, not a number", retryable=False
                )
        if op == "+=":
            return current + operand
        if op == "-=":
            return current - operand
        if op == "*=":
            return current * operand
        if operand == 0:
            raise NodeError(f"assign {variable!r} /=: division by zero", retryable=False)
        return current / operand
    if not isinstance(current, list):
        raise NodeError(
            f"assign {variable!r} {op}: the variable is {type(current).__name__}, not a list",
            hint="initialise it as [] in the flow's variables",
            retryable=False,
        )
    if op == "append":
        return [*current, operand]
    if op == "extend":
        if not isinstance(operand, list):
            raise NodeError(f"assign {variable!r} extend: the value must be a list", retryable=False)
        return [*current, *operand]
    if op == "remove_first":
        return current[1:]
    return current[:-1]  # remove_last


@register
class AssignNode(Node):
    type_name = "assign"
    title = "Assign variables"
    description = (
        "Changes flow variables: overwrite, clear, set, += -= *= /=, append, extend, remove_first/last."
    )
    category = "data"
    Config = AssignConfig
    inline = True

    def execute(self, ctx: NodeContext) -> dict[str, Any]:
        changed: dict[str, Any] = {}
        for a in self.config.assignments:  # type: ignore[attr-defined]
            current = copy.deepcopy(ctx.vars.get(a.variable))
            new = apply_assignment(current, a.op, ctx.render(a.value), a.variable)
            ctx.set_var(a.variable, new)
            changed[a.variable] = new
        return changed


class MergeGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(..., min_length=1)
    refs: list[str] = Field(..., min_length=1, description="References tried in order, e.g. 'a.text'.")


class MergeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    groups: list[MergeGroup] = Field(
        default_factory=list, description="Without groups: the first non-empty input value."
    )


@register
class MergeNode(Node):
    type_name = "merge"
    title = "Merge"
    description = "Joins branches: the first non-empty value per group (or of the delivered inputs)."
    category = "logic"
    Config = MergeConfig
    inline = True

    @classmethod
    def reference_texts(cls, config: BaseModel) -> list[tuple[str, Any]]:
        from plait.nodes.builtin._conditions import Condition

        groups = config.groups  # type: ignore[attr-defined]
        return [("groups", condition_reference_texts([Condition(ref=r) for g in groups for r in g.refs]))]

    def execute(self, ctx: NodeContext) -> Any:
        groups = self.config.groups  # type: ignore[attr-defined]
        if groups:
            out = {}
            for g in groups:
                out[g.name] = next(
                    (v for v in (resolve_ref(ctx, r) for r in g.refs) if not is_empty(v)), None
                )
            return out
        value = ctx.input
        if isinstance(value, MultiInput):
            return next((v for v in value.values() if not is_empty(v)), None)
        return value
