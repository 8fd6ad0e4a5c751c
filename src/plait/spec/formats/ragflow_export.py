"""Export a plait flow as a RAGFlow agent document (`components` and `graph`, as RAGFlow saves).

Every node must have a RAGFlow counterpart (the inverse of ragflow_components.py's table, plus
`output` -> Message and `if` -> a one-case Switch); otherwise `RagflowExportError` names every
node that has none. Loop and map bodies are flattened with `parent_id` and get their LoopItem /
IterationItem entry; the nodes the importer generated (a map's outputs, the `assign` nodes that
copy body values into variables) fold back into the Iteration's `outputs` and into references.

Each canvas node carries its plait spec in `data.plait` with a digest of the params written for it,
so importing the export gives the same flow back (see ragflow.py); RAGFlow ignores the key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from plait.errors import PlaitError
from plait.expr.refs import Ref, TemplateError, parse_ref
from plait.spec.formats.ragflow import FORMAT, digest
from plait.spec.formats.ragflow_components import MAPPINGS, TOOL_ARGS, TOOLS, safe_name
from plait.spec.formats.ragflow_dsl import Component
from plait.spec.formats.ragflow_refs import rewrite_template
from plait.spec.loader import parse_document
from plait.spec.models import ERROR_PORT, FlowDocument
from plait.spec.problems import FlowValidationError
from plait.spec.validate import NodeCatalog, validate_document

BEGIN_ID = "begin"
_OPS_BACK = {
    "==": "=",
    "!=": "≠",
    "not_contains": "not contains",
    "starts_with": "start with",
    "ends_with": "end with",
    "not_empty": "not empty",
    ">=": "≥",
    "<=": "≤",
}
_FIELDS_BACK = {
    "string": "line",
    "text": "paragraph",
    "select": "options",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
}
_TOOLS_BACK = {
    "web_search": "DuckDuckGo",
    "wikipedia": "Wikipedia",
    "arxiv": "ArXiv",
    "http_request": "Invoke",
    "sql": "ExeSQL",
    "email": "Email",
    "crawler": "Crawler",
    "tavily_extract": "TavilyExtract",
    "pubmed": "PubMed",
    "github": "GitHub",
}
_TOOL_COMPONENTS = {
    "web_search": "DuckDuckGo",
    "wikipedia": "Wikipedia",
    "arxiv": "ArXiv",
    "email": "Email",
    "crawler": "Crawler",
    "tavily_extract": "TavilyExtract",
    "pubmed": "PubMed",
    "github": "GitHub",
}
# Where a plait node's output lands in RAGFlow's outputs (the importer's output paths, reversed).
_OUTPUTS_BACK = {
    "sql": {"markdown": "formalized_content", "rows": "json"},
    "spreadsheet": {"sheets": "data"},
}
_WHOLE_OUTPUT = {"document": "download", "spreadsheet": "attachment", "sql": "formalized_content"}
_FACTORIES_BACK = {"openai": "OpenAI", "anthropic": "Anthropic", "groq": "Groq", "ollama": "Ollama"}
_NODE_TYPES = {
    "Begin": "beginNode",
    "Message": "messageNode",
    "Agent": "agentNode",
    "Categorize": "categorizeNode",
    "Switch": "switchNode",
    "Loop": "loopNode",
    "LoopItem": "loopStartNode",
    "ExitLoop": "exitLoopNode",
    "Iteration": "iterationNode",
    "IterationItem": "iterationStartNode",
    "DataOperations": "dataOperationsNode",
    "ListOperations": "listOperationsNode",
    "VariableAssigner": "variableAssignerNode",
    "VariableAggregator": "variableAggregatorNode",
}
# Node types with no RAGFlow component.
_HINTS = {
    "delay": "RAGFlow has no wait step",
    "transform": "RAGFlow has no JSONPath mapping; use a code node",
    "subflow": "RAGFlow agents cannot call other agents as steps",
    "component": "custom components do not exist in RAGFlow; use a code node",
}


class RagflowExportError(PlaitError, ValueError):
    """A plait flow that cannot be written as a RAGFlow agent; `nodes` lists {id, type, reason}."""

    code = "ragflow_export"

    def __init__(
        self, message: str, *, nodes: Iterable[dict[str, str]] = (), hint: str | None = None
    ) -> None:
        self.nodes = list(nodes)
        lines = "".join(f"\n  - {n['id']} ({n['type']}): {n['reason']}" for n in self.nodes)
        super().__init__(message + lines, hint=hint)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(super().to_dict())
        if self.nodes:
            out["nodes"] = self.nodes
        return out


def export_ragflow(
    document: dict[str, Any] | FlowDocument,
    *,
    warnings: list[str] | None = None,
    catalog: NodeCatalog | None = None,
) -> dict[str, Any]:
    """A RAGFlow agent document (components + graph) for a plait flow whose nodes all map.

    With `catalog` (the node registry) the flow is validated first: a flow with problems raises
    FlowValidationError, as everywhere else. `warnings` collects what the export approximated."""
    parsed = document if isinstance(document, FlowDocument) else parse_document(document)
    raw = document.to_dict() if isinstance(document, FlowDocument) else document
    if catalog is not None:
        problems = validate_document(parsed, catalog)
        if problems:
            raise FlowValidationError(problems)
    try:
        return _Exporter(raw, warnings if warnings is not None else []).run()
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        if isinstance(exc, PlaitError):
            raise
        raise RagflowExportError(
            f"the flow cannot be exported: a node's config is not what its type expects ({exc})",
            hint="validate the flow (plait validate) and fix its problems first",
        ) from exc


class _Exporter:
    def __init__(self, doc: dict[str, Any], warnings: list[str]) -> None:
        self.doc = doc
        self.warnings = warnings
        self.problems: list[dict[str, str]] = []
        meta = (doc.get("metadata") or {}).get(FORMAT) or {}
        self.generated = set(meta.get("generated") or [])
        self.origin: dict[str, str] = dict(meta.get("components") or {})
        self.exposed: dict[str, str] = dict(meta.get("exposed") or {})
        self.by_var = {var: cid for cid, var in self.exposed.items()}
        self.nodes: dict[str, tuple[dict[str, Any], str | None]] = {}  # plait id lower -> (node, container)
        self.ids: dict[str, str] = {}
        self.loop_vars: dict[str, str] = {}
        self.current: str | None = None
        self.plait_edges: dict[str, list[dict[str, Any]]] = {}
        self.sub_agents: list[tuple[str, str, dict[str, Any]]] = []  # (parent cid, cid, params)

    # ------------------------------------------------------------------ references
    def cid(self, node_id: str) -> str:
        return self.ids.get(node_id.lower(), node_id)

    def _back(self, ref: Ref) -> str | None:
        root, path = ref.root, list(ref.path)
        if root == "sys":
            return ".".join(["sys", *map(str, path)])
        if root == "vars":
            if path and path[0] in self.by_var:
                cid = self.by_var[str(path[0])]
                entry = self.nodes.get(cid.lower())
                return self._param(self.cid(cid), entry[0] if entry else None, path[1:])
            if path and str(path[0]) in self.loop_vars:
                return f"{self.loop_vars[str(path[0])]}@{'.'.join(map(str, path))}"
            return ".".join(["env", *map(str, path)])
        if root == "inputs":
            return f"{BEGIN_ID}@{'.'.join(map(str, path))}" if path else f"{BEGIN_ID}@query"
        if root in ("item", "index"):
            container = self._enclosing(self.current, "map")
            if container is None:
                return None
            return f"IterationItem:{self.cid(container)}@{'.'.join([root, *map(str, path)])}"
        if root == "result":
            self._problem(self.current, "reads the loop alias {{result}}, which RAGFlow has no name for")
            return None
        entry = self.nodes.get(root)
        if entry is None:
            return None
        return self._param(self.cid(entry[0]["id"]), entry[0], path)

    def _param(self, cid: str, node: dict[str, Any] | None, path: list[Any]) -> str:
        kind = node.get("type") if node else None
        cfg = node.get("config") or {} if node else {}
        p = [str(x) for x in path]
        if kind == "llm":
            p = ["structured" if cfg.get("output") == "json" and p else "content", *p]
        elif kind == "categorize" and p and p[0] == "category":
            p = ["category_name", *p[1:]]
        elif kind == "http" and p and p[0] == "body":
            p = ["result", *p[1:]]
        elif kind in _WHOLE_OUTPUT:
            renamed = _OUTPUTS_BACK.get(str(kind), {})
            p = [renamed.get(p[0], p[0]), *p[1:]] if p else [_WHOLE_OUTPUT[str(kind)]]
        elif kind == "retrieval" and p and p[0] in ("content", "chunks"):
            p = ["formalized_content" if p[0] == "content" else "json", *p[1:]]
        elif kind in ("text", "data_ops", "list_ops", "tool"):
            if p and p[0] == "0" and kind == "list_ops":
                p = ["first", *p[1:]]
            elif p and p[0] == "-1" and kind == "list_ops":
                p = ["last", *p[1:]]
            else:
                p = ["result", *p]
        elif kind == "map":
            outs = self._map_outputs(node) if node else {}
            p = [next(iter(outs), "result"), *p] if len(outs) <= 1 else p
        elif not p:
            p = {"agent": "content", "message": "content", "code": "result"}.get(str(kind), "output").split()
        return f"{cid}@{'.'.join(p)}"

    def template(self, text: Any) -> Any:
        return rewrite_template(text, self._back, braces=("{", "}"))

    def bare(self, value: Any) -> Any:
        """A value that is one reference, as RAGFlow's bare `cpn@param` (constants unchanged)."""
        if not isinstance(value, str) or "{" not in value:
            return value
        stripped = value.strip()
        if stripped.startswith("{{") and stripped.endswith("}}") and stripped.count("{{") == 1:
            try:
                ref = parse_ref(stripped)
            except TemplateError:
                return value
            back = self._back(ref)
            return back if back is not None else value
        return self.template(value)

    # ------------------------------------------------------------------ walk
    def _walk(self, graph: dict[str, Any], container: str | None) -> None:
        for node in graph.get("nodes") or []:
            key = str(node["id"]).lower()
            if key in self.nodes:
                self._problem(
                    node, "its id is used again in another body; RAGFlow ids are global (rename one)"
                )
                continue
            self.nodes[key] = (node, container)
            body = (node.get("config") or {}).get("body")
            if isinstance(body, dict):
                if node.get("type") == "loop":
                    for var in (node.get("config") or {}).get("variables") or {}:
                        self.loop_vars.setdefault(str(var), str(node["id"]))
                self._walk(body, str(node["id"]))

    def _enclosing(self, node_id: str | None, kind: str) -> str | None:
        while node_id is not None:
            entry = self.nodes.get(node_id.lower())
            if entry is None:
                return None
            node_id = entry[1]
            if node_id is not None and self.nodes[node_id.lower()][0].get("type") == kind:
                return node_id
        return None

    def _problem(self, node: Any, reason: str) -> None:
        if isinstance(node, str):
            entry = self.nodes.get(node.lower())
            node = entry[0] if entry else {"id": node, "type": "?"}
        if node is None:
            node = {"id": "(flow)", "type": "-"}
        item = {"id": str(node.get("id")), "type": str(node.get("type")), "reason": reason}
        if item not in self.problems:
            self.problems.append(item)

    def run(self) -> dict[str, Any]:
        doc = self.doc
        if (doc.get("settings") or {}).get("policy") == "edge_llm":
            raise RagflowExportError(
                "an edge_llm flow cannot be exported to RAGFlow: RAGFlow runs its canvas by edges",
                hint="set settings.policy to dataflow first",
            )
        self._walk(doc, None)
        starts = [n for n, c in self.nodes.values() if n.get("type") == "start" and c is None]
        if BEGIN_ID in self.nodes and self.nodes[BEGIN_ID][0].get("type") != "start":
            self._problem(BEGIN_ID, "RAGFlow reserves the id 'begin' for the start; rename the node")
        if len(starts) > 1:
            for s in starts[1:]:
                self._problem(s, "a RAGFlow agent has one Begin; remove the other start nodes")
        if starts:
            self.ids[str(starts[0]["id"]).lower()] = BEGIN_ID
        components: dict[str, dict[str, Any]] = {}
        plait_specs: dict[str, dict[str, Any]] = {}
        order: list[tuple[str, dict[str, Any], str | None]] = []
        for node, container in self.nodes.values():
            if node["id"] in self.generated:
                continue
            self.current = str(node["id"])
            mapped = self._component(node)
            if mapped is None:
                continue
            name, params = mapped
            _exception_params(node, params)
            cid = self.cid(str(node["id"]))
            components[cid] = {
                "obj": {"component_name": name, "params": params},
                "downstream": [],
                "upstream": [],
            }
            if container is not None:
                components[cid]["parent_id"] = self.cid(container)
            order.append((cid, node, container))
            spec = dict(node)  # its position only says whether it had one (the canvas' wins)
            if node.get("type") in ("loop", "map"):
                spec["config"] = {k: v for k, v in (node.get("config") or {}).items() if k != "body"}
            if node.get("type") == "start" and doc.get("inputs") is not None:
                spec["inputs"] = doc["inputs"]
            plait_specs[cid] = spec
        if not starts:
            components[BEGIN_ID] = {
                "obj": {"component_name": "Begin", "params": {"mode": "task"}},
                "downstream": [],
                "upstream": [],
            }
            plait_specs[BEGIN_ID] = {"omit": True}
            order.insert(0, (BEGIN_ID, {"id": BEGIN_ID, "type": "start"}, None))
        if self.problems:
            raise RagflowExportError(
                f"{len(self.problems)} node{'s' * (len(self.problems) != 1)} cannot be written as RAGFlow components:",
                nodes=self.problems,
                hint="replace them with nodes RAGFlow has (see docs/ragflow.md) or keep the flow in plait's format",
            )
        graph_edges = self._edges(doc, None, components)
        for node, _container in self.nodes.values():
            body = (node.get("config") or {}).get("body")
            if isinstance(body, dict) and node["id"] not in self.generated:
                graph_edges += self._body_entry(node, body, components, plait_specs, order)
                graph_edges += self._edges(body, str(node["id"]), components)
        for cid, spec in plait_specs.items():
            if cid in self.plait_edges and spec:
                spec["edges"] = self.plait_edges[cid]
            params = components[cid]["obj"]["params"]
            if components[cid]["obj"]["component_name"] == "Categorize":
                _finish_categorize(params)
        for parent, cid, params in self.sub_agents:
            components[cid] = {
                "obj": {"component_name": "Agent", "params": params},
                "downstream": [],
                "upstream": [],
            }
            node = {"id": cid, "label": params.pop("_name")}
            plait_specs[cid] = {}
            order.append((cid, node, self.nodes[parent.lower()][1] if parent.lower() in self.nodes else None))
            graph_edges.append(
                {
                    "id": f"xy-edge__{parent}agentBottom-{cid}agentTop",
                    "source": parent,
                    "sourceHandle": "agentBottom",
                    "target": cid,
                    "targetHandle": "agentTop",
                }
            )
        if not starts:
            roots = [
                cid
                for cid, _, c in order
                if c is None and cid != BEGIN_ID and not components[cid]["upstream"]
            ]
            for r in roots:
                graph_edges.append(self._link(components, BEGIN_ID, r, "start"))
        graph_nodes = []
        for i, (cid, node, container) in enumerate(order):
            comp = components[cid]
            spec = plait_specs.get(cid, {"omit": True})
            c = Component(
                id=cid,
                name=comp["obj"]["component_name"],
                params=comp["obj"]["params"],
                downstream=comp["downstream"],
            )
            name = comp["obj"]["component_name"]
            pos = node.get("position") or {"x": 300 * (i % 6), "y": 160 * (i // 6)}
            data: dict[str, Any] = {
                "label": name,
                "name": node.get("label") or cid,
                "form": comp["obj"]["params"],
            }
            if spec:
                data["plait"] = {**spec, "digest": digest(c)}
            g: dict[str, Any] = {
                "id": cid,
                "type": _NODE_TYPES.get(name, "ragNode"),
                "position": pos,
                "data": data,
            }
            if container is not None:
                g["parentId"] = self.cid(container)
                g["extent"] = "parent"
            graph_nodes.append(g)
        plait_meta = {k: v for k, v in doc.items() if k in ("id", "name", "description", "settings")}
        metadata = doc.get("metadata")
        if metadata:
            plait_meta["metadata"] = metadata
        variables = {
            name: {"name": name, "type": _var_type(value), "value": value, "description": ""}
            for name, value in (doc.get("variables") or {}).items()
        }
        globals_ = {
            "sys.conversation_turns": 0,
            "sys.date": "",
            "sys.files": [],
            "sys.history": [],
            "sys.query": "",
            "sys.user_id": "",
        }
        globals_.update({f"env.{k}": v["value"] for k, v in variables.items()})
        return {
            "components": components,
            "globals": globals_,
            "graph": {"nodes": graph_nodes, "edges": graph_edges},
            "variables": variables,
            "history": [],
            "messages": [],
            "path": [],
            "retrieval": [],
            "memory": [],
            "plait": plait_meta,
        }

    def _link(self, components: dict[str, Any], src: str, dst: str, handle: str) -> dict[str, Any]:
        if dst not in components[src]["downstream"]:
            components[src]["downstream"].append(dst)
        if src not in components[dst]["upstream"]:
            components[dst]["upstream"].append(src)
        return {
            "id": f"xy-edge__{src}{handle}-{dst}end",
            "source": src,
            "sourceHandle": handle,
            "target": dst,
            "targetHandle": "end",
        }

    def _edges(
        self, graph: dict[str, Any], container: str | None, components: dict[str, Any]
    ) -> list[dict[str, Any]]:
        out = []
        for e in graph.get("edges") or []:
            src, dst = str(e["source"]), str(e["target"])
            if src in self.generated or dst in self.generated:
                continue
            s, t = self.cid(src), self.cid(dst)
            if s not in components or t not in components:
                continue
            port = str(e.get("source_port") or "out")
            self.plait_edges.setdefault(s, []).append({"source_port": port, "target": t})
            if port == ERROR_PORT:  # on_error route: RAGFlow's exception branch
                params = components[s]["obj"]["params"]
                params["exception_method"] = "goto"
                params.setdefault("exception_goto", []).append(t)
                out.append(self._link(components, s, t, ERROR_PORT))
                continue
            handle = self._route(components[s], self.nodes[src.lower()][0], port, t)
            if handle is None:
                continue
            out.append(self._link(components, s, t, handle))
        return out

    def _route(self, comp: dict[str, Any], node: dict[str, Any], port: str, target: str) -> str | None:
        """Write a routing port into the component's params; the canvas handle of the edge."""
        params = comp["obj"]["params"]
        kind = node.get("type")
        if kind in ("switch", "if"):
            if port in ("else", "false"):
                params.setdefault("end_cpn_ids", []).append(target)
                return "end_cpn_ids"
            ports = ["true"] if kind == "if" else _switch_ports(node)
            index = ports.index(port) if port in ports else 0
            params["conditions"][index]["to"].append(target)
            return f"Case {index + 1}"
        if kind == "categorize":
            if port == "else":  # a downstream no category names (RAGFlow's fallback is the last one)
                return "else"
            for name, spec in params["category_description"].items():
                if spec.get("_port") == port:
                    spec["to"].append(target)
                    return str(spec.get("_uuid") or name)
            return None
        return "start"

    def _body_entry(
        self,
        node: dict[str, Any],
        body: dict[str, Any],
        components: dict[str, Any],
        specs: dict[str, Any],
        order: list[tuple[str, dict[str, Any], str | None]],
    ) -> list[dict[str, Any]]:
        kind = "LoopItem" if node.get("type") == "loop" else "IterationItem"
        container = self.cid(str(node["id"]))
        cid = f"{kind}:{container}"
        components[cid] = {
            "obj": {"component_name": kind, "params": {}},
            "downstream": [],
            "upstream": [],
            "parent_id": container,
        }
        order.append((cid, {"id": cid, "position": {"x": 40, "y": 80}}, str(node["id"])))
        specs[cid] = {}
        targets = {str(e["target"]).lower() for e in body.get("edges") or []}
        out = []
        for n in body.get("nodes") or []:
            if n["id"] in self.generated or str(n["id"]).lower() in targets:
                continue
            out.append(self._link(components, cid, self.cid(str(n["id"])), "start"))
        return out

    # ------------------------------------------------------------------ per type
    def _model(self, cfg: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
        provider = str(cfg.get("provider") or "openai")
        model = str(cfg.get("model") or "")
        p: dict[str, Any] = {"llm_id": f"{model}@{_FACTORIES_BACK.get(provider, 'OpenAI-API-Compatible')}"}
        if cfg.get("temperature") is not None:
            p["temperature"] = cfg["temperature"]
            p["temperatureEnabled"] = True
        if cfg.get("max_tokens"):
            p["max_tokens"] = cfg["max_tokens"]
            p["maxTokensEnabled"] = True
        retry = node.get("retry") or {}
        if retry.get("max_attempts", 1) > 1:
            p["max_retries"] = int(retry["max_attempts"]) - 1
            p["delay_after_error"] = retry.get("delay_s", 0)
        return p

    def _component(self, node: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        kind = str(node.get("type"))
        cfg = node.get("config") or {}
        if self.origin.get(str(node["id"])) == "ExitLoop":
            return "ExitLoop", {}
        method = getattr(self, f"_x_{kind}", None)
        mapping = next((m for m in MAPPINGS if kind in m.plait_types and m.passthrough is not None), None)
        if method is None and mapping is not None:  # node types mapped field by field
            back = {dst: src for src, dst in (mapping.passthrough or {}).items()}
            params = {back[k]: self.template(v) for k, v in cfg.items() if k in back}
            return mapping.names[0], params
        if method is None:
            self._problem(node, _HINTS.get(kind, "no RAGFlow component runs this node type"))
            return None
        result: tuple[str, dict[str, Any]] | None = method(node, cfg)
        return result

    def _x_start(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        trigger = cfg.get("trigger") or "manual"
        p: dict[str, Any] = {"mode": {"chat": "conversational", "webhook": "webhook"}.get(trigger, "task")}
        if cfg.get("prologue"):
            p["prologue"] = cfg["prologue"]
            p["enablePrologue"] = True
        schema = self.doc.get("inputs") or {}
        required = set(schema.get("required") or [])
        inputs = {}
        for key, prop in (schema.get("properties") or {}).items():
            prop = prop if isinstance(prop, dict) else {}
            kind = {"integer": "integer", "number": "number", "boolean": "boolean"}.get(
                str(prop.get("type")), "line"
            )
            item: dict[str, Any] = {
                "name": prop.get("title") or key,
                "type": kind,
                "optional": key not in required,
            }
            if prop.get("enum"):
                item["type"], item["options"] = "options", list(prop["enum"])
            if "default" in prop:
                item["value"] = prop["default"]
            inputs[key] = item
        if inputs:
            p["inputs"] = inputs
        return "Begin", p

    def _x_message(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "Message", {"content": [self.template(cfg.get("text") or "")]}

    def _x_output(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        value = cfg.get("value")
        if value is None:
            self.warnings.append(f"{node['id']}: an output of its input becomes an empty Message")
            value = ""
        if not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False)
        return "Message", {"content": [self.template(value)]}

    def _x_llm(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        p = self._model(cfg, node)
        p["sys_prompt"] = self.template(cfg.get("system") or "")
        p["prompts"] = [{"role": "user", "content": self.template(cfg.get("prompt") or "{{sys.query}}")}]
        if "history_window" in cfg:
            p["message_history_window_size"] = cfg["history_window"]
        p["outputs"] = {"content": {"type": "string", "value": ""}}
        if cfg.get("output") == "json":
            p["showStructuredOutput"] = True
            p["outputs"]["structured"] = {
                "type": "Object",
                "value": cfg.get("output_schema") or {"type": "object"},
            }
        return "LLM", p

    def _agent_params(self, node: dict[str, Any], cfg: dict[str, Any]) -> dict[str, Any]:
        p = self._model(cfg, node)
        p["sys_prompt"] = self.template(cfg.get("system") or "")
        tools: list[dict[str, Any]] = []
        mcp: dict[str, dict[str, Any]] = {}
        for ref in cfg.get("tools") or []:
            if ref.startswith("mcp:"):
                server, _, tool = ref[4:].partition("/")
                entry = mcp.setdefault(server, {"mcp_id": server, "tools": {}})
                if tool:
                    entry["tools"][tool] = {"name": tool, "enabled": True}
                continue
            name = _TOOLS_BACK.get(ref) or next((k for k, v in TOOLS.items() if ref in v), None)
            if name is None:
                self._problem(node, f"the tool {ref!r} has no RAGFlow counterpart")
                continue
            tools.append({"component_name": name, "name": name, "params": {}})
        if cfg.get("flows"):
            self._problem(node, "flows as tools have no RAGFlow counterpart")
        p["tools"] = tools
        p["mcp"] = list(mcp.values())
        p["max_rounds"] = max(int(cfg.get("max_steps", 8)) - 1, 0)
        return p

    def _x_agent(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        p = self._agent_params(node, cfg)
        p["prompts"] = [{"role": "user", "content": self.template(cfg.get("prompt") or "{{sys.query}}")}]
        p["outputs"] = {"content": {"type": "string", "value": ""}}
        parent = self.cid(str(node["id"]))
        for sub in cfg.get("sub_agents") or []:
            cid = f"{parent}_{sub['name']}"
            sp = self._agent_params({"id": cid, "type": "agent"}, sub.get("agent") or {})
            sp.update(description=sub.get("description", ""), user_prompt="", _name=sub["name"])
            sp["prompts"] = [{"role": "user", "content": "{sys.query}"}]
            self.sub_agents.append((parent, cid, sp))
            p["tools"].append({"component_name": "Agent", "id": cid, "name": sub["name"], "params": {}})
        return "Agent", p

    def _x_categorize(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        p = self._model(cfg, node)
        p["query"] = self.bare(cfg.get("input")) if cfg.get("input") else "sys.query"
        described: dict[str, Any] = {}
        for i, c in enumerate(cfg.get("categories") or []):
            desc = str(c.get("description") or "")
            name = str(c["name"])
            head, sep, rest = desc.partition(": ")
            if sep and head and any(not ch.isascii() for ch in head):  # the importer's renaming
                name, desc = head, rest
            described[name] = {
                "description": desc,
                "examples": list(c.get("examples") or []),
                "to": [],
                "_port": c["name"],
                "_uuid": f"{node['id']}:{i}",
            }
        p["category_description"] = described
        p["outputs"] = {"category_name": {"type": "string"}}
        return "Categorize", p

    def _x_switch(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        conditions = []
        for case in cfg.get("cases") or []:
            conditions.append(
                {
                    "items": [self._cond(w) for w in case.get("when") or []],
                    "logical_operator": case.get("logic", "and"),
                    "to": [],
                }
            )
        if cfg.get("case_sensitive"):
            self.warnings.append(f"{node['id']}: RAGFlow compares text ignoring case")
        return "Switch", {"conditions": conditions, "end_cpn_ids": []}

    def _x_if(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return self._x_switch(node, {"cases": [{"when": cfg.get("when"), "logic": cfg.get("logic", "and")}]})

    def _cond(self, w: dict[str, Any]) -> dict[str, Any]:
        op = str(w.get("op") or "==")
        ref = str(w.get("ref") or "")  # a condition's ref may be written bare: classify.label
        return {
            "cpn_id": self.bare(ref if "{" in ref else "{{" + ref + "}}"),
            "operator": _OPS_BACK.get(op, op),
            "value": self.template(w.get("value")),
        }

    def _x_human(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if len(cfg.get("actions") or ["submit"]) > 1:
            self._problem(node, "several actions: a RAGFlow UserFillUp has one way out")
        inputs = {}
        for f in cfg.get("fields") or []:
            item: dict[str, Any] = {
                "name": f.get("label") or f["name"],
                "type": _FIELDS_BACK.get(f.get("type", "string"), "line"),
                "optional": not f.get("required", True),
            }
            if f.get("options"):
                item["options"] = list(f["options"])
            if f.get("default") is not None:
                item["value"] = self.template(f["default"])
            inputs[f["name"]] = item
        return "UserFillUp", {
            "enable_tips": bool(cfg.get("message")),
            "tips": self.template(cfg.get("message") or ""),
            "inputs": inputs,
            "outputs": inputs,
        }

    def _x_http(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        args = cfg.get("query") or (cfg.get("body") if isinstance(cfg.get("body"), dict) else None) or {}
        if isinstance(cfg.get("body"), (str, list)):
            self.warnings.append(f"{node['id']}: its text body is kept for plait only")
        variables = []
        for k, v in args.items():
            back = self.bare(v)
            if isinstance(v, str) and v.strip().startswith("{{") and back != v:
                variables.append({"key": k, "ref": back})
            else:
                variables.append({"key": k, "value": v})
        p: dict[str, Any] = {
            "method": str(cfg.get("method") or "GET").lower(),
            "url": self.template(cfg.get("url") or ""),
            "headers": json.dumps(
                {k: self.template(v) for k, v in (cfg.get("headers") or {}).items()}, ensure_ascii=False
            ),
            "variables": variables,
            "timeout": cfg.get("timeout_s", 30),
            "clean_html": cfg.get("response") == "html_text",
            "datatype": "formdata" if cfg.get("body_type") == "form" else "json",
        }
        retry = node.get("retry") or {}
        if retry.get("max_attempts", 1) > 1:
            p["max_retries"] = int(retry["max_attempts"]) - 1
            p["delay_after_error"] = retry.get("delay_s", 0)
        return "Invoke", p

    def _x_code(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        outputs = {
            k: {"type": {"array": "Array<Object>"}.get(v, str(v).capitalize()), "value": ""}
            for k, v in (cfg.get("outputs") or {}).items()
        }
        args = {k: self.bare(v) for k, v in (cfg.get("arguments") or {}).items()}
        return "CodeExec", {
            "lang": "python",
            "script": cfg.get("code", ""),
            "arguments": args,
            "outputs": outputs,
        }

    def _x_text(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        op = cfg.get("operation")
        if op == "split":
            return "StringTransform", {
                "method": "split",
                "split_ref": self.bare(cfg.get("source")),
                "delimiters": list(cfg.get("delimiters") or [","]),
                "script": "",
                "outputs": {"result": {"type": "Array<string>"}},
            }
        if op == "merge":
            source = cfg.get("source")
            return "StringTransform", {
                "method": "merge",
                "script": self.template(source) if isinstance(source, str) else "",
                "delimiters": [cfg.get("separator", ",")],
                "split_ref": "",
                "outputs": {"result": {"type": "string"}},
            }
        return "StringTransform", {
            "method": "merge",
            "script": self.template(cfg.get("template") or ""),
            "delimiters": [","],
            "split_ref": "",
            "outputs": {"result": {"type": "string"}},
        }

    def _x_data_ops(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        op = cfg.get("operation")
        p: dict[str, Any] = {
            "operations": op,
            "query": [self.bare(cfg.get("source"))] if cfg.get("source") else [],
            "outputs": {"result": {"type": "Array<Object>"}},
        }
        if op == "select_keys":
            p["select_keys"] = list(cfg.get("keys") or [])
        elif op == "remove":
            p["remove_keys"] = list(cfg.get("keys") or [])
        elif op == "append_or_update":
            p["updates"] = [
                {"key": k, "value": self.template(v)} for k, v in (cfg.get("updates") or {}).items()
            ]
        elif op == "rename":
            p["rename_keys"] = [{"old_key": k, "new_key": v} for k, v in (cfg.get("renames") or {}).items()]
        elif op == "filter":
            f = cfg.get("filter") or {}
            p["filter_values"] = [
                {
                    "key": w.get("key", ""),
                    "operator": _OPS_BACK.get(w.get("op", "=="), w.get("op")),
                    "value": w.get("value"),
                }
                for w in f.get("when") or []
            ]
            p["logical_operator"] = f.get("logic", "and")
        return "DataOperations", p

    def _x_list_ops(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        op = cfg.get("operation")
        p: dict[str, Any] = {
            "operations": op,
            "query": self.bare(cfg.get("source")) or "",
            "n": cfg.get("n", 1),
            "outputs": {
                "result": {"type": "Array<Object>"},
                "first": {"type": "Object"},
                "last": {"type": "Object"},
            },
        }
        if cfg.get("key"):
            p["sort_by"] = cfg["key"]
        p["sort_method"] = "desc" if cfg.get("reverse") else "asc"
        when = ((cfg.get("filter") or {}).get("when") or [{}])[0]
        p["filter"] = {
            "operator": _OPS_BACK.get(when.get("op", "contains"), when.get("op", "contains")),
            "value": when.get("value", ""),
        }
        return "ListOperations", p

    def _x_assign(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        out = []
        for a in cfg.get("assignments") or []:
            name = str(a["variable"])
            name = name[5:] if name.startswith("vars.") else name
            item: dict[str, Any] = {"variable": f"env.{name}", "operator": a.get("op", "overwrite")}
            if "value" in a:
                item["parameter"] = self.bare(a["value"])
            out.append(item)
        return "VariableAssigner", {"variables": out}

    def _x_merge(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        groups = cfg.get("groups") or []
        if not groups:
            self._problem(node, "a merge of its inputs needs groups of references in RAGFlow (add groups)")
            return None
        return "VariableAggregator", {
            "groups": [
                {
                    "group_name": g["name"],
                    "type": "string",
                    "variables": [
                        {"value": self.bare(r if "{" in r else "{{" + r + "}}")} for r in g.get("refs") or []
                    ],
                }
                for g in groups
            ],
            "outputs": {g["name"]: {"type": "string"} for g in groups},
        }

    def _x_tool(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        name = _TOOL_COMPONENTS.get(str(cfg.get("tool")))
        if name is None:
            self._problem(node, f"the tool {cfg.get('tool')!r} has no RAGFlow component")
            return None
        args = dict(cfg.get("args") or {})
        back = {dst: src for src, dst in TOOL_ARGS.get(name.lower(), {}).items()}
        if back:  # tools whose input is not `query` (Email, Crawler, TavilyExtract)
            params: dict[str, Any] = {
                back.get(str(k), str(k)): self.bare(v)
                for k, v in args.items()
                if k != "format" or name != "Crawler"
            }
            if name == "Crawler" and args.get("format"):
                params["extract_type"] = {"text": "content"}.get(str(args["format"]), args["format"])
            if cfg.get("input_param"):
                param = str(cfg["input_param"])
                params[back.get(param, param)] = "sys.query"
            return name, params
        p: dict[str, Any] = {"query": self.bare(args.pop("query", "")) or "sys.query"}
        if "max_results" in args:
            p["top_n"] = args.pop("max_results")
        return name, p

    def _x_sql(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if not cfg.get("query"):
            self._problem(node, "its input is the statement; set `query` (RAGFlow's ExeSQL needs its sql)")
            return None
        self.warnings.append(
            f"{node['id']}: the database connection stays in plait's variable "
            f"{cfg.get('connection') or 'SQL_URL'}; set host, database and user in RAGFlow"
        )
        p = {"sql": self.template(cfg["query"]), "db_type": "postgres", "host": "", "port": 5432,
             "database": "", "username": "", "password": "", "max_records": cfg.get("max_rows", 1024)}  # fmt: skip
        return "ExeSQL", p

    def _x_document(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if not cfg.get("content"):
            self._problem(node, "its input is the content; set `content` (RAGFlow's DocsGenerator needs it)")
            return None
        fmt = str(cfg.get("format") or "pdf")
        p = {
            "content": self.template(cfg["content"]),
            "output_format": {"md": "markdown"}.get(fmt, fmt),
            "filename": self.template(cfg.get("filename") or "document"),
        }
        return "DocsGenerator", p

    def _x_spreadsheet(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if cfg.get("operation") == "write":
            data = cfg.get("data")
            if not isinstance(data, str) or "{{" not in data:
                self._problem(
                    node, "RAGFlow's ExcelProcessor writes data from a reference: set `data` to one"
                )
                return None
            return "ExcelProcessor", {
                "operation": "output",
                "transform_data": self.bare(data),
                "output_format": "csv" if cfg.get("file_format") == "csv" else "xlsx",
                "output_filename": cfg.get("filename") or "spreadsheet",
            }
        source = cfg.get("source")
        if not isinstance(source, str) or "{{" not in source:
            self._problem(node, "RAGFlow's ExcelProcessor reads a file from a reference: set `source` to one")
            return None
        return "ExcelProcessor", {
            "operation": "read",
            "input_files": [self.bare(source)],
            "sheet_selection": cfg.get("sheet") or "first",
        }

    def _x_loop(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        exit_var = f"{safe_name(str(node['id']), 'loop')}_exit"  # as the importer names it
        variables = [
            {
                "variable": k,
                "value": self.bare(v),
                "input_mode": "variable" if isinstance(v, str) and "{{" in v else "constant",
                "type": _var_type(v),
            }
            for k, v in (cfg.get("variables") or {}).items()
            if k != exit_var
        ]
        until = []
        for w in cfg.get("until") or []:
            ref = str(w.get("ref"))
            if ref.strip("{} ") == f"vars.{exit_var}":
                continue
            until.append(
                {
                    "variable": self.bare(ref if "{" in ref else "{{" + ref + "}}"),
                    "operator": _OPS_BACK.get(w.get("op", "=="), w.get("op")),
                    "value": w.get("value"),
                    "input_mode": "constant",
                }
            )
        return "Loop", {
            "maximum_loop_count": cfg.get("max_iterations", 100),
            "loop_variables": variables,
            "loop_termination_condition": until,
            "logical_operator": cfg.get("logic", "and"),
            "outputs": {},
        }

    def _map_outputs(self, node: dict[str, Any]) -> dict[str, str]:
        body = (node.get("config") or {}).get("body") or {}
        return {
            str((n.get("config") or {}).get("name") or n["id"]): str((n.get("config") or {}).get("value"))
            for n in body.get("nodes") or []
            if n.get("type") == "output" and n["id"] in self.generated
        }

    def _x_map(self, node: dict[str, Any], cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        outputs = {}
        outer = self.current
        for name, value in self._map_outputs(node).items():
            body_nodes = (cfg.get("body") or {}).get("nodes") or []
            self.current = str(body_nodes[0]["id"]) if body_nodes else outer
            outputs[name] = {"ref": self.bare(value), "type": "Array<Object>"}
        self.current = outer
        items = cfg.get("items")
        return "Iteration", {
            "items_ref": self.bare(items) if isinstance(items, str) else "",
            "outputs": outputs,
        }


def _exception_params(node: dict[str, Any], params: dict[str, Any]) -> None:
    """A node's `on_error` default as RAGFlow's exception handling (`comment`: the default
    value; a Message's default is its `content`). Routes are written with the error edges."""
    on_error = node.get("on_error") or {}
    if on_error.get("mode") != "default":
        return
    value = on_error.get("default")
    if node.get("type") == "message" and isinstance(value, dict) and "content" in value:
        value = value["content"]
    params["exception_method"] = "comment"
    params["exception_default_value"] = value


def _finish_categorize(params: dict[str, Any]) -> None:
    """The canvas' `items` (with the handle ids edges use) and no exporter bookkeeping."""
    items = []
    for name, spec in params["category_description"].items():
        spec.pop("_port", None)
        uuid = spec.pop("_uuid", name)
        items.append(
            {
                "name": name,
                "description": spec["description"],
                "examples": [{"value": e} for e in spec["examples"]],
                "uuid": uuid,
            }
        )
    params["items"] = items


def _switch_ports(node: dict[str, Any]) -> list[str]:
    cases = (node.get("config") or {}).get("cases") or []
    return [c.get("name") or f"case_{i}" for i, c in enumerate(cases, 1)]


def _var_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array<object>"
    if isinstance(value, dict):
        return "object"
    return "string"


__all__ = ["RagflowExportError", "export_ragflow"]
