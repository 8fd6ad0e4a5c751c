"""Every published flow the caller may run, as an MCP tool of its own.

    flow_support-triage      "Support triage: routes a message ... (plait flow support-triage, v3)"
                             input schema: the flow's `inputs` JSON Schema

A tool's name comes from the flow id: `flow_` then the id with every character outside
`[A-Za-z0-9_-]` made `_`, at most 64 characters (what the strictest clients accept). When two
flows would get the same name, both get a short hash of their id instead of the tail, so a name
never depends on which other flows exist in what order.

The caller's tools are the published flows they may run: the `run` scope and edit access to the
flow (a flow shared with them as a viewer is not runnable, as over REST). Calling one runs its
latest published version with the arguments as the run's inputs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from plait.assistant import flow_io
from plait.service import Services
from plait.service.access import Principal, Scope

PREFIX = "flow_"
MAX_NAME = 64
RUNNABLE_ACCESS = frozenset({"owner", "admin", "editor"})
MAX_FLOW_TOOLS = 200
EMPTY_INPUTS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class FlowTool:
    """A published flow as a tool: its name, the flow and version, what it says and takes."""

    name: str
    flow_id: str
    version: int
    title: str
    description: str
    input_schema: dict[str, Any]


def base_name(flow_id: str) -> str:
    return (PREFIX + re.sub(r"[^A-Za-z0-9_-]", "_", flow_id))[:MAX_NAME]


def tool_names(flow_ids: list[str], reserved: frozenset[str] = frozenset()) -> dict[str, str]:
    """{flow id: tool name}: unique, stable, never one of `reserved` (the server's own tools)."""
    bases = {fid: base_name(fid) for fid in flow_ids}
    counts: dict[str, int] = {}
    for name in bases.values():
        counts[name] = counts.get(name, 0) + 1
    names = {}
    for fid, name in bases.items():
        if counts[name] > 1 or name in reserved:
            digest = hashlib.sha256(fid.encode()).hexdigest()[:8]
            name = f"{name[: MAX_NAME - 9]}_{digest}"
        names[fid] = name
    return names


def input_schema(document: dict[str, Any]) -> dict[str, Any]:
    """The flow's inputs JSON Schema as a tool's input schema (which must be an object); for a
    flow without one, the `inputs.<field>` its nodes reference, as optional fields."""
    schema = document.get("inputs")
    if isinstance(schema, dict) and schema.get("type") == "object":
        return dict(schema)
    if isinstance(schema, dict) and schema.get("properties") and "type" not in schema:
        return {**schema, "type": "object"}
    referenced = [f["name"] for f in flow_io.run_inputs(document)]
    return {**EMPTY_INPUTS, "properties": {name: {} for name in referenced}}


def describe(summary: dict[str, Any], version: int, document: dict[str, Any]) -> str:
    name = summary.get("name") or summary["id"]
    about = (summary.get("description") or document.get("description") or "").strip()
    text = f"{name}: {about}" if about else f"Run the flow {name!r}."
    return f"{text} (plait flow {summary['id']}, version {version}; returns the run's outputs)"


async def published_tools(services: Services, who: Principal, reserved: frozenset[str]) -> list[FlowTool]:
    """The caller's runnable published flows as tools, by name."""
    if Scope.RUN not in who.scopes or Scope.READ not in who.scopes:
        return []
    summaries = [
        s
        for s in await services.flows.list(who, limit=MAX_FLOW_TOOLS)
        if s.get("latest_version") and s.get("access") in RUNNABLE_ACCESS
    ]
    names = tool_names([s["id"] for s in summaries], reserved)
    tools = []
    for summary in summaries:
        version = int(summary["latest_version"])
        document = (await services.flows.get_version(summary["id"], version))["document"]
        tools.append(
            FlowTool(
                names[summary["id"]],
                summary["id"],
                version,
                str(summary.get("name") or summary["id"]),
                describe(summary, version, document),
                input_schema(document),
            )
        )
    return sorted(tools, key=lambda t: t.name)


__all__ = ["PREFIX", "FlowTool", "base_name", "input_schema", "published_tools", "tool_names"]
