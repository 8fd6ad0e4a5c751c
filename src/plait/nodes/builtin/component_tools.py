"""Registered components as agent tools: `tools: ["component:RandomMenuItem"]` on an agent.

A component becomes a tool without anything special in its code. Its description is the tool's
description. Its inputs are the tool's arguments (a JSON Schema built from the declared types).
Its outputs are the tool's result. A call runs the component in the sandbox, as the `component`
node does. The description and the arguments come from introspecting the real class in the
sandbox, once per agent execution. The stored spec is not used, so the agent sees what the code
declares now.

The tool's name follows the assistant's guardrail (spec B85). A plait component has one generic
entry point, `run`, so the method says nothing about what the tool does; the tool is named after
the class instead, snake_cased with acronyms kept together: RandomMenuItem -> random_menu_item,
HTTPClient -> http_client, S3Bucket -> s3_bucket. There is no synthetic tool output to skip (spec
B86): plait has none. A component becomes a tool by being named in `tools`, and the output name
Langflow reserves for it (`component_as_tool`) is refused at validation.
"""

from __future__ import annotations

import re
from typing import Any

from plait.nodes.base import NodeContext
from plait.nodes.builtin.component import lookup
from plait.sandbox import Limits, default_pool
from plait.sandbox.components import run_component, validate_component
from plait.tools.base import Tool, ToolError

COMPONENT_PREFIX = "component:"
TOOL_LIMITS = Limits(timeout_s=10.0, memory_mb=256)

_ACRONYM_END = re.compile(r"([A-Z]+)([A-Z][a-z])")  # HTTPClient -> HTTP_Client
_WORD_START = re.compile(r"([a-z0-9])([A-Z])")  # menuItem -> menu_Item, S3Bucket -> S3_Bucket
_JSON_TYPES = {"string", "number", "integer", "boolean", "object", "array"}


def is_component_ref(ref: str) -> bool:
    return ref.startswith(COMPONENT_PREFIX)


def tool_name(class_name: str) -> str:
    """The tool name of a component class: snake_case, acronyms kept together (spec B85)."""
    name = _ACRONYM_END.sub(r"\1_\2", class_name)
    name = _WORD_START.sub(r"\1_\2", name)
    return re.sub(r"_+", "_", name).strip("_").lower()


def input_schema(inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of a component's inputs (the SDK's types map one to one; `any` is open)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for spec in inputs:
        prop: dict[str, Any] = {}
        if spec.get("type") in _JSON_TYPES:
            prop["type"] = spec["type"]
        if spec.get("description"):
            prop["description"] = spec["description"]
        if not spec.get("required", True) and spec.get("default") is not None:
            prop["default"] = spec["default"]
        properties[spec["name"]] = prop
        if spec.get("required", True):
            required.append(spec["name"])
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


async def component_tool(ctx: NodeContext, ref: str) -> Tool:
    """The tool for `component:<Name>`; ToolError (fatal) when the run cannot offer it."""
    name = ref[len(COMPONENT_PREFIX) :]
    source = getattr(ctx.services, "component_source", None)
    if source is None:
        raise ToolError(
            f"{ref}: custom components are not available in this run",
            hint="run the flow on the plait server, or pass a component source to plait.run",
            fatal=True,
        )
    found = await lookup(name, run_id=ctx.run_id, source=source)
    if found is None:
        raise ToolError(
            f"{ref}: no component named {name!r} is registered",
            hint="register it (POST /api/v1/components, or ask the assistant) or fix the name",
            fatal=True,
        )
    code, class_name = found
    described = await validate_component(code, class_name)
    if not described.valid:
        raise ToolError(f"{ref}: the component does not load: {described.error}", fatal=True)

    async def call(args: dict[str, Any], _ctx: Any) -> Any:
        outcome = await run_component(code, class_name, args, pool=default_pool(), limits=TOOL_LIMITS)
        if not outcome.ok:
            raise ToolError(f"{class_name} failed: {outcome.error}")
        return outcome.outputs

    description = described.description or described.display_name or f"The {class_name} component."
    return Tool(
        tool_name(class_name),
        description,
        input_schema(described.inputs),
        call,
        source="component",
    )
