"""Entry and exit nodes: start, output, message."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from plait.nodes.base import Node, NodeContext


class StartConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trigger: Literal["manual", "chat", "webhook", "schedule"] = Field(
        "manual", description="How runs of this flow begin (informational for the engine)."
    )
    prologue: str | None = Field(None, description="Greeting shown by chat front ends.")
    schedule: str | None = Field(None, description="Cron expression when trigger is 'schedule'.")


class StartNode(Node[StartConfig]):
    type_name = "start"
    title = "Start"
    description = "Entry point: outputs the run inputs (validated against the flow's input schema)."
    category = "triggers"
    Config = StartConfig
    input_ports = ()
    inline = True

    def execute(self, ctx: NodeContext) -> Any:
        return ctx.lookup("inputs")


class OutputConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(None, description="Key of this value in the run outputs (default: node id).")
    value: Any = Field(None, description="Template or reference; default: the value on the input port.")


class OutputNode(Node[OutputConfig]):
    type_name = "output"
    title = "Output"
    description = "Adds a value to the run's outputs."
    category = "outputs"
    Config = OutputConfig
    inline = True
    is_output = True

    def execute(self, ctx: NodeContext) -> Any:
        value = self.config.value
        return ctx.input if value is None else ctx.render(value)


class MessageConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(None, description="Key of the message in the run outputs (default: node id).")
    text: str = Field(..., description="Message template, e.g. 'Hello {{inputs.name}}'.")


class MessageNode(Node[MessageConfig]):
    type_name = "message"
    title = "Message"
    description = "Renders a message for the user; its content becomes a run output."
    category = "outputs"
    Config = MessageConfig
    inline = True
    is_output = True

    def execute(self, ctx: NodeContext) -> Any:
        text = ctx.render(self.config.text)
        return {"content": text if isinstance(text, str) else _as_text(text)}

    def flow_output(self, output: Any) -> Any:
        return output["content"]


def _as_text(value: Any) -> str:
    import json

    return "" if value is None else json.dumps(value, ensure_ascii=False)
