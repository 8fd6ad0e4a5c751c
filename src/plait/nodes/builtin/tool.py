"""`tool`: one deterministic tool call, the upstream value mapped to a chosen parameter."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from plait.nodes.base import Node, NodeContext, NodeError
from plait.tools.base import ToolError
from plait.tools.select import resolve_tool


class ToolConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(
        min_length=1,
        title="Tool",
        description="A built-in or registered tool (e.g. web_search), or mcp:<server>/<tool>.",
    )
    input_param: str | None = Field(
        None,
        title="Input parameter",
        description="The parameter that receives the upstream value (the node's input); empty: none.",
    )
    args: dict[str, Any] = Field(
        default_factory=dict,
        title="Arguments",
        description="Fixed or templated arguments ({{node.port}} references), merged under the input.",
    )


class ToolNode(Node[ToolConfig]):
    type_name = "tool"
    title = "Tool"
    description = "Calls one tool (built-in, MCP or flow) with the upstream value as one parameter."
    category = "tools"
    Config = ToolConfig

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        args = await ctx.arender(cfg.args)
        if not isinstance(args, dict):
            raise NodeError("args must render to an object", retryable=False)
        if cfg.input_param:
            args[cfg.input_param] = ctx.input
        try:
            tool = await resolve_tool(ctx, cfg.tool)
        except ToolError as exc:
            raise NodeError(f"tool {cfg.tool!r}: {exc.message}", hint=exc.hint, retryable=False) from exc
        missing = [p for p in tool.parameters.get("required", []) if p not in args]
        if missing:
            raise NodeError(
                f"tool {cfg.tool!r} needs the parameter(s) {', '.join(missing)}",
                hint="set them in args or choose input_param",
                retryable=False,
            )
        ctx.emit_tool_call(tool.name, args)
        try:
            return await tool.call(args, ctx)
        except ToolError as exc:
            raise NodeError(
                f"tool {cfg.tool!r} failed: {exc.message}", hint=exc.hint, retryable=exc.fatal
            ) from exc
