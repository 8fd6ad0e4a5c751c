"""plait as an MCP server (the official `mcp` SDK's low-level `Server`): the flow-builder toolkit on
stored flows, the flow library, and every published flow as a tool of its own.

    server = build_server(services, caller)          # caller: the request context -> Principal
    await server.run(read, write, server.create_initialization_options())   # stdio (plait.mcp.stdio)
    # or served over streamable HTTP at /mcp (plait.mcp.http)

Tools (each answers a JSON object, `{"error": ...}` with `isError` when refused):

- `list_flows(query?)`, `create_flow(name, description?)`, `publish_flow(flow_id, note?)`,
  `run_flow(flow_id, inputs?, version?)` (the latest published version, else the draft);
- the toolkit of the assistant on a stored flow (`flow_id`): `get_field_value`,
  `describe_flow_io`, `add_component`, `remove_component`, `connect_components`,
  `configure_component`, `build_flow` (an empty flow only); and, needing no flow,
  `search_components`, `describe_component`;
- `flow_<id>` for each published flow the caller may run (`plait.mcp.published`).

Left out of the toolkit: `propose_field_edit` and `propose_plan` (proposals wait for a person's
review in the assistant panel; an MCP client changes the flow directly), `generate_component`
(it needs the assistant's model; an MCP client has its own model and can save a component through
the REST API), and the file tools (an MCP client has its own files).

The low-level server (not `MCPServer`) because the tool list depends on who asks: it is computed
per `tools/list` from the caller's flows. Every call is tracked (`plait.mcp.tracking`, spec B89).
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from mcp.server import Server, ServerRequestContext

import plait
from plait.assistant.toolkit import TOOL_DEFINITIONS
from plait.errors import PlaitError
from plait.mcp.flow_tools import CATALOG_TOOLS, EDIT_TOOLS, READ_TOOLS, FlowTools
from plait.mcp.published import FlowTool, published_tools
from plait.mcp.tracking import FLOW_TOOL_LABEL, track
from plait.service import Services
from plait.service.access import Principal
from plait.service.errors import NotFound, reply_for

log = logging.getLogger("plait.mcp")

Caller = Callable[[ServerRequestContext[Any, Any]], Awaitable[Principal]]

INSTRUCTIONS = (
    "plait builds and runs AI agent flows. To make a flow: create_flow(name), then "
    "search_components / describe_component to find node types, then build_flow(flow_id, spec) "
    "with the compact spec, run_flow(flow_id, inputs) to try it, publish_flow(flow_id) to publish "
    "it. Published flows are tools of their own (flow_<id>). list_flows shows your flows."
)
_STR = {"type": "string"}
_FLOW_ID = {"type": "string", "description": "The id of a stored flow (list_flows shows them)."}

OWN_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "list_flows": (
        "The flows you can see: id, name, published version, your access, and an ASCII drawing "
        "of each draft. query: words that must all occur in the id, name or description.",
        {"type": "object", "properties": {"query": _STR}},
    ),
    "create_flow": (
        "Create an empty flow you own; returns its id (derived from the name). Then build it "
        "with build_flow.",
        {
            "type": "object",
            "properties": {"name": _STR, "description": _STR},
            "required": ["name"],
        },
    ),
    "publish_flow": (
        "Publish the flow's draft as a new version (the draft must have no problems). A "
        "published flow becomes a tool of its own.",
        {
            "type": "object",
            "properties": {"flow_id": _FLOW_ID, "note": _STR},
            "required": ["flow_id"],
        },
    ),
    "run_flow": (
        "Run a flow for real (persisted in plait's run history) and return its outputs with "
        "duration and token counts. Runs the latest published version, or the draft when there "
        "is none; version: a number, latest or draft. inputs: the run's input fields as an "
        "object, or one text for a flow with a single input.",
        {
            "type": "object",
            "properties": {
                "flow_id": _FLOW_ID,
                "inputs": {"description": "An object of run inputs, or a text for the only input."},
                "version": {"type": ["string", "integer"], "description": "N, latest or draft."},
            },
            "required": ["flow_id"],
        },
    ),
}


def toolkit_definition(name: str) -> tuple[str, dict[str, Any]]:
    """A toolkit tool as an MCP tool: on a stored flow (`flow_id`) unless it is a catalog tool."""
    description, schema = copy.deepcopy(TOOL_DEFINITIONS[name])
    if name in CATALOG_TOOLS:
        return description, schema
    schema["properties"] = {"flow_id": _FLOW_ID, **schema.get("properties", {})}
    schema["required"] = ["flow_id", *schema.get("required", [])]
    if name in EDIT_TOOLS:
        description += " Works on the stored flow flow_id: a change is saved to its draft at once."
    description = description.replace("the working flow", "the flow").replace("the canvas", "the flow")
    return description, schema


TOOLKIT_TOOLS = (*CATALOG_TOOLS, *READ_TOOLS, *EDIT_TOOLS)
DEFINITIONS: dict[str, tuple[str, dict[str, Any]]] = {
    **OWN_TOOLS,
    **{name: toolkit_definition(name) for name in TOOLKIT_TOOLS},
}
RESERVED = frozenset(DEFINITIONS)
# Hints for clients (which may ask before calling a tool that changes something).
READ_ONLY = frozenset({"list_flows", *CATALOG_TOOLS, *READ_TOOLS})
DESTRUCTIVE = frozenset({"remove_component"})


def tool_annotations(name: str) -> types.ToolAnnotations:
    if name in READ_ONLY:
        return types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return types.ToolAnnotations(
        read_only_hint=False, destructive_hint=name in DESTRUCTIVE, open_world_hint=name == "run_flow"
    )


_VALIDATORS = {name: Draft202012Validator(schema) for name, (_, schema) in DEFINITIONS.items()}


def arguments_error(name: str, arguments: Mapping[str, Any]) -> str | None:
    """What is wrong with a call's arguments (the first problem), or None."""
    errors = sorted(_VALIDATORS[name].iter_errors(dict(arguments)), key=lambda e: list(e.path))
    if not errors:
        return None
    where = ".".join(str(p) for p in errors[0].path)
    return f"invalid arguments for {name}{f' ({where})' if where else ''}: {errors[0].message}"


def static_input_schema(name: str) -> dict[str, Any] | None:
    """The input schema of one of the server's own tools (None for a published flow's tool: the
    run checks its inputs)."""
    definition = DEFINITIONS.get(name)
    return copy.deepcopy(definition[1]) if definition is not None else None


def error_result(exc: PlaitError) -> dict[str, Any]:
    reply = reply_for(exc)
    if reply is None:
        return {"error": str(exc), "code": exc.code}
    out: dict[str, Any] = {"error": reply.message, "code": reply.code}
    if reply.details:
        out["details"] = reply.details
    if exc.hint:
        out["hint"] = exc.hint
    return out


def call_result(result: dict[str, Any]) -> types.CallToolResult:
    data = json.loads(json.dumps(result, default=str))  # datetimes and the like as text
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
        is_error="error" in data,
    )


class PlaitMCP:
    """The tools of one plait deployment, for whoever `caller` says is asking."""

    def __init__(self, services: Services, caller: Caller, *, tools: FlowTools | None = None) -> None:
        self.services = services
        self.caller = caller
        self.tools = tools or FlowTools(services)
        self.server: Server[Any] = Server(
            "plait",
            version=plait.__version__,
            title="plait",
            description="Build, publish and run plait flows.",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            # What the HTTP transport checks a call's Mcp-Param-* headers against; without it, it
            # would run tools/list (the caller's flows, from the database) before every call.
            get_tool_input_schema=static_input_schema,
        )

    # ------------------------------------------------------------------------------- handlers
    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        who = await self.caller(ctx)
        tools = [
            types.Tool(
                name=name,
                description=description,
                input_schema=copy.deepcopy(schema),
                annotations=tool_annotations(name),
            )
            for name, (description, schema) in DEFINITIONS.items()
        ]
        for flow in await published_tools(self.services, who, RESERVED):
            tools.append(
                types.Tool(
                    name=flow.name,
                    description=flow.description,
                    input_schema=flow.input_schema,
                    annotations=types.ToolAnnotations(
                        title=flow.title, read_only_hint=False, open_world_hint=True
                    ),
                )
            )
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        who = await self.caller(ctx)
        name, arguments = params.name, dict(params.arguments or {})
        label = name if name in DEFINITIONS else FLOW_TOOL_LABEL
        async with track(name, label=label, user_id=who.user_id) as call:
            try:
                result = await self.dispatch(who, name, arguments)
            except PlaitError as exc:
                result = error_result(exc)
            except Exception as exc:
                log.exception("mcp.tool name=%s failed", name)
                result = {"error": f"internal error ({type(exc).__name__}); the server log has the details"}
            if "error" in result:
                call.failed = True
                call.error_type = str(result.get("code") or "tool_error")
            return call_result(result)

    # ------------------------------------------------------------------------------- dispatch
    async def dispatch(self, who: Principal, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool call as the caller `who`: the result, or a PlaitError."""
        if name not in DEFINITIONS:
            flow = await self._flow_tool(who, name)
            return await self.tools.run_version(who, flow.flow_id, flow.version, arguments)
        problem = arguments_error(name, arguments)
        if problem:
            return {"error": problem}
        if name == "list_flows":
            return await self.tools.list_flows(who, arguments.get("query"))
        if name == "create_flow":
            return await self.tools.create_flow(who, arguments["name"], arguments.get("description"))
        if name == "publish_flow":
            return await self.tools.publish_flow(who, arguments["flow_id"], arguments.get("note"))
        if name == "run_flow":
            return await self.tools.run_flow(
                who, arguments["flow_id"], arguments.get("inputs"), arguments.get("version")
            )
        if name in CATALOG_TOOLS:
            return await self.tools.catalog_tool(who, name, arguments)
        return await self.tools.flow_tool(who, name, arguments)

    async def _flow_tool(self, who: Principal, name: str) -> FlowTool:
        for flow in await published_tools(self.services, who, RESERVED):
            if flow.name == name:
                return flow
        raise NotFound(f"no tool {name!r}", hint="tools/list shows the tools you may call")


def build_server(services: Services, caller: Caller) -> Server[Any]:
    return PlaitMCP(services, caller).server


__all__ = ["DEFINITIONS", "INSTRUCTIONS", "Caller", "PlaitMCP", "build_server", "call_result"]
