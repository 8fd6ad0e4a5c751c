"""Branching nodes: `if` and `switch` fire exactly one output port; the others are pruned."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from plait.nodes.base import Node, NodeContext, NodeResult
from plait.nodes.builtin._conditions import Condition, condition_reference_texts, evaluate
from plait.nodes.registry import register


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]+$", description="Port name (default case_N).")
    when: list[Condition] = Field(..., min_length=1)
    logic: Literal["and", "or"] = "and"


class SwitchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cases: list[Case] = Field(..., min_length=1, description="Checked in order; the first match fires.")
    case_sensitive: bool = Field(False, description="Compare strings case-sensitively.")

    @model_validator(mode="after")
    def _unique_ports(self) -> SwitchConfig:
        ports = self.ports()
        if len(set(ports)) != len(ports):
            raise ValueError("case names must be unique and differ from 'else'")
        return self

    def ports(self) -> list[str]:
        return [c.name or f"case_{i}" for i, c in enumerate(self.cases, 1)] + ["else"]


@register
class SwitchNode(Node):
    type_name = "switch"
    title = "Switch"
    description = "Routes to the first case whose conditions hold, else to 'else'."
    category = "logic"
    Config = SwitchConfig
    inline = True

    @classmethod
    def output_ports(cls, config: BaseModel) -> list[str]:
        return config.ports()  # type: ignore[attr-defined]

    @classmethod
    def reference_texts(cls, config: BaseModel) -> list[tuple[str, Any]]:
        cfg: SwitchConfig = config  # type: ignore[assignment]
        return [("cases", [condition_reference_texts(c.when) + [w.value for w in c.when] for c in cfg.cases])]

    def execute(self, ctx: NodeContext) -> NodeResult:
        cfg: SwitchConfig = self.config  # type: ignore[assignment]
        ports = cfg.ports()
        for port, case in zip(ports, cfg.cases, strict=False):
            if evaluate(ctx, case.when, case.logic, cfg.case_sensitive):
                return NodeResult({"case": port, "value": ctx.input}, ports=(port,))
        return NodeResult({"case": "else", "value": ctx.input}, ports=("else",))


class IfConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    when: list[Condition] = Field(..., min_length=1)
    logic: Literal["and", "or"] = "and"
    case_sensitive: bool = False


@register
class IfNode(Node):
    type_name = "if"
    title = "If"
    description = "Fires 'true' when the conditions hold, else 'false'."
    category = "logic"
    Config = IfConfig
    inline = True

    @classmethod
    def output_ports(cls, config: BaseModel) -> list[str]:
        return ["true", "false"]

    @classmethod
    def reference_texts(cls, config: BaseModel) -> list[tuple[str, Any]]:
        cfg: IfConfig = config  # type: ignore[assignment]
        return [("when", condition_reference_texts(cfg.when) + [w.value for w in cfg.when])]

    def execute(self, ctx: NodeContext) -> NodeResult:
        cfg: IfConfig = self.config  # type: ignore[assignment]
        port = "true" if evaluate(ctx, cfg.when, cfg.logic, cfg.case_sensitive) else "false"
        return NodeResult({"result": port == "true", "value": ctx.input}, ports=(port,))
