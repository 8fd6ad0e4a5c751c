"""Reading a RAGFlow agent document into one shape: its components, whatever form it came in.

RAGFlow writes an agent two ways (seed 003, section 5): `components` (the execution topology:
`obj.component_name`, `obj.params`, `upstream`, `downstream`, `parent_id`) next to `graph` (the
React-Flow canvas), or `graph` alone (`nodes[].data.label/name/form`, `edges[].sourceHandle`), which
RAGFlow's front end turns into components when it saves. `read_dsl` does that step here, so the
importer sees `Component` records only and never cares which form it was given:

- routing that lives in edge handles in a graph-only file (a Switch's `Case N` / `end_cpn_ids`, a
  Categorize item's `uuid`) is written back into the params (`conditions[].to`, `end_cpn_ids`,
  `category_description.*.to`), as RAGFlow's components carry it;
- an Agent's sub-agents (canvas edges `agentBottom` -> `agentTop`) and its `Tool` holder node (the
  `tool` handle) are not flow steps: they are recorded on the agent;
- canvas notes are dropped; positions and display names (`data.name`) are kept for the canvas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Canvas-only nodes: they never run.
CANVAS_ONLY = frozenset({"note"})
# Edge handles that do not carry data between steps.
SUB_AGENT_HANDLE = "agentBottom"
TOOL_HANDLE = "tool"
ELSE_HANDLE = "end_cpn_ids"


@dataclass(slots=True)
class Component:
    """One RAGFlow component, from `components` or from a graph node."""

    id: str
    name: str
    params: dict[str, Any]
    downstream: list[str] = field(default_factory=list)
    parent: str | None = None
    position: tuple[float, float] | None = None
    label: str | None = None
    sub_agents: list[str] = field(default_factory=list)
    # The graph node's `data.plait`, written by plait's exporter (see ragflow.py).
    plait: dict[str, Any] | None = None


@dataclass(slots=True)
class Dsl:
    components: dict[str, Component]
    globals: dict[str, Any]
    variables: dict[str, Any]
    graph_only: bool


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a dict, else an empty one (RAGFlow fields are often missing or null)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def unwrap(document: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The DSL of a RAGFlow template or API agent (`{id, title, description, canvas_type, dsl}`)
    and that wrapper's fields; a bare DSL is returned as it is, with no wrapper."""
    dsl = document.get("dsl")
    if isinstance(dsl, dict) and not ({"components", "graph"} & document.keys()):
        return dsl, {k: v for k, v in document.items() if k != "dsl"}
    return document, {}


def text_of(value: Any) -> str:
    """A template's title or description: a string, or translations ({"en": ..., "zh": ...})."""
    if isinstance(value, dict):
        value = value.get("en") or next((v for v in value.values() if isinstance(v, str)), "")
    return value if isinstance(value, str) else ""


def looks_like_ragflow(document: Any) -> bool:
    """Whether `document` (parsed) looks like a RAGFlow agent or pipeline document (or a RAGFlow
    template / API agent wrapping one in `dsl`)."""
    if not isinstance(document, dict) or "schema" in document:
        return False
    document = unwrap(document)[0]
    components = document.get("components")
    if isinstance(components, dict) and components:
        return all(isinstance(c, dict) and isinstance(c.get("obj"), dict) for c in components.values())
    graph = document.get("graph")
    if isinstance(graph, dict) and isinstance(graph.get("nodes"), list) and graph["nodes"]:
        return all(isinstance(n, dict) and isinstance(n.get("data"), dict) for n in graph["nodes"])
    return False


def _position(node: dict[str, Any]) -> tuple[float, float] | None:
    pos = node.get("position")
    if isinstance(pos, dict):
        try:
            return float(pos.get("x", 0)), float(pos.get("y", 0))
        except (TypeError, ValueError):
            return None
    return None


def _str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


def read_dsl(document: dict[str, Any]) -> Dsl:
    """The components of a RAGFlow document (see the module docstring); assumes `looks_like_ragflow`."""
    graph = as_dict(document.get("graph"))
    nodes = [n for n in as_list(graph.get("nodes")) if isinstance(n, dict) and n.get("id")]
    edges = [e for e in as_list(graph.get("edges")) if isinstance(e, dict)]
    by_node = {str(n["id"]): n for n in nodes}
    raw = document.get("components")
    graph_only = not (isinstance(raw, dict) and raw)
    components: dict[str, Component] = {}
    if not graph_only:
        assert isinstance(raw, dict)
        for cid, c in raw.items():
            obj = c.get("obj") or {}
            node = by_node.get(cid, {})
            data = as_dict(node.get("data"))
            components[cid] = Component(
                id=cid,
                name=str(obj.get("component_name") or data.get("label") or ""),
                params=dict(as_dict(obj.get("params"))),
                downstream=_str_list(c.get("downstream")),
                parent=c.get("parent_id") or node.get("parentId") or None,
                position=_position(node),
                label=data.get("name"),
                plait=as_dict(data.get("plait")) or None,
            )
        # Upstream lists complete the downstream ones (RAGFlow keeps both, not always in step).
        for cid, c in raw.items():
            for up in _str_list(c.get("upstream")):
                if up in components and cid not in components[up].downstream:
                    components[up].downstream.append(cid)
    else:
        for node in nodes:
            data = node["data"]
            name = str(data.get("label") or "")
            if name.lower() in CANVAS_ONLY or node.get("type") == "noteNode":
                continue
            form = data.get("form")
            components[str(node["id"])] = Component(
                id=str(node["id"]),
                name=name,
                params=dict(form) if isinstance(form, dict) else {},
                parent=node.get("parentId") or None,
                position=_position(node),
                label=data.get("name"),
                plait=as_dict(data.get("plait")) or None,
            )
    if not graph_only:
        # A sub-agent may live on the canvas only (RAGFlow keeps it in the parent's `tools`).
        for edge in edges:
            target = str(edge.get("target") or "")
            if (
                edge.get("sourceHandle") == SUB_AGENT_HANDLE
                and target not in components
                and target in by_node
            ):
                data = as_dict(by_node[target].get("data"))
                components[target] = Component(
                    id=target,
                    name=str(data.get("label") or "Agent"),
                    params=dict(as_dict(data.get("form"))),
                    position=_position(by_node[target]),
                    label=data.get("name"),
                )
    handles: dict[str, list[tuple[str, str]]] = {}
    for edge in edges:
        src, dst = str(edge.get("source") or ""), str(edge.get("target") or "")
        if src not in components or dst not in components:
            continue
        handle = str(edge.get("sourceHandle") or "start")
        if handle == SUB_AGENT_HANDLE:
            if dst not in components[src].sub_agents:
                components[src].sub_agents.append(dst)
            continue
        if handle == TOOL_HANDLE:
            continue
        handles.setdefault(src, []).append((handle, dst))
        if graph_only and dst not in components[src].downstream:
            components[src].downstream.append(dst)
    if graph_only:
        for cid, pairs in handles.items():
            _routes_from_handles(components[cid], pairs)
    return Dsl(
        components=components,
        globals=as_dict(document.get("globals")),
        variables=_variables(document.get("variables")),
        graph_only=graph_only,
    )


def _variables(raw: Any) -> dict[str, Any]:
    """RAGFlow's conversation variables: {name: {name, type, value, description}} (or a list)."""
    items = raw.values() if isinstance(raw, dict) else raw if isinstance(raw, list) else []
    out: dict[str, Any] = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]:
            out[item["name"]] = item.get("value")
    return out


def _routes_from_handles(c: Component, pairs: list[tuple[str, str]]) -> None:
    """Write a graph-only Switch's or Categorize's edge handles into its params, as RAGFlow's
    front end does when it builds components; routes the form already names are kept."""
    name = c.name.lower()
    if name == "switch":
        conditions = [x for x in as_list(c.params.get("conditions")) if isinstance(x, dict)]
        for handle, dst in pairs:
            if handle == ELSE_HANDLE:
                ends = _str_list(c.params.get(ELSE_HANDLE))
                if dst not in ends:
                    c.params[ELSE_HANDLE] = [*ends, dst]
            elif handle.lower().startswith("case "):
                if any(dst in _str_list(x.get("to")) for x in conditions):
                    continue
                try:
                    index = int(handle.split()[1]) - 1
                except (IndexError, ValueError):
                    continue
                if 0 <= index < len(conditions):
                    conditions[index]["to"] = [*_str_list(conditions[index].get("to")), dst]
    elif name == "categorize" and not isinstance(c.params.get("category_description"), dict):
        by_uuid: dict[str, list[str]] = {}
        for handle, dst in pairs:
            by_uuid.setdefault(handle, []).append(dst)
        described: dict[str, Any] = {}
        for item in as_list(c.params.get("items")):
            if not isinstance(item, dict) or not item.get("name"):
                continue
            examples = [e.get("value") if isinstance(e, dict) else e for e in as_list(item.get("examples"))]
            described[str(item["name"])] = {
                "description": item.get("description") or "",
                "examples": [e for e in examples if isinstance(e, str) and e],
                "to": by_uuid.get(str(item.get("uuid")), _str_list(item.get("to"))),
            }
        c.params["category_description"] = described
