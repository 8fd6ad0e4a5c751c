"""Import RAGFlow agent documents as plait flows (and detect them); export is ragflow_export.py.

`import_ragflow(document)` reads any shape RAGFlow writes (ragflow_dsl.py), maps each component
through the table in ragflow_components.py and returns an `ImportResult`: the plait flow document
and the warnings (what was approximated). What cannot be imported is refused with ONE
`RagflowImportError` that names every component concerned and what to do:

- an ingestion pipeline (File, Parser, Tokenizer, chunkers...) is not an agent;
- a component (or an agent tool) with no plait equivalent, or whose node type this plait lacks.

Structure that plait expresses differently:

- **Loop / Iteration** groups (children by `parent_id`) become `loop` / `map` bodies; LoopItem and
  IterationItem (the body's entry) disappear, `{IterationItem@item}` becomes `{{item}}`.
  ExitLoop becomes an `assign` of a flag variable the loop's `until` tests, OR-ed with
  `loop_termination_condition`. A body node read from outside its body (a Message after the loop
  quoting the last input) is copied into a flow variable by a generated `assign` node (plait keeps a
  body's nodes private to the body) and the reference reads that variable.
- **Routing**: Switch `conditions[].to` -> `case_N` ports, `end_cpn_ids` -> `else`; Categorize
  `category_description.*.to` -> one port per category (names made port-safe; RAGFlow's fallback to
  the last category -> `else`); UserFillUp -> `human` with its `submit` port.
- **References** `{cpn@param}` become `{{node.path}}` with the param moved to where plait keeps
  it; `{env.x}` (conversation variables) become `{{vars.x}}`; `{sys.query}` stays.
- `max_retries` / `delay_after_error` -> the node's `retry`. RAGFlow's exception handling ->
  the node's `on_error` (plait.engine.on_error): `exception_method: goto` with `exception_goto`
  -> `route`, an edge from the node's `error` port to each target; `comment` (or a goto with no
  target) with an `exception_default_value` -> `default` with that value (a Message's as its
  `content`). The per-class timeouts of RAGFlow's components (ExeSQL 3 s, search tools 12 s:
  `CLASS_TIMEOUTS`) become the node's `timeout_s` unless the component sets its own.

Round trip: `export_ragflow` writes each node's plait spec into its canvas node (`data.plait`, with
a digest of the params it exported). When the params are unchanged, importing takes the plait spec
as it was, so export -> import gives the same flow; an edited component is converted anew.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from plait.errors import PlaitError
from plait.expr.refs import Ref
from plait.spec.formats.ragflow_components import (
    AGENT_TOOL_HOLDERS,
    BODY_START_NAMES,
    BY_NAME,
    EXIT_LOOP_NAMES,
    INGESTION,
    LOOP_NAMES,
    MAP_NAMES,
    OPERATORS,
    SECRET_PARAMS,
    TOOL_HINT,
    TOOL_SETTINGS,
    TOOLS,
    Built,
    Mapping,
    agent_settings,
    begin_inputs,
    class_timeout,
    is_sub_agent,
    passthrough,
    retry_policy,
    safe_name,
    str_list,
)
from plait.spec.formats.ragflow_dsl import (
    CANVAS_ONLY,
    Component,
    Dsl,
    as_dict,
    as_list,
    looks_like_ragflow,
    read_dsl,
    text_of,
    unwrap,
)
from plait.spec.formats.ragflow_refs import dotted, parse_bare, rewrite_template
from plait.spec.loader import parse_document, read_document_data
from plait.spec.models import ERROR_PORT, RESERVED_IDS, SCHEMA_ID
from plait.spec.problems import FlowValidationError, Problem
from plait.spec.validate import NodeCatalog, validate_document

FORMAT = "ragflow"
PLAIT_SYS = frozenset({"query", "run_id", "flow_id", "date", "files"})
# Components whose v1 output (`content`) is a field of the plait node's output, or its whole.
_CONTENT_OUTPUTS = frozenset(
    {"agent", "message", "answer", "llm", "generate", "rewritequestion", "keywordextract"}
)
# Components a v1 `{input}` looks past: they route, they do not produce.
_PASS_THROUGH = frozenset({"switch", "categorize", "relevant", "concentrator"})


@dataclass(slots=True)
class ImportResult:
    """A plait flow document made from a RAGFlow one, and what the import approximated."""

    document: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    # Validation problems of the result (empty when a catalog was given and all is well).
    problems: list[Problem] = field(default_factory=list)


class RagflowImportError(PlaitError, ValueError):
    """A RAGFlow document plait cannot import; `components` lists each one at fault as
    {id, component, reason}."""

    code = "ragflow_import"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        components: Iterable[dict[str, str]] = (),
        code: str | None = None,
    ) -> None:
        self.components = list(components)
        lines = "".join(f"\n  - {c['id']} ({c['component']}): {c['reason']}" for c in self.components)
        super().__init__(message + lines, hint=hint, code=code)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(super().to_dict())
        if self.components:
            out["components"] = self.components
        return out


def is_ragflow(document: Any) -> bool:
    """Whether a document (parsed, or JSON text) is a RAGFlow agent or pipeline document."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return False
    return looks_like_ragflow(document)


def digest(c: Component) -> str:
    """What `data.plait` was exported from: a component's name, params and downstream."""
    payload = {"name": c.name, "params": c.params, "downstream": sorted(c.downstream)}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def load_ragflow(document: dict[str, Any] | str) -> dict[str, Any]:
    """Parse text (JSON) or take a dict, and check it is a RAGFlow document."""
    if isinstance(document, str):
        try:
            data = read_document_data(document if "\n" in document else document + "\n")
        except FlowValidationError as exc:
            raise RagflowImportError(
                f"the RAGFlow document cannot be read: {exc.problems[0].message}",
                hint="export the agent from RAGFlow as JSON",
                code="ragflow_syntax",
            ) from exc
    else:
        data = read_document_data(document)
    if not looks_like_ragflow(data):
        raise RagflowImportError(
            "this is not a RAGFlow agent document: it has neither `components` (with "
            "obj.component_name) nor `graph.nodes` (with data)",
            hint="export the agent from RAGFlow (its DSL JSON), or import it as a plait flow",
            code="ragflow_format",
        )
    return data


def import_ragflow(
    document: dict[str, Any] | str,
    *,
    catalog: NodeCatalog | None = None,
    tools: Collection[str] | None = None,
    flow_id: str | None = None,
) -> ImportResult:
    """A plait flow from a RAGFlow agent document (see the module docstring).

    `catalog` (the node registry) says which node types exist and validates the result; `tools`
    names the agent tools the runs have. Without them every type and tool of the mapping table is
    taken as available and the result is not validated."""
    data, wrapper = unwrap(load_ragflow(document))
    importer: _Importer | None = None
    try:
        importer = _Importer(read_dsl(data), data, catalog, tools, wrapper)
        doc = importer.run(flow_id)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        if isinstance(exc, PlaitError):
            raise
        # A field of an unexpected type somewhere in a hand-edited document: name the component.
        where = importer.current if importer is not None else None
        raise RagflowImportError(
            "the RAGFlow document is malformed" + (":" if where else f": {exc}"),
            hint="export the agent from RAGFlow again, or fix that component's fields",
            components=[
                {"id": where.id, "component": where.name, "reason": f"unexpected field value ({exc})"}
            ]
            if where
            else [],
            code="ragflow_malformed",
        ) from exc
    result = ImportResult(doc, importer.warnings)
    if catalog is not None:
        try:
            parsed = parse_document(doc)
        except FlowValidationError as exc:
            result.problems = exc.problems
        else:
            result.problems = validate_document(parsed, catalog)
    return result


class _Importer:
    def __init__(
        self,
        dsl: Dsl,
        data: dict[str, Any],
        catalog: NodeCatalog | None,
        tools: Collection[str] | None,
        wrapper: dict[str, Any] | None = None,
    ) -> None:
        self.wrapper = wrapper or {}
        self.dsl = dsl
        self.data = data
        self.c = dsl.components
        self.catalog = catalog
        self.types = set(catalog.names()) if catalog is not None else None
        self.tools = set(tools) if tools is not None else None
        self.by_lower = {cid.lower(): c for cid, c in self.c.items()}
        self.warnings: list[str] = []
        self._warned: set[str] = set()
        self.missing: list[dict[str, str]] = []
        self.current: Component | None = None
        self.exposed: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        self.generated: list[str] = []
        self.origin: dict[str, str] = {}
        previous = as_dict(data.get("plait"))
        self.previous: dict[str, Any] = previous
        meta = as_dict(as_dict(previous.get("metadata")).get(FORMAT))
        for cid, var in as_dict(meta.get("exposed")).items():
            if cid in self.c:
                self.exposed[cid] = var

    # ------------------------------------------------------------------ Context (converters)
    def warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self.warnings.append(message)

    def unsupported(self, c: Component, what: str) -> None:
        self.missing.append({"id": c.id, "component": c.name, "reason": what})

    def template(self, text: Any) -> Any:
        return rewrite_template(text, self._rewrite)

    def ref(self, text: Any) -> Any:
        if isinstance(text, str) and "{" in text:
            return self.template(text)
        ref = parse_bare(text)
        if ref is None:
            return text
        new = self._rewrite(ref)
        return "{{" + (new if new is not None else dotted(ref.root, ref.path)) + "}}"

    def tool(self, c: Component, spec: Any) -> str | None:
        name = (
            str(spec.get("component_name") or spec.get("name") or "") if isinstance(spec, dict) else str(spec)
        )
        candidates = TOOLS.get(name.lower().replace(" ", ""))
        if candidates is None:
            self.unsupported(c, f"agent tool {name!r}: unknown to plait (remove it from the agent's tools)")
            return None
        params = as_dict(spec.get("params")) if isinstance(spec, dict) else {}
        own = isinstance(spec, dict) and c.name == spec.get("component_name")
        settings = TOOL_SETTINGS.get(name.lower().replace(" ", ""))
        if settings and any(params.get(k) or (own and c.params.get(k)) for k in SECRET_PARAMS):
            self.warn(
                f"{c.id}: the {name} connection settings in the document are not imported; store "
                f"them as variables: {settings} (see docs/secrets.md)"
            )
        elif params.get("api_key") or (own and c.params.get("api_key")):
            self.warn(
                f"{c.id}: the {name} API key in the document is not imported; store it as a "
                "variable (e.g. TAVILY_API_KEY, see docs/secrets.md)"
            )
        for candidate in candidates:
            if self.tools is None or candidate in self.tools:
                if candidate == "web_search" and name.lower() != "duckduckgo":
                    self.warn(
                        f"{name} runs as web_search: PLAIT_SEARCH_BACKEND chooses the engine "
                        "(searxng, tavily or duckduckgo)"
                    )
                return candidate
        self.unsupported(c, TOOL_HINT.format(tool=name))
        return None

    def output_of(self, cid: str) -> str | None:
        c = self.by_lower.get(cid.lower())
        if c is None:
            return None
        path: tuple[str, ...] = ("content",) if c.name.lower() in _CONTENT_OUTPUTS else ()
        new = self._rewrite(Ref(c.id.lower(), path, c.id))
        return "{{" + (new if new is not None else c.id) + "}}"

    def upstream_of(self, c: Component) -> list[str]:
        return [u.id for u in self.c.values() if c.id in u.downstream]

    def v1_input(self, c: Component) -> str:
        out: list[str] = []
        seen = {c.id}
        todo = self.upstream_of(c)
        while todo:
            uid = todo.pop(0)
            if uid in seen:
                continue
            seen.add(uid)
            name = self.c[uid].name.lower()
            if name in _PASS_THROUGH:
                todo += self.upstream_of(self.c[uid])
                continue
            ref = "{{sys.query}}" if name in ("begin", "answer") else self.output_of(uid)
            if ref and ref not in out:
                out.append(ref)
        return "\n".join(out)

    def fields_of(self, plait_type: str) -> frozenset[str] | None:
        cls = self.catalog.get(plait_type) if self.catalog is not None else None
        return frozenset(cls.Config.model_fields) if cls is not None else None

    # ------------------------------------------------------------------ structure
    def parent(self, c: Component) -> str | None:
        p = c.parent
        if p and p in self.c and self.c[p].name.lower() in LOOP_NAMES | MAP_NAMES:
            return p
        if p:
            self.warn(f"{c.id}: its parent {p!r} is not a Loop or Iteration; it runs at the top level")
        return None

    def scopes(self, scope: str | None) -> list[str | None]:
        out: list[str | None] = [scope]
        seen = {scope}
        while scope is not None:
            scope = self.parent(self.c[scope])
            if scope in seen:
                break
            seen.add(scope)
            out.append(scope)
        return out

    def _available(self, m: Mapping) -> str | None:
        for t in m.plait_types:
            if self.types is None or t in self.types:
                return t
        return None

    # ------------------------------------------------------------------ references
    def _rewrite(self, ref: Ref) -> str | None:
        root, path = ref.root, ref.path
        if root == "sys":
            key = path[0] if path else None
            if key not in PLAIT_SYS:
                self.warn(
                    f"{{sys.{key}}} is not set by plait (it has sys.{', sys.'.join(sorted(PLAIT_SYS))})"
                )
            return dotted("sys", path)
        if root == "env":
            return dotted("vars", path)
        c = self.by_lower.get(root)
        if c is None:
            return None
        name = c.name.lower()
        if name in BODY_START_NAMES:
            if path and path[0] in ("item", "index", "result") and name == "iterationitem":
                return dotted("index" if path[0] == "index" else "item", path[1:])  # v1: @result
            return dotted("index", ()) if path and path[0] == "index" else None
        if name in LOOP_NAMES and path and path[0] in _loop_variables(c):
            return dotted("vars", path)
        if c.id in self.sub_agent_of:
            self.warn(f"{c.id} is a sub-agent: its output is part of {self.sub_agent_of[c.id]}'s")
            return dotted(self.node_id(self.sub_agent_of[c.id]), ("content",))
        mapping = BY_NAME.get(name)
        new_path = path
        if name in MAP_NAMES:
            inner = self.by_lower.get(str(path[0]).lower()) if path else None
            if inner is not None and self.parent(inner) == c.id:  # v1: an Iteration's output per body node
                c.params.setdefault("outputs", {})[str(path[0])] = {"ref": f"{inner.id}@content"}
            outputs = _map_outputs(c)
            if len(outputs) > 1 and path and path[0] in outputs:
                self.warn(f"{c.id}: with several outputs, each item of the map's list is an object of them")
                new_path = (path[0], *path[1:])
            elif path and path[0] in outputs:
                new_path = path[1:]
        elif path and path[0] == "_ERROR":  # RAGFlow's error output: the `error` of on_error route
            new_path = ("error", *path[1:])
        elif mapping is not None and mapping.output_path is not None:
            new_path = mapping.output_path(c, path)
        # Where the reference is read: the referring node's graph (a loop's `until` and a map's
        # `items` are read where the loop or map is).
        here = self.parent(self.current) if self.current is not None else None
        if self.parent(c) not in self.scopes(here):
            return dotted("vars", (self.expose(c), *new_path))
        return dotted(self.node_id(c.id), new_path)

    def expose(self, c: Component) -> str:
        if c.id not in self.exposed:
            self.exposed[c.id] = safe_name(c.id, "value")
        return self.exposed[c.id]

    def node_id(self, cid: str) -> str:
        if cid not in self.ids:
            c = self.c.get(cid)
            prior = c.plait.get("id") if c is not None and c.plait and self._verbatim(c) else None
            nid = prior if isinstance(prior, str) and prior else cid
            bad = any(ch in nid for ch in " \t\n{}@.") or not nid or len(nid) > 128
            if bad or nid.lower() in RESERVED_IDS:
                nid = safe_name(nid, "node") + "_"
            self.ids[cid] = nid
        return self.ids[cid]

    def _verbatim(self, c: Component) -> bool:
        p = c.plait
        return bool(
            p
            and p.get("digest") == digest(c)
            and isinstance(p.get("type"), str)
            and (self.types is None or p["type"] in self.types)
        )

    # ------------------------------------------------------------------ the import
    def run(self, flow_id: str | None) -> dict[str, Any]:
        ingestion = [c for c in self.c.values() if c.name.lower() in INGESTION]
        kind = f"{self.wrapper.get('canvas_type', '')} {self.wrapper.get('canvas_category', '')}".lower()
        if not ingestion and ("ingestion" in kind or "dataflow" in kind):
            ingestion = list(self.c.values())
        if ingestion:
            raise RagflowImportError(
                "this RAGFlow document is an ingestion pipeline, not an agent: plait imports agent "
                "canvases (Begin, Agent, Message...) and has no document-ingestion steps",
                hint="import the agent that uses the knowledge base instead; build the knowledge base in RAGFlow or with plait's retrieval support",
                components=[{"id": c.id, "component": c.name, "reason": "ingestion step"} for c in ingestion],
                code="ragflow_ingestion",
            )
        self.sub_agent_of: dict[str, str] = {}
        for c in list(self.c.values()):
            if c.name.lower() != "agent":
                continue
            for spec in _tool_agents(c):
                sid = str(spec.get("id") or spec.get("name") or "")
                if sid and sid not in self.c and as_dict(spec.get("params")):
                    # A sub-agent that only its parent's `tools` describes.
                    self.c[sid] = Component(
                        id=sid, name="Agent", params=as_dict(spec.get("params")), label=spec.get("name")
                    )
                    self.by_lower[sid.lower()] = self.c[sid]
                if sid and sid not in c.sub_agents:
                    c.sub_agents.append(sid)
        for c in self.c.values():
            if c.name.lower() == "agent":
                for sub in c.sub_agents:
                    if sub in self.c and sub != c.id:
                        self.sub_agent_of.setdefault(sub, c.id)
                    elif sub not in self.c:
                        self.warn(f"{c.id}: its sub-agent {sub!r} is not in the document; it was left out")
        nodes: dict[str | None, list[dict[str, Any]]] = {}
        edges: dict[str | None, list[dict[str, Any]]] = {}
        built: dict[str, Built] = {}
        containers: dict[str, dict[str, Any]] = {}
        inputs: dict[str, Any] | None = None
        for c in self.c.values():
            name = c.name.lower()
            if name in CANVAS_ONLY | AGENT_TOOL_HOLDERS | BODY_START_NAMES or c.id in self.sub_agent_of:
                continue
            if c.plait and c.plait.get("omit") and c.plait.get("digest") == digest(c):
                continue  # added by plait's exporter (a Begin for a flow without a start)
            self.current = c
            scope = self.parent(c)
            if name in EXIT_LOOP_NAMES:
                loop = self._enclosing_loop(c)
                if loop is None:
                    self.unsupported(c, "ExitLoop outside a Loop (delete it)")
                    continue
                b = Built(
                    "assign",
                    {"assignments": [{"variable": _exit_var(loop), "op": "overwrite", "value": True}]},
                )
                built[c.id] = b
                spec = self._spec(c, b.type, b.config)
                nodes.setdefault(scope, []).append(spec)
                self.origin[spec["id"]] = c.name
                continue
            if name in LOOP_NAMES | MAP_NAMES:
                b = self._container(c)
            else:
                mapping = BY_NAME.get(name)
                if mapping is None:
                    self.unsupported(
                        c, "a component plait does not know: remove it, or replace it with a plait node"
                    )
                    continue
                plait_type = self._available(mapping)
                if plait_type is None:
                    self.unsupported(c, mapping.hint or "no plait equivalent")
                    continue
                b = (mapping.build or passthrough(mapping, plait_type))(c, self)
                if c.name != mapping.names[0]:
                    self.origin[self.node_id(c.id)] = c.name
            if name == "begin":
                inputs = begin_inputs(c, self)
            if name == "agent":
                self._sub_agents(c, b)
            built[c.id] = b
            spec = self._spec(c, b.type, b.config, retry=b.retry)
            if name in LOOP_NAMES | MAP_NAMES:
                containers[c.id] = spec
            nodes.setdefault(scope, []).append(spec)
        self.current = None
        if self.missing:
            raise RagflowImportError(
                f"{len(self.missing)} RAGFlow component{'s' * (len(self.missing) != 1)} cannot be "
                "imported (no plait equivalent):",
                hint="change or remove them in RAGFlow (or in the JSON) and import again",
                components=self.missing,
                code="ragflow_unsupported",
            )
        routes: dict[str, list[tuple[str, str]]] = {}
        for cid, b in built.items():
            c = self.c[cid]
            kept = routes.setdefault(cid, [])
            error_routes = [(ERROR_PORT, t) for t in sorted(_gotos(c))]
            for src_port, target in self._routes(c, b) + error_routes:
                t = self.c.get(target)
                if t is not None and (
                    t.name.lower() in CANVAS_ONLY | AGENT_TOOL_HOLDERS or target in self.sub_agent_of
                ):
                    continue
                if t is None or target not in built:
                    self.warn(f"{cid}: its downstream {target!r} does not exist; the link was dropped")
                elif self.parent(t) != self.parent(c):
                    self.warn(f"{cid} -> {target}: a link into or out of a loop body was dropped")
                elif (src_port, target) not in kept:
                    kept.append((src_port, target))
        self._v1_answers(routes, nodes)
        self._break_cycles(routes)
        for cid, pairs in routes.items():
            scope = self.parent(self.c[cid])
            for src_port, target in pairs:
                edge = {"source": self.node_id(cid), "target": self.node_id(target)}
                if src_port != "out":
                    edge["source_port"] = src_port
                edges.setdefault(scope, []).append(edge)
        self._generated_nodes(nodes, containers)
        for cid in sorted(containers, key=lambda k: -len(self.scopes(k))):
            body = {"nodes": nodes.pop(cid, []), "edges": edges.pop(cid, [])}
            containers[cid]["config"]["body"] = body
        doc = self._document(nodes.get(None, []), edges.get(None, []), inputs, flow_id)
        return doc

    def _spec(
        self, c: Component, plait_type: str, config: dict[str, Any], *, retry: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if self._verbatim(c):
            assert c.plait is not None
            spec = {k: v for k, v in c.plait.items() if k not in ("digest", "edges", "inputs", "position")}
            spec["id"] = self.node_id(c.id)
            if "config" in spec:
                spec["config"] = dict(spec["config"])
            if "position" not in c.plait:  # placed by the exporter, not by anyone
                return spec
        else:
            spec = {"id": self.node_id(c.id), "type": plait_type, "config": config}
            if c.label and c.label != c.id:
                spec["label"] = c.label
            if retry:
                spec["retry"] = retry
            timeout = class_timeout(c)
            if timeout is not None:
                spec["timeout_s"] = timeout
            on_error = self._on_error(c, plait_type)
            if on_error is not None:
                spec["on_error"] = on_error
        if c.position is not None:
            spec["position"] = {"x": c.position[0], "y": c.position[1]}
        return spec

    def _v1_answers(
        self, routes: dict[str, list[tuple[str, str]]], nodes: dict[str | None, list[dict[str, Any]]]
    ) -> None:
        """A v1 Answer sits in RAGFlow's conversation loop (begin -> Answer -> ... -> Answer): it
        shows what comes back to it and waits for the next user turn. plait runs one turn per run,
        so the Answer's entry links go straight on to its downstream and the Answer becomes the
        turn's final message, showing what loops back to it."""
        for cid in list(routes):
            c = self.c[cid]
            if c.name.lower() != "answer" or not routes[cid] or self._verbatim(c):
                continue
            reach = _reachable(routes, [t for _, t in routes[cid]])
            if cid not in reach:
                continue  # not in a loop: an ordinary message
            ups = [u for u, pairs in routes.items() if any(t == cid for _, t in pairs)]
            back = [u for u in ups if u in reach]
            after = [t for _, t in routes[cid]]
            for u in ups:
                if u in back:
                    continue
                routes[u] = [
                    p
                    for pair in routes[u]
                    for p in ([(pair[0], t) for t in after] if pair[1] == cid else [pair])
                ]
            routes[cid] = []
            text = "\n".join(filter(None, (self.output_of(u) for u in back)))
            for spec in nodes.get(self.parent(c), []):
                if spec["id"] == self.node_id(cid):
                    spec["config"] = {"text": text}
            self.warn(
                f"{cid}: RAGFlow v1's Answer waits for the next user turn; in plait each turn is a run, "
                "so it shows the reply and the run ends"
            )

    def _break_cycles(self, routes: dict[str, list[tuple[str, str]]]) -> None:
        """Links that close a cycle (RAGFlow runs them again; plait repeats only loop bodies) are
        dropped with a warning, found depth-first from the start."""
        state: dict[str, int] = {}
        order = sorted(routes, key=lambda k: (self.c[k].name.lower() != "begin", list(routes).index(k)))
        for root in order:
            if root in state:
                continue
            stack: list[tuple[str, int]] = [(root, 0)]
            state[root] = 1
            while stack:
                cid, i = stack[-1]
                pairs = routes.get(cid, [])
                if i >= len(pairs):
                    state[cid] = 2
                    stack.pop()
                    continue
                stack[-1] = (cid, i + 1)
                target = pairs[i][1]
                if state.get(target) == 1:
                    routes[cid] = [p for p in pairs if p[1] != target]
                    stack[-1] = (cid, i)
                    self.warn(
                        f"{cid} -> {target} closes a cycle: plait repeats only loop bodies, so the link was dropped"
                    )
                elif target not in state:
                    state[target] = 1
                    stack.append((target, 0))

    def _routes(self, c: Component, b: Built) -> list[tuple[str, str]]:
        gotos = _gotos(c)
        return [(port, t) for port, t in self._all_routes(c, b) if t not in gotos]

    def _all_routes(self, c: Component, b: Built) -> list[tuple[str, str]]:
        if self._verbatim(c) and c.plait is not None and isinstance(c.plait.get("edges"), list):
            return [
                (str(e.get("source_port") or "out"), str(e.get("target")))
                for e in c.plait["edges"]
                if isinstance(e, dict) and e.get("target") in c.downstream
            ]
        if b.routes is not None:
            return b.routes
        return [(b.port, t) for t in c.downstream]

    def _container(self, c: Component) -> Built:
        p = c.params
        if c.name.lower() in MAP_NAMES:
            items = self.ref(p.get("items_ref") or "")
            if not items:
                self.warn(f"{c.id}: the Iteration has no items_ref; it maps over an empty list")
                items = []
            return Built("map", {"items": items, "body": {"nodes": [], "edges": []}})
        config: dict[str, Any] = {"body": {"nodes": [], "edges": []}}
        count = p.get("maximum_loop_count")
        config["max_iterations"] = (
            int(count) if isinstance(count, (int, float)) and 1 <= count <= 100_000 else 100
        )
        variables: dict[str, Any] = {}
        for v in as_list(p.get("loop_variables")):
            if isinstance(v, dict) and v.get("variable"):
                value = v.get("value")
                variables[str(v["variable"])] = (
                    self.ref(value) if v.get("input_mode") == "variable" else value
                )
        until: list[dict[str, Any]] = []
        for cond in as_list(p.get("loop_termination_condition")):
            if isinstance(cond, dict) and cond.get("variable"):
                op = str(cond.get("operator") or "=")
                item = {"ref": self.ref(cond["variable"]), "op": OPERATORS.get(op.lower(), op)}
                if item["op"] not in ("empty", "not_empty"):
                    value = cond.get("value")
                    item["value"] = self.ref(value) if cond.get("input_mode") == "variable" else value
                until.append(item)
        logic = str(p.get("logical_operator") or "and").lower()
        if any(x.name.lower() in EXIT_LOOP_NAMES and x.parent == c.id for x in self.c.values()):
            variables[_exit_var(c)] = False
            exit_cond = {"ref": "{{vars." + _exit_var(c) + "}}", "op": "==", "value": True}
            if len(until) > 1 and logic == "and":
                self.warn(
                    f"{c.id}: its ExitLoop and its 'and' termination conditions cannot both be kept; "
                    "the loop ends on ExitLoop or at max_iterations"
                )
                until = []
            until.append(exit_cond)
            logic = "or"
        if variables:
            config["variables"] = variables
        if until:
            config["until"] = until
            config["logic"] = "or" if logic == "or" else "and"
        else:
            self.warn(
                f"{c.id}: the loop has no termination condition; it runs {config['max_iterations']} times"
            )
        return Built("loop", config)

    def _enclosing_loop(self, c: Component) -> Component | None:
        for scope in self.scopes(self.parent(c)):
            if scope is not None and self.c[scope].name.lower() in LOOP_NAMES:
                return self.c[scope]
        return None

    def _sub_agents(self, c: Component, b: Built) -> None:
        subs = [s for s, parent in self.sub_agent_of.items() if parent == c.id]
        if not subs or self._verbatim(c):
            return
        taken: set[str] = set()
        out = []
        for sid in subs:
            sub = self.c[sid]
            name = safe_name(sub.label or sid, "agent", _SUB_NAME)
            while name.lower() in taken:
                name += "_"
            taken.add(name.lower())
            description = str(
                sub.params.get("description") or sub.params.get("user_prompt") or f"the {name} agent"
            )
            settings = agent_settings(sub, self)
            if any(parent == sid for parent in self.sub_agent_of.values()):
                self.warn(f"{sid}: plait's sub-agents are one level deep; its own sub-agents were dropped")
            out.append({"name": name, "description": description, "agent": settings})
            if retry_policy(sub.params):
                self.warn(f"{sid}: a sub-agent's retry settings are not kept")
        b.config["sub_agents"] = out

    def _on_error(self, c: Component, plait_type: str) -> dict[str, Any] | None:
        """RAGFlow's exception handling as the node's `on_error` (None: a failure fails the run).

        As RAGFlow's canvas: with an `exception_method`, a failure goes to `exception_goto` when it
        names components (`route`: the error port's edges are made with the links), else the
        component outputs `exception_default_value` when there is one (`default`)."""
        method = str(c.params.get("exception_method") or "").strip().lower()
        if not method:
            return None
        if _gotos(c):
            return {"mode": "route"}
        value = c.params.get("exception_default_value")
        if value is None or value == "":
            self.warn(
                f"{c.id}: its exception handling ({method}) names no exception_goto and no "
                "exception_default_value: a failure fails the run"
            )
            return None
        if plait_type == "message":
            value = {"content": value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}
        return {"mode": "default", "default": value}

    def _generated_nodes(
        self, nodes: dict[str | None, list[dict[str, Any]]], containers: dict[str, dict[str, Any]]
    ) -> None:
        """The nodes no component stands for: each map's outputs, then the `assign` nodes that
        copy body values read outside their body into variables."""
        for cid in containers:
            c = self.c[cid]
            if c.name.lower() not in MAP_NAMES:
                continue
            for name, ref_text in _map_outputs(c).items():
                self.current = self._body_probe(c)
                value = self.ref(ref_text)
                self.current = None
                target = parse_bare(ref_text)
                requires = []
                if target is not None and target.root in self.by_lower:
                    requires = [self.node_id(self.by_lower[target.root].id)]
                nid = f"{self.node_id(c.id)}_{safe_name(name, 'output')}"
                spec: dict[str, Any] = {"id": nid, "type": "output", "config": {"name": name, "value": value}}
                if requires:
                    spec["requires"] = requires
                nodes.setdefault(c.id, []).append(spec)
                self.generated.append(nid)
        for cid, var in self.exposed.items():
            c = self.c[cid]
            scope = self.parent(c)
            nid = f"{self.node_id(cid)}_value"
            nodes.setdefault(scope, []).append(
                {
                    "id": nid,
                    "type": "assign",
                    "requires": [self.node_id(cid)],
                    "config": {
                        "assignments": [
                            {"variable": var, "op": "overwrite", "value": "{{" + self.node_id(cid) + "}}"}
                        ]
                    },
                }
            )
            self.generated.append(nid)

    def _body_probe(self, container: Component) -> Component:
        """A stand-in component inside `container`'s body, to rewrite references as its body sees them."""
        return Component(id=f"{container.id}#body", name="", params={}, parent=container.id)

    def _document(
        self,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        inputs: dict[str, Any] | None,
        flow_id: str | None,
    ) -> dict[str, Any]:
        prev = self.previous
        doc: dict[str, Any] = {"schema": SCHEMA_ID, "id": flow_id or prev.get("id") or "ragflow-agent"}
        for key, fallback in (("name", "title"), ("description", "description")):
            text = prev.get(key) or text_of(self.wrapper.get(fallback))
            if text:
                doc[key] = text
        begin = next((c for c in self.c.values() if c.name.lower() == "begin"), None)
        if (
            begin is not None
            and self._verbatim(begin)
            and begin.plait is not None
            and "inputs" in begin.plait
        ):
            inputs = begin.plait["inputs"]
        if inputs:
            doc["inputs"] = inputs
        if isinstance(prev.get("settings"), dict):
            doc["settings"] = prev["settings"]
        variables = dict(self.dsl.variables)
        for key, value in self.dsl.globals.items():
            if isinstance(key, str) and key.startswith("env.") and key[4:] not in variables:
                variables[key[4:]] = value
        if variables:
            doc["variables"] = variables
        doc["nodes"] = nodes
        doc["edges"] = edges
        meta: dict[str, Any] = {}
        if self.origin:
            meta["components"] = self.origin
        if self.generated:
            meta["generated"] = self.generated
        if self.exposed:
            meta["exposed"] = self.exposed
        extra = {k: v for k, v in as_dict(prev.get("metadata")).items() if k != FORMAT}
        doc["metadata"] = {**extra, FORMAT: meta} if meta else extra
        if not doc["metadata"]:
            del doc["metadata"]
        return doc


_SUB_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


def _reachable(routes: dict[str, list[tuple[str, str]]], start: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        cid = todo.pop()
        if cid not in seen:
            seen.add(cid)
            todo += [t for _, t in routes.get(cid, [])]
    return seen


def _gotos(c: Component) -> set[str]:
    """Where a failure of `c` goes (RAGFlow's `exception_method: goto`, made the node's `error`
    port): not a normal link. "comment" means the default value instead."""
    method = str(c.params.get("exception_method") or "").strip().lower()
    if not method or method == "comment":
        return set()
    return set(str_list(c.params.get("exception_goto")))


def _exit_var(loop: Component) -> str:
    return f"{safe_name(loop.id, 'loop')}_exit"


def _loop_variables(c: Component) -> set[str]:
    return {
        str(v.get("variable"))
        for v in as_list(c.params.get("loop_variables"))
        if isinstance(v, dict) and v.get("variable")
    }


def _map_outputs(c: Component) -> dict[str, str]:
    outputs = c.params.get("outputs")
    out: dict[str, str] = {}
    if isinstance(outputs, dict):
        for name, spec in outputs.items():
            if isinstance(spec, dict) and isinstance(spec.get("ref"), str) and spec["ref"]:
                out[str(name)] = spec["ref"]
    return out


def _tool_agents(c: Component) -> list[dict[str, Any]]:
    return [spec for spec in as_list(c.params.get("tools")) if is_sub_agent(spec)]
