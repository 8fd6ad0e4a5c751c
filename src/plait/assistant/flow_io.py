"""What a flow takes and gives: its inputs, outputs and tools, read from the wiring (spec M-S82).

The flow builder calls `describe_flow_io` before running a flow it did not build, to know what to
pass as the run's inputs and where the answer comes out. The answer is read from the document's
structure only, never guessed from node names, and is the same for the same document:

- inputs: the entry nodes (no incoming edge or `requires`), and the run-input fields: those of
  the flow's `inputs` JSON Schema, else the `inputs.<field>` its nodes reference;
- outputs: `output` and `message` nodes (under the key their run output has) and every other node
  no edge leaves;
- tools: what the flow's agents may call (`tools`, flows as tools, sub-agents) and `tool` nodes.

Linear in the size of the flow (one pass over nodes, one over edges), so a 500-node flow is fine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_INPUT_REF = re.compile(r"\binputs\.([A-Za-z_]\w*)")
OUTPUT_TYPES = frozenset({"output", "message"})


def _referenced_inputs(nodes: list[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for node in nodes:
        config = node.get("config")
        if not config:
            continue
        for name in _INPUT_REF.findall(json.dumps(config, default=str)):
            seen.setdefault(name, None)
    return list(seen)


def run_inputs(flow: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The fields a run of the flow takes: [{name, type?, required, description?}]."""
    schema = flow.get("inputs")
    nodes = [n for n in flow.get("nodes") or () if isinstance(n, Mapping)]
    if isinstance(schema, Mapping) and isinstance(schema.get("properties"), Mapping):
        required = set(schema.get("required") or ())
        out = []
        for name, prop in schema["properties"].items():
            entry: dict[str, Any] = {"name": name, "required": name in required}
            if isinstance(prop, Mapping):
                for key in ("type", "description", "default"):
                    if key in prop:
                        entry[key] = prop[key]
            out.append(entry)
        return out
    return [{"name": name, "required": False} for name in _referenced_inputs(nodes)]


def describe_flow_io(flow: Mapping[str, Any]) -> dict[str, Any]:
    """{inputs, run_inputs, outputs, tools, text}: see the module docstring."""
    nodes = [n for n in flow.get("nodes") or () if isinstance(n, Mapping)]
    incoming: set[str] = set()
    outgoing: set[str] = set()
    for edge in flow.get("edges") or ():
        if isinstance(edge, Mapping):
            outgoing.add(str(edge.get("source", "")).lower())
            incoming.add(str(edge.get("target", "")).lower())
    for node in nodes:
        for req in node.get("requires") or ():
            outgoing.add(str(req).lower())
            incoming.add(str(node.get("id", "")).lower())

    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    for node in nodes:
        node_id = str(node.get("id", ""))
        key = node_id.lower()
        node_type = str(node.get("type", ""))
        config = node.get("config") if isinstance(node.get("config"), Mapping) else {}
        assert isinstance(config, Mapping)
        if key not in incoming:
            inputs.append({"id": node_id, "type": node_type})
        if node_type in OUTPUT_TYPES:
            outputs.append({"id": node_id, "type": node_type, "key": str(config.get("name") or node_id)})
        elif key not in outgoing:
            outputs.append({"id": node_id, "type": node_type})
        if node_type == "agent":
            for ref in config.get("tools") or ():
                tools.append({"id": node_id, "tool": str(ref)})
            for flow_tool in config.get("flows") or ():
                if isinstance(flow_tool, Mapping):
                    tools.append({"id": node_id, "tool": f"flow:{flow_tool.get('flow')}"})
            for sub in config.get("sub_agents") or ():
                if isinstance(sub, Mapping):
                    tools.append({"id": node_id, "tool": f"sub_agent:{sub.get('name')}"})
        elif node_type == "tool" and config.get("tool"):
            tools.append({"id": node_id, "tool": str(config["tool"]), "node": True})

    fields = run_inputs(flow)
    return {
        "inputs": inputs,
        "run_inputs": fields,
        "outputs": outputs,
        "tools": tools,
        "text": _text(inputs, fields, outputs, tools),
    }


def _text(
    inputs: list[dict[str, Any]],
    fields: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
    tools: list[dict[str, Any]],
) -> str:
    def field(f: Mapping[str, Any]) -> str:
        detail = [str(f["type"])] if "type" in f else []
        if f.get("required"):
            detail.append("required")
        return f"{f['name']} ({', '.join(detail)})" if detail else str(f["name"])

    def out(o: Mapping[str, Any]) -> str:
        return (
            f"{o['id']} ({o['type']}, run output {o['key']!r})" if "key" in o else f"{o['id']} ({o['type']})"
        )

    lines = [
        "inputs: " + (", ".join(f"{i['id']} ({i['type']})" for i in inputs) or "(none)"),
        "run inputs: " + (", ".join(field(f) for f in fields) or "(none declared)"),
        "outputs: " + (", ".join(out(o) for o in outputs) or "(none)"),
        "tools: " + (", ".join(f"{t['tool']} (in {t['id']})" for t in tools) or "(none)"),
    ]
    return "\n".join(lines)


__all__ = ["describe_flow_io", "run_inputs"]
