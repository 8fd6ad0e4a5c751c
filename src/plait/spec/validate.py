"""Static validation of a flow document: every problem at once, each located and with a fix.

The node catalog (the registry of node types) lives in a higher layer, so it is passed in;
this module only relies on the small `NodeTypeInfo` protocol below.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, ClassVar, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ValidationError

from plait.expr import TemplateError, find_refs
from plait.spec.models import ERROR_PORT, RESERVED_IDS, FlowDocument, GraphSpec, NodeSpec
from plait.spec.problems import Problem


def routes_errors(spec: NodeSpec) -> bool:
    """Whether the node's failures go to its `error` output port (`on_error.mode: route`)."""
    return spec.on_error is not None and spec.on_error.mode == "route"


def _on_error_problems(spec: NodeSpec, nid: str) -> list[Problem]:
    on_error = spec.on_error
    if on_error is None or on_error.mode == "default" or on_error.default is None:
        return []
    return [
        Problem(
            "invalid_on_error",
            f"on_error.default is used only with mode 'default' (the mode is {on_error.mode!r})",
            nid,
            "on_error.default",
            "set on_error.mode to 'default', or remove on_error.default",
        )
    ]


SPECIAL_ROOTS = frozenset({"inputs", "vars", "sys", "env"})
EDGE_LLM_ROOTS = frozenset({"input"})


class NodeTypeInfo(Protocol):
    Config: ClassVar[type[BaseModel]]
    input_ports: ClassVar[tuple[str, ...]]
    late_bound_fields: ClassVar[frozenset[str]]

    @classmethod
    def output_ports(cls, config: BaseModel) -> list[str]: ...

    @classmethod
    def subgraphs(cls, config: BaseModel) -> dict[str, GraphSpec]: ...

    @classmethod
    def body_aliases(cls, config: BaseModel) -> frozenset[str]: ...

    @classmethod
    def reference_texts(cls, config: BaseModel) -> list[tuple[str, Any]]: ...


class NodeCatalog(Protocol):
    def get(self, name: str) -> type[NodeTypeInfo] | None: ...

    def names(self) -> list[str]: ...


def validate_document(doc: FlowDocument, catalog: NodeCatalog) -> list[Problem]:
    problems: list[Problem] = []
    for label, schema in (("inputs", doc.inputs),):
        problems.extend(_schema_problems(schema, None, label))
    aliases: frozenset[str] = frozenset()
    if doc.settings.policy == "edge_llm":
        # Under the edge-LLM policy a node's templates may use `{{input}}`: the decided input.
        aliases = EDGE_LLM_ROOTS
        if doc.settings.decider is None:
            problems.append(
                Problem(
                    "missing_decider",
                    "policy 'edge_llm' needs a decider model",
                    None,
                    "settings.decider",
                    'add settings.decider = {"provider": "openai", "model": "gpt-4o-mini"}',
                )
            )
    _validate_graph(doc, catalog, problems, outer_allowed=frozenset(), aliases=aliases, prefix="")
    return problems


def _validate_graph(
    graph: GraphSpec,
    catalog: NodeCatalog,
    problems: list[Problem],
    *,
    outer_allowed: frozenset[str],
    aliases: frozenset[str],
    prefix: str,
) -> None:
    nodes: dict[str, NodeSpec] = {}
    configs: dict[str, BaseModel] = {}
    types: dict[str, type[NodeTypeInfo]] = {}
    for spec in graph.nodes:
        nid = prefix + spec.id
        key = spec.id.lower()
        if key in nodes:
            problems.append(
                Problem(
                    "duplicate_id",
                    f"node id {spec.id!r} is used more than once (ids are case-insensitive)",
                    nid,
                    "id",
                    "give each node a unique id",
                )
            )
            continue
        if key in RESERVED_IDS:
            problems.append(
                Problem(
                    "reserved_id", f"{spec.id!r} is a reserved reference root", nid, "id", "rename the node"
                )
            )
        nodes[key] = spec
        cls = catalog.get(spec.type)
        if cls is None:
            close = difflib.get_close_matches(spec.type, catalog.names(), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else "run `plait nodes` to list the types"
            problems.append(Problem("unknown_type", f"unknown node type {spec.type!r}", nid, "type", hint))
            continue
        types[key] = cls
        try:
            configs[key] = cls.Config.model_validate(spec.config)
        except ValidationError as exc:
            for err in exc.errors():
                field = "config." + ".".join(str(p) for p in err["loc"]) if err["loc"] else "config"
                problems.append(
                    Problem(
                        "invalid_config",
                        err["msg"],
                        nid,
                        field,
                        f"see `plait nodes {spec.type}` for the config schema",
                    )
                )
        problems.extend(_schema_problems(spec.input_schema, nid, "input_schema"))
        problems.extend(_schema_problems(spec.output_schema, nid, "output_schema"))
        problems.extend(_on_error_problems(spec, nid))

    preds: dict[str, set[str]] = {k: set() for k in nodes}
    for i, edge in enumerate(graph.edges):
        src, dst = edge.source.lower(), edge.target.lower()
        where = f"{prefix}edge #{i} ({edge.source} -> {edge.target})"
        ok = True
        for end, key in (("source", src), ("target", dst)):
            if key not in nodes:
                problems.append(
                    Problem(
                        "unknown_node",
                        f"{end} node {getattr(edge, end)!r} does not exist",
                        where,
                        end,
                        _suggest(key, nodes) or "add that node or fix the id",
                    )
                )
                ok = False
        if not ok:
            continue
        if src in configs:
            ports = types[src].output_ports(configs[src])
            if routes_errors(nodes[src]):
                ports = [*ports, ERROR_PORT]
            if edge.source_port not in ports:
                problems.append(
                    Problem(
                        "unknown_port",
                        f"node {edge.source!r} has no output port {edge.source_port!r}",
                        where,
                        "source_port",
                        f"use one of: {', '.join(ports)}",
                    )
                )
        if dst in types:
            in_ports = types[dst].input_ports
            if "*" not in in_ports and edge.target_port not in in_ports:
                problems.append(
                    Problem(
                        "unknown_port",
                        f"node {edge.target!r} has no input port {edge.target_port!r}",
                        where,
                        "target_port",
                        f"use one of: {', '.join(in_ports) or '(none: it takes no input)'}",
                    )
                )
        if src == dst:
            problems.append(
                Problem(
                    "cycle",
                    "an edge connects a node to itself",
                    prefix + edge.source,
                    None,
                    "use a loop node to repeat work",
                )
            )
            continue
        preds[dst].add(src)
    for key, spec in nodes.items():
        for req in spec.requires:
            if req.lower() not in nodes:
                problems.append(
                    Problem(
                        "unknown_node",
                        f"requires unknown node {req!r}",
                        prefix + spec.id,
                        "requires",
                        _suggest(req.lower(), nodes) or "remove it or fix the id",
                    )
                )
            elif req.lower() != key:
                preds[key].add(req.lower())

    order, cyclic = _topological(preds)
    if cyclic:
        names = ", ".join(nodes[k].id for k in sorted(cyclic))
        problems.append(
            Problem(
                "cycle",
                f"these nodes form a cycle: {names}",
                prefix + nodes[min(cyclic)].id,
                None,
                "remove an edge, or put the repeated part in a loop node's body",
            )
        )
    ancestors: dict[str, frozenset[str]] = {}
    for key in order:
        acc: set[str] = set()
        for p in preds[key]:
            acc.add(p)
            acc |= ancestors.get(p, frozenset())
        ancestors[key] = frozenset(acc)

    for key, spec in nodes.items():
        if key not in configs:
            continue
        cls, config = types[key], configs[key]
        allowed = ancestors.get(key, frozenset()) | outer_allowed
        _check_references(cls, config, spec, prefix, nodes, allowed, aliases, problems)
        for field, body in cls.subgraphs(config).items():
            _validate_graph(
                body,
                catalog,
                problems,
                outer_allowed=allowed,
                aliases=aliases | cls.body_aliases(config),
                prefix=f"{prefix}{spec.id}.{field}/",
            )


def _check_references(
    cls: type[NodeTypeInfo],
    config: BaseModel,
    spec: NodeSpec,
    prefix: str,
    nodes: dict[str, NodeSpec],
    allowed: frozenset[str],
    aliases: frozenset[str],
    problems: list[Problem],
) -> None:
    nid = prefix + spec.id
    own_aliases = cls.body_aliases(config)
    for field, value in cls.reference_texts(config):
        try:
            refs = find_refs(value)
        except TemplateError as exc:
            problems.append(
                Problem("invalid_template", str(exc), nid, f"config.{field}", "fix the template syntax")
            )
            continue
        late = field in cls.late_bound_fields
        for ref in refs:
            root = ref.root
            if root in SPECIAL_ROOTS or root in aliases or root in allowed or (late and root in own_aliases):
                continue
            if root in nodes and not late:
                problems.append(
                    Problem(
                        "unreachable_reference",
                        f"{ref.text} refers to node {nodes[root].id!r}, which cannot "
                        "have run before this node",
                        nid,
                        f"config.{field}",
                        f"add an edge (or a `requires`) from {nodes[root].id!r} to {spec.id!r}",
                    )
                )
            elif root not in nodes:
                problems.append(
                    Problem(
                        "dangling_reference",
                        f"{ref.text} refers to {root!r}, which is not an upstream node, "
                        "an input, a variable or sys/env",
                        nid,
                        f"config.{field}",
                        _suggest(root, nodes) or "fix the node id in the reference",
                    )
                )


def _topological(preds: dict[str, set[str]]) -> tuple[list[str], set[str]]:
    remaining = {k: len(v) for k, v in preds.items()}
    succs: dict[str, list[str]] = {k: [] for k in preds}
    for k, ps in preds.items():
        for p in ps:
            succs[p].append(k)
    order = [k for k, n in remaining.items() if n == 0]
    i = 0
    while i < len(order):
        for s in succs[order[i]]:
            remaining[s] -= 1
            if remaining[s] == 0:
                order.append(s)
        i += 1
    return order, {k for k, n in remaining.items() if n > 0}


def _suggest(key: str, nodes: Iterable[str]) -> str | None:
    close = difflib.get_close_matches(key, list(nodes), n=1)
    return f"did you mean {close[0]!r}?" if close else None


def _schema_problems(schema: dict[str, Any] | None, node_id: str | None, field: str) -> list[Problem]:
    if schema is None:
        return []
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        path = "/".join(str(p) for p in exc.path) or "(root)"
        return [
            Problem(
                "invalid_schema",
                f"not a valid JSON Schema at {path}: {exc.message}",
                node_id,
                field,
                "fix the schema (JSON Schema 2020-12)",
            )
        ]
    return []
