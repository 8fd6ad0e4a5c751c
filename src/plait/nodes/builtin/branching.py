"""Branching nodes: `switch` and `if` fire exactly one output port; the engine prunes the others.

Both pass their input through under `value`, so a branch can use what the router saw without
reaching back to the node before it, and say which branch was taken (`case` / `result`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from plait.nodes.base import Node, NodeContext, NodeResult
from plait.nodes.builtin._conditions import (
    CASE_SENSITIVE_DESCRIPTION,
    LOGIC_DESCRIPTION,
    Condition,
    Logic,
    condition_reference_texts,
    evaluate,
)

ELSE_PORT = "else"

_WHEN_DOC = "Conditions on upstream values; combined with `logic`."


class SwitchCase(BaseModel):
    """One branch of a switch: its own output port, taken when its conditions hold."""

    model_config = ConfigDict(extra="forbid", title="Case")

    name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_\-]+$",
        title="Port name",
        description="Name of this case's output port; default case_1, case_2... by position.",
    )
    when: list[Condition] = Field(..., min_length=1, title="When", description=_WHEN_DOC)
    logic: Logic = Field("and", title="Logic", description=LOGIC_DESCRIPTION)


class SwitchConfig(BaseModel):
    """Cases are tried in order; the first whose conditions hold fires its port, else 'else' fires."""

    model_config = ConfigDict(extra="forbid", title="Switch")

    cases: list[SwitchCase] = Field(
        ..., min_length=1, title="Cases", description="Tried in order; only the first match fires."
    )
    case_sensitive: bool = Field(False, title="Case-sensitive", description=CASE_SENSITIVE_DESCRIPTION)

    @model_validator(mode="after")
    def _port_names_are_unique(self) -> SwitchConfig:
        seen: set[str] = set()
        for port in self.port_names():
            if port in seen:
                raise ValueError(
                    f"two cases use the port name {port!r}; case names must be unique and not 'else' "
                    "(unnamed cases are called case_1, case_2... by position)"
                )
            seen.add(port)
        return self

    def port_names(self) -> list[str]:
        """One port per case, in order, then 'else'."""
        return [case.name or f"case_{i}" for i, case in enumerate(self.cases, 1)] + [ELSE_PORT]


class SwitchNode(Node[SwitchConfig]):
    type_name = "switch"
    title = "Switch"
    description = "Routes to the first case whose conditions hold (12 operators, and/or), else to 'else'."
    category = "logic"
    Config = SwitchConfig
    inline = True

    @classmethod
    def output_ports(cls, config: SwitchConfig) -> list[str]:
        return config.port_names()

    @classmethod
    def reference_texts(cls, config: SwitchConfig) -> list[tuple[str, Any]]:
        cases: list[SwitchCase] = config.cases
        return [("cases", [condition_reference_texts(case.when) for case in cases])]

    def execute(self, ctx: NodeContext) -> NodeResult:
        config = self.config
        port = ELSE_PORT
        for case_port, case in zip(config.port_names(), config.cases, strict=False):
            if evaluate(ctx, case.when, case.logic, config.case_sensitive):
                port = case_port
                break
        return NodeResult(output={"case": port, "value": ctx.input}, ports=(port,))


class IfConfig(BaseModel):
    """Fires 'true' when the conditions hold, otherwise 'false'."""

    model_config = ConfigDict(extra="forbid", title="If")

    when: list[Condition] = Field(..., min_length=1, title="When", description=_WHEN_DOC)
    logic: Logic = Field("and", title="Logic", description=LOGIC_DESCRIPTION)
    case_sensitive: bool = Field(False, title="Case-sensitive", description=CASE_SENSITIVE_DESCRIPTION)


class IfNode(Node[IfConfig]):
    type_name = "if"
    title = "If"
    description = "Fires 'true' when its conditions hold, else 'false'."
    category = "logic"
    Config = IfConfig
    inline = True

    @classmethod
    def output_ports(cls, config: IfConfig) -> list[str]:
        return ["true", "false"]

    @classmethod
    def reference_texts(cls, config: IfConfig) -> list[tuple[str, Any]]:
        return [("when", condition_reference_texts(config.when))]

    def execute(self, ctx: NodeContext) -> NodeResult:
        config = self.config
        holds = evaluate(ctx, config.when, config.logic, config.case_sensitive)
        return NodeResult(output={"result": holds, "value": ctx.input}, ports=("true" if holds else "false",))
