"""The working flow: the flow document the flow-builder agent edits during one request.

    flow = WorkingFlow(request.flow, catalog)         # a deep copy of the user's draft
    node = flow.add_node("llm", {"prompt": "Summarise {{start.text}}"})
    flow.connect("start", None, node["id"], None)     # ports omitted: the default ones
    flow.validate()                                   # every problem, each with node and field
    flow.drain()                                      # [FlowUpdate("add_component", ...), ...]

It is the agent's scratchpad, not the stored canvas: every change is checked against the node
types (config fields, ports) before it is made, and appended as the matching `flow_update` event
to `pending`, which the agent loop drains between tokens so the canvas applies the same change.

The document is mutated in place and never rebound (`self.doc` stays the same dict for the whole
request): a tool that holds the document, like a run started after a `build_flow` in the same
turn, always sees the current flow (spec B47).

Errors are `FlowEditError`s (a `PlaitError` and a `ValueError`) whose message says what to do
instead; the toolkit turns them into tool results the agent replans from.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from plait.assistant.catalog import COMPONENT_TYPE, ComponentCatalog, ComponentInfo
from plait.assistant.events import FlowUpdate
from plait.engine.flow import content_hash
from plait.errors import PlaitError
from plait.spec.loader import parse_document
from plait.spec.models import DEFAULT_PORT_IN, DEFAULT_PORT_OUT, RESERVED_IDS, SCHEMA_ID
from plait.spec.problems import FlowValidationError
from plait.spec.validate import validate_document

NODE_ID_RE = re.compile(r"^[^\s{}@.]{1,128}$")
X_STEP = 240.0  # the canvas' column width (examples/*.json lay nodes out ~220-240 apart)
Y_STEP = 140.0
PREVIEW_CHARS = 60


class FlowEditError(PlaitError, ValueError):
    """A change the working flow refuses; the message says what to do instead."""

    code = "flow_edit"


def problem_dict(problem: Any) -> dict[str, Any]:
    """A validator `Problem` as the toolkit reports it: code, message, node, field, hint."""
    out: dict[str, Any] = {"code": problem.code, "message": problem.message}
    if problem.node_id is not None:
        out["node"] = problem.node_id
    if problem.field is not None:
        out["field"] = problem.field
    if problem.hint is not None:
        out["hint"] = problem.hint
    return out


def validate_flow(doc: Mapping[str, Any], catalog: ComponentCatalog) -> list[dict[str, Any]]:
    """Every problem of a flow document (plait's own validator), as dicts with node and field."""
    data = dict(doc)
    data.setdefault("schema", SCHEMA_ID)
    data.setdefault("id", "draft")
    try:
        parsed = parse_document(copy.deepcopy(data))
    except FlowValidationError as exc:
        return [problem_dict(p) for p in exc.problems]
    return [problem_dict(p) for p in validate_document(parsed, catalog.registry)]


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


class WorkingFlow:
    """A per-request flow document, changed in place, with the events of every change."""

    def __init__(self, draft: Mapping[str, Any] | None, catalog: ComponentCatalog) -> None:
        self.doc: dict[str, Any] = copy.deepcopy(dict(draft)) if draft else {}
        self._normalise(self.doc)
        self.catalog = catalog
        self.pending: list[FlowUpdate] = []
        # Set by run_flow after a successful run: an internal marker the agent loop reconciles
        # with a set_flow (spec B53); never sent to the client.
        self.ran = False

    # ------------------------------------------------------------------------------- reading
    @staticmethod
    def _normalise(doc: dict[str, Any]) -> None:
        if not isinstance(doc.get("nodes"), list):
            doc["nodes"] = []
        if not isinstance(doc.get("edges"), list):
            doc["edges"] = []

    @property
    def nodes(self) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = self.doc["nodes"]
        return nodes

    @property
    def edges(self) -> list[dict[str, Any]]:
        edges: list[dict[str, Any]] = self.doc["edges"]
        return edges

    def is_empty(self) -> bool:
        return not self.nodes

    def node(self, node_id: str) -> dict[str, Any] | None:
        """The node with that id (ids are case-insensitive, as in the validator), or None."""
        if not isinstance(node_id, str):
            return None
        key = node_id.lower()
        for node in self.nodes:
            if isinstance(node, dict) and str(node.get("id", "")).lower() == key:
                return node
        return None

    def require_node(self, node_id: str) -> dict[str, Any]:
        node = self.node(node_id)
        if node is None:
            raise FlowEditError(
                f"component_id {node_id!r} not found in working flow. Available: {self.node_ids()}",
                hint="use one of the ids listed (describe_flow_io or get_field_value show them)",
            )
        return node

    def node_ids(self) -> list[str]:
        return [str(n.get("id")) for n in self.nodes if isinstance(n, dict)]

    def node_index(self, node_id: str) -> int:
        key = node_id.lower()
        for i, node in enumerate(self.nodes):
            if isinstance(node, dict) and str(node.get("id", "")).lower() == key:
                return i
        raise FlowEditError(f"component_id {node_id!r} not found in working flow")

    def info(self, node: Mapping[str, Any]) -> ComponentInfo | None:
        """The catalog entry of a node: its user component for `component` nodes, else its type."""
        node_type = str(node.get("type", ""))
        config = node.get("config") or {}
        if node_type == COMPONENT_TYPE and isinstance(config, Mapping):
            found = self.catalog.user_component(str(config.get("component", "")))
            if found is not None:
                return found
        return self.catalog.get(node_type)

    def _parsed_config(self, node: Mapping[str, Any]) -> tuple[BaseModel | None, list[str]]:
        cls = self.catalog.registry.get(str(node.get("type", "")))
        if cls is None:
            return None, [f"unknown node type {node.get('type')!r}"]
        try:
            return cls.Config.model_validate(node.get("config") or {}), []
        except ValidationError as exc:
            return None, [
                f"{'.'.join(str(p) for p in err['loc']) or 'config'}: {err['msg']}" for err in exc.errors()
            ]

    def output_ports(self, node: Mapping[str, Any]) -> list[str]:
        """The node's output ports for its current config. Raises FlowEditError when they come
        from a config that is not valid yet."""
        cls = self.catalog.registry.get(str(node.get("type", "")))
        if cls is None:
            raise FlowEditError(f"node {node.get('id')!r} has an unknown type {node.get('type')!r}")
        parsed, errors = self._parsed_config(node)
        if parsed is None:
            info = self.catalog.get(str(node.get("type", "")))
            if info is not None and info.output_ports is not None:
                return list(info.output_ports)
            raise FlowEditError(
                f"the output ports of node {node.get('id')!r} ({node.get('type')}) come from its config, "
                f"which is not valid yet: {'; '.join(errors)}",
                hint="configure_component first (e.g. the cases or categories), then connect",
            )
        return list(cls.output_ports(parsed))

    def input_ports(self, node: Mapping[str, Any]) -> list[str]:
        cls = self.catalog.registry.get(str(node.get("type", "")))
        if cls is None:
            raise FlowEditError(f"node {node.get('id')!r} has an unknown type {node.get('type')!r}")
        return list(cls.input_ports)

    # ------------------------------------------------------------------------------- events
    def _emit(self, action: str, **fields: Any) -> None:
        self.pending.append(FlowUpdate(action, copy.deepcopy(fields)))

    def drain(self) -> list[FlowUpdate]:
        """The events of the changes since the last drain, oldest first."""
        out, self.pending[:] = list(self.pending), []
        return out

    # ------------------------------------------------------------------------------- ids
    def _new_id(self, base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_-]+", "_", base).strip("_").lower() or "node"
        taken = {i.lower() for i in self.node_ids()}
        if base not in taken and base not in RESERVED_IDS:
            return base
        n = 2
        while f"{base}_{n}" in taken:
            n += 1
        return f"{base}_{n}"

    def _check_new_id(self, node_id: str) -> None:
        if not isinstance(node_id, str) or not NODE_ID_RE.match(node_id):
            raise FlowEditError(
                f"invalid node id {node_id!r}",
                hint="use 1-128 characters without spaces, dots, braces or '@' (e.g. summarize_1)",
            )
        if node_id.lower() in RESERVED_IDS:
            raise FlowEditError(
                f"{node_id!r} is a reserved reference root and cannot be a node id",
                hint=f"pick another id (reserved: {', '.join(sorted(RESERVED_IDS))})",
            )
        if self.node(node_id) is not None:
            raise FlowEditError(
                f"a node with id {node_id!r} already exists (ids are case-insensitive)",
                hint="pick another id, or omit it to get a fresh one",
            )

    # ------------------------------------------------------------------------------- config
    def check_params(self, info: ComponentInfo, node_type: str, params: Mapping[str, Any]) -> None:
        """Refuse config keys the node type does not have (naming the allowed ones), and inputs a
        user component does not declare."""
        cls = self.catalog.registry.get(node_type)
        if cls is None:
            raise FlowEditError(f"unknown node type {node_type!r}")
        allowed: list[str] = []
        for name, fld in cls.Config.model_fields.items():
            allowed.append(name)
            if fld.alias and fld.alias != name:
                allowed.append(fld.alias)
        for key in params:
            if key not in allowed:
                raise FlowEditError(
                    f"{info.name} has no config field {key!r}. Allowed fields: {', '.join(allowed)}",
                    hint=f"call describe_component({info.name!r}) for the fields and their types",
                )
        if info.user and isinstance(params.get("inputs"), Mapping) and info.inputs:
            declared = [str(i.get("name")) for i in info.inputs]
            for key in params["inputs"]:
                if key not in declared:
                    raise FlowEditError(
                        f"{info.name} has no input {key!r}. Its inputs: {', '.join(declared)}",
                        hint="set config.inputs with the component's own input names",
                    )
        if info.user and params.get("component") not in (None, info.name):
            raise FlowEditError(
                f"config.component of a {info.name} node is {info.name!r}",
                hint="add a node of the other component instead",
            )

    def config_problems(self, node: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The node's config problems (pydantic), with the field at fault."""
        cls = self.catalog.registry.get(str(node.get("type", "")))
        if cls is None:
            return []
        try:
            cls.Config.model_validate(node.get("config") or {})
        except ValidationError as exc:
            return [
                {
                    "code": "invalid_config",
                    "message": err["msg"],
                    "node": node.get("id"),
                    "field": "config." + ".".join(str(p) for p in err["loc"]) if err["loc"] else "config",
                }
                for err in exc.errors()
            ]
        return []

    # ------------------------------------------------------------------------------- changes
    def add_node(
        self, node_type: str, config: Mapping[str, Any] | None = None, node_id: str | None = None
    ) -> dict[str, Any]:
        """Add a node of a built-in type or user component (by class name); returns the node.
        Emits `add_component{node}`; the node gets a free position right of the others."""
        info = self.catalog.get(node_type) if isinstance(node_type, str) else None
        if info is None:
            raise FlowEditError(
                f"component_type {node_type!r} not found in registry",
                hint="call search_components to find the type name, then add_component with it",
            )
        if config is not None and not isinstance(config, Mapping):
            raise FlowEditError(f"config must be a JSON object, got {type(config).__name__}")
        params = dict(config or {})
        self.check_params(info, info.node_type, params)
        if node_id is None:
            base = info.name if not info.user else re.sub(r"(?<!^)(?=[A-Z])", "_", info.name)
            node_id = self._new_id(base)
        else:
            self._check_new_id(node_id)
        merged = {**copy.deepcopy(info.config_defaults), **copy.deepcopy(params)}
        node: dict[str, Any] = {"id": node_id, "type": info.node_type, "config": merged}
        node["position"] = self._free_position()
        self.nodes.append(node)
        self._emit("add_component", node=node)
        return node

    def remove_node(self, node_id: str) -> dict[str, Any]:
        """Remove a node and every edge (and `requires`) that touches it; emits
        `remove_component{component_id}`. Returns the removed node."""
        node = self.require_node(node_id)
        key = str(node["id"]).lower()
        self.nodes.remove(node)
        self.edges[:] = [
            e
            for e in self.edges
            if str(e.get("source", "")).lower() != key and str(e.get("target", "")).lower() != key
        ]
        for other in self.nodes:
            requires = other.get("requires")
            if isinstance(requires, list) and any(str(r).lower() == key for r in requires):
                other["requires"] = [r for r in requires if str(r).lower() != key]
        self._emit("remove_component", component_id=node["id"])
        return node

    def default_output_port(self, node: Mapping[str, Any]) -> str:
        ports = self.output_ports(node)
        if DEFAULT_PORT_OUT in ports:
            return DEFAULT_PORT_OUT
        if len(ports) == 1:
            return ports[0]
        raise FlowEditError(
            f"node {node.get('id')!r} ({node.get('type')}) has several output ports ({', '.join(ports)}); "
            "say which one",
            hint=f"pass source_output, one of: {', '.join(ports) or '(none)'}",
        )

    def default_input_port(self, node: Mapping[str, Any]) -> str:
        ports = self.input_ports(node)
        if DEFAULT_PORT_IN in ports or "*" in ports:
            return DEFAULT_PORT_IN
        if len(ports) == 1:
            return ports[0]
        if not ports:
            raise FlowEditError(
                f"node {node.get('id')!r} ({node.get('type')}) takes no input: it has no input ports",
                hint="a start node begins the flow; connect from it, not to it",
            )
        raise FlowEditError(
            f"node {node.get('id')!r} ({node.get('type')}) has several input ports ({', '.join(ports)}); "
            "say which one",
            hint=f"pass target_input, one of: {', '.join(ports)}",
        )

    def connect(
        self, source_id: str, source_port: str | None, target_id: str, target_port: str | None
    ) -> dict[str, Any]:
        """Add an edge after checking both ends: the source node must have that output port (for
        its config), the target that input port. Emits `connect{edge}`."""
        source = self.require_node(source_id)
        target = self.require_node(target_id)
        out_port = source_port or self.default_output_port(source)
        in_port = target_port or self.default_input_port(target)
        out_ports = self.output_ports(source)
        in_ports = self.input_ports(target)
        where = (
            f"cannot connect {source['id']}.{out_port} -> {target['id']}.{in_port} "
            f"({source.get('type')} -> {target.get('type')})"
        )
        if out_port not in out_ports:
            raise FlowEditError(
                f"{where}: node {source['id']!r} ({source['type']}) has no output port {out_port!r}; "
                f"its output ports are: {', '.join(out_ports) or '(none)'}",
                hint=f"use source_output one of: {', '.join(out_ports)}",
            )
        if not in_ports:
            raise FlowEditError(
                f"{where}: node {target['id']!r} ({target['type']}) takes no input (it has no input ports)",
                hint="a start node begins the flow; connect from it, not to it",
            )
        if "*" not in in_ports and in_port not in in_ports:
            raise FlowEditError(
                f"{where}: node {target['id']!r} ({target['type']}) has no input port {in_port!r}; "
                f"its input ports are: {', '.join(in_ports)}",
                hint=f"use target_input one of: {', '.join(in_ports)}",
            )
        if str(source["id"]).lower() == str(target["id"]).lower():
            raise FlowEditError(f"{where}: a node cannot feed itself", hint="use a loop node to repeat work")
        for edge in self.edges:
            if (
                str(edge.get("source", "")).lower() == str(source["id"]).lower()
                and str(edge.get("target", "")).lower() == str(target["id"]).lower()
                and edge.get("source_port", DEFAULT_PORT_OUT) == out_port
                and edge.get("target_port", DEFAULT_PORT_IN) == in_port
            ):
                raise FlowEditError(f"{where}: these ports are already connected")
        if self._reaches(str(target["id"]), str(source["id"])):
            raise FlowEditError(
                f"{where}: it would make a cycle ({target['id']!r} already leads to {source['id']!r})",
                hint="plait flows are acyclic; put repeated work in a loop node's body",
            )
        edge = {
            "source": source["id"],
            "source_port": out_port,
            "target": target["id"],
            "target_port": in_port,
        }
        self.edges.append(edge)
        self._emit("connect", edge=edge)
        return edge

    def _successors(self) -> dict[str, set[str]]:
        succ: dict[str, set[str]] = {}
        for edge in self.edges:
            succ.setdefault(str(edge.get("source", "")).lower(), set()).add(
                str(edge.get("target", "")).lower()
            )
        for node in self.nodes:
            for req in node.get("requires") or ():
                succ.setdefault(str(req).lower(), set()).add(str(node.get("id", "")).lower())
        return succ

    def _reaches(self, start: str, goal: str) -> bool:
        succ, seen, todo = self._successors(), set(), [start.lower()]
        while todo:
            key = todo.pop()
            if key == goal.lower():
                return True
            if key in seen:
                continue
            seen.add(key)
            todo.extend(succ.get(key, ()))
        return False

    def configure(self, node_id: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `params` into the node's config (a None value removes the field: its default
        applies); keys are checked against the node type's config fields. Emits
        `configure{component_id, params}`; returns the node's new config."""
        if not isinstance(params, Mapping):
            raise FlowEditError(f"params must be a JSON object, got {type(params).__name__}")
        if not params:
            raise FlowEditError("params is empty", hint='pass the fields to set, e.g. {"prompt": "..."}')
        node = self.require_node(node_id)
        info = self.info(node)
        if info is None:
            raise FlowEditError(f"node {node['id']!r} has an unknown type {node.get('type')!r}")
        self.check_params(info, str(node["type"]), params)
        config = node.get("config")
        if not isinstance(config, dict):
            config = node["config"] = {}
        for key, value in params.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = copy.deepcopy(value)
        self._emit("configure", component_id=node["id"], params=dict(params))
        return config

    def propose_edit(self, node_id: str, field: str, new_value: Any) -> dict[str, Any]:
        """Propose (not apply) a config change for the user to review: an `edit_field` event with
        a JSON Patch against the flow document. Returns the edit."""
        node = self.require_node(node_id)
        info = self.info(node)
        if info is None:
            raise FlowEditError(f"node {node['id']!r} has an unknown type {node.get('type')!r}")
        if not isinstance(field, str) or not field:
            raise FlowEditError("field_name must be a config field name")
        self.check_params(info, str(node["type"]), {field: new_value})
        config = node.get("config") or {}
        exists = isinstance(config, Mapping) and field in config
        old_value = config.get(field) if isinstance(config, Mapping) else None
        index = self.node_index(str(node["id"]))
        pointer = field.replace("~", "~0").replace("/", "~1")
        patch: list[dict[str, Any]] = []
        if not isinstance(node.get("config"), Mapping):
            patch.append({"op": "add", "path": f"/nodes/{index}/config", "value": {}})
        patch.append(
            {
                "op": "replace" if exists else "add",
                "path": f"/nodes/{index}/config/{pointer}",
                "value": copy.deepcopy(new_value),
            }
        )
        edit = {
            "id": uuid.uuid4().hex[:8],
            "component_id": node["id"],
            "component_type": info.name,
            "field": field,
            "old_value": copy.deepcopy(old_value),
            "new_value": copy.deepcopy(new_value),
            "description": f'Set {field} to "{_preview(new_value)}" on {info.name}',
            "patch": patch,
        }
        self._emit("edit_field", **edit)
        return edit

    def propose_plan(self, markdown: str) -> None:
        if not isinstance(markdown, str) or not markdown.strip():
            raise FlowEditError("the plan is empty", hint="write the plan as markdown steps")
        self._emit("propose_plan", markdown=markdown)

    def set_flow(self, doc: Mapping[str, Any], *, layout: bool = True) -> dict[str, Any]:
        """Replace the whole working flow (in place: `self.doc` stays the same dict) and emit
        `set_flow{flow}`, a proposal the user applies (spec decision 6)."""
        if not isinstance(doc, Mapping):
            raise FlowEditError("the flow must be a JSON object")
        new = copy.deepcopy(dict(doc))
        self._normalise(new)
        self.doc.clear()
        self.doc.update(new)
        if layout:
            self.auto_layout()
        self._emit("set_flow", flow=self.doc)
        return self.doc

    def validate(self) -> list[dict[str, Any]]:
        """Every problem of the working flow (plait's validator), each with node and field."""
        return validate_flow(self.doc, self.catalog)

    def fingerprint(self) -> str:
        """A hash of the flow's content without the layout: equal before and after a fix attempt
        that changed nothing but positions (the verification loop stops then, spec 6.3)."""
        content = copy.deepcopy(self.doc)
        for node in content.get("nodes") or ():
            if isinstance(node, dict):
                node.pop("position", None)
        return content_hash(content)

    # ------------------------------------------------------------------------------- layout
    def _free_position(self) -> dict[str, float]:
        """Right of the rightmost node (where a node has no position yet: where the layout would
        put it), on the first row."""
        if not self.nodes:
            return {"x": 0.0, "y": 0.0}
        laid_out = self.layout_positions()
        xs = []
        for node in self.nodes:
            pos = node.get("position")
            x = pos.get("x") if isinstance(pos, Mapping) else None
            xs.append(float(x) if isinstance(x, int | float) else laid_out[str(node.get("id"))]["x"])
        return {"x": max(xs) + X_STEP, "y": 0.0}

    def auto_layout(self) -> dict[str, dict[str, float]]:
        """Set every node's `position` from `layout_positions()`; returns {id: position}."""
        positions = self.layout_positions()
        for node in self.nodes:
            node["position"] = dict(positions[str(node.get("id"))])
        return positions

    def layout_positions(self) -> dict[str, dict[str, float]]:
        """A layered layout: columns by the longest path from the flow's entry nodes (edges and
        `requires`), rows within a column ordered by their predecessors' rows. Deterministic."""
        ids = [str(n.get("id")) for n in self.nodes]
        keys = [i.lower() for i in ids]
        preds: dict[str, list[str]] = {k: [] for k in keys}
        for edge in self.edges:
            src, dst = str(edge.get("source", "")).lower(), str(edge.get("target", "")).lower()
            if src in preds and dst in preds and src != dst and src not in preds[dst]:
                preds[dst].append(src)
        for node, key in zip(self.nodes, keys, strict=True):
            for req in node.get("requires") or ():
                r = str(req).lower()
                if r in preds and r != key and r not in preds[key]:
                    preds[key].append(r)
        layer: dict[str, int] = {}
        visiting: set[str] = set()

        def depth(key: str) -> int:
            if key in layer:
                return layer[key]
            if key in visiting:  # a cycle (the validator reports it): cut it here
                return 0
            visiting.add(key)
            value = max((depth(p) + 1 for p in preds[key]), default=0)
            visiting.discard(key)
            layer[key] = value
            return value

        for key in keys:
            depth(key)
        columns: dict[int, list[str]] = {}
        for key in keys:
            columns.setdefault(layer[key], []).append(key)
        row: dict[str, float] = {}
        for col in sorted(columns):
            members = columns[col]
            order = {k: i for i, k in enumerate(members)}
            members.sort(
                key=lambda k: (
                    sum(row[p] for p in preds[k] if p in row) / max(1, len([p for p in preds[k] if p in row]))
                    if any(p in row for p in preds[k])
                    else float(order[k]),
                    order[k],
                )
            )
            for i, k in enumerate(members):
                row[k] = float(i)
        return {
            node_id: {"x": layer[key] * X_STEP, "y": row[key] * Y_STEP}
            for key, node_id in zip(keys, ids, strict=True)
        }


__all__ = ["FlowEditError", "WorkingFlow", "problem_dict", "validate_flow"]
