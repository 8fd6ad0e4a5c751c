"""`flow`: run another (published) flow as a tool, through the run's sub-flow resolver."""

from __future__ import annotations

import re
from typing import Any

from plait.tools.base import Tool, ToolCallContext, ToolError

_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


async def _run(ctx: ToolCallContext, ref: str, inputs: Any) -> Any:
    run_flow = getattr(ctx, "run_flow", None)
    if run_flow is None:
        raise ToolError("flow tools need a run (they call the run's sub-flow resolver)", fatal=True)
    if not isinstance(inputs, dict):
        raise ToolError(f"the inputs of flow {ref!r} must be an object, got {type(inputs).__name__}")
    try:
        return await run_flow(ref, inputs)
    except ToolError:
        raise
    except Exception as exc:  # NodeError from the child run: its message says what failed
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        raise ToolError(f"flow {ref!r} failed: {message}", hint=getattr(exc, "hint", None)) from exc


def flow_tool(
    ref: str | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
) -> Tool:
    """A tool that runs a flow: without `ref`, the generic `flow` tool (the model names the flow);
    with `ref`, a tool for that flow whose arguments are the flow's inputs (`parameters` should be
    the flow's input schema)."""
    if ref is None:

        async def call_any(args: dict[str, Any], ctx: ToolCallContext) -> Any:
            target = args.get("flow")
            if not isinstance(target, str) or not target.strip():
                raise ToolError("flow must name a flow (its id)")
            return await _run(ctx, target.strip(), args.get("inputs") or {})

        return Tool(
            name=name or "flow",
            description=description
            or "Run another published flow by id with the given inputs; returns its outputs.",
            parameters={
                "type": "object",
                "properties": {
                    "flow": {"type": "string", "description": "The id of the flow to run."},
                    "inputs": {
                        "type": "object",
                        "description": "The flow's inputs.",
                        "additionalProperties": True,
                    },
                },
                "required": ["flow"],
            },
            call=call_any,
            source="flow",
        )

    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        return await _run(ctx, ref, dict(args))

    return Tool(
        name=name or _NAME.sub("_", f"flow_{ref}")[:64],
        description=description or f"Run the flow {ref!r} with these inputs; returns its outputs.",
        parameters=parameters or {"type": "object", "additionalProperties": True},
        call=call,
        source="flow",
    )
