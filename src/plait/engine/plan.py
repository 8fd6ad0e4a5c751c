"""Compile a validated graph once into an index-based plan the scheduler can walk cheaply."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

import plait.engine.events as ev
from plait.nodes.base import Node
from plait.nodes.registry import NodeRegistry
from plait.spec.models import FlowDocument, GraphSpec, NodeSpec
from plait.spec.problems import FlowValidationError
from plait.spec.validate import routes_errors, validate_document

DEFAULT_NODE_TIMEOUT_S = 600.0


@dataclass(slots=True, eq=False)
class PlanEdge:
    index: int
    source: int
    source_port: str
    target: int
    target_port: str
    control: bool  # a `requires` dependency: resolves, carries no value
    label: str
    fired: ev.EdgeFired  # its edge_fired payload: the same in every run, built once here


@dataclass(slots=True, eq=False)
class PlanNode:
    index: int
    id: str
    key: str
    spec: NodeSpec
    node: Node[Any]
    inline: bool
    timeout_s: float
    max_attempts: int
    retry_delay_s: float
    retry_backoff: float
    in_count: int = 0
    out_edges: list[PlanEdge] = field(default_factory=list)
    input_validator: Draft202012Validator | None = None
    output_validator: Draft202012Validator | None = None
    bodies: dict[str, Plan] = field(default_factory=dict)
    is_output: bool = False
    # on_error route: the ports a success fires when the node names none (all but `error`)
    ok_ports: tuple[str, ...] | None = None
    started: ev.NodeStarted = field(init=False)  # its node_started payload for a first attempt, built once

    def __post_init__(self) -> None:
        self.started = ev.NodeStarted(self.spec.type, 1)


@dataclass(slots=True, eq=False)
class Plan:
    nodes: list[PlanNode]
    edges: list[PlanEdge]
    by_key: dict[str, int]
    roots: list[int]
    max_concurrency: int
    in_counts: list[int] = field(init=False)  # per node: incoming edges (readiness)
    outputs: list[int] = field(init=False)  # the output nodes, in order

    def __post_init__(self) -> None:
        self.in_counts = [pn.in_count for pn in self.nodes]
        self.outputs = [pn.index for pn in self.nodes if pn.is_output]

    def node(self, node_id: str) -> PlanNode:
        return self.nodes[self.by_key[node_id.lower()]]

    def descendants(self, index: int) -> set[int]:
        seen: set[int] = set()
        stack = [index]
        while stack:
            for edge in self.nodes[stack.pop()].out_edges:
                if edge.target not in seen:
                    seen.add(edge.target)
                    stack.append(edge.target)
        return seen


def default_node_timeout() -> float:
    raw = os.environ.get("PLAIT_NODE_TIMEOUT_S")
    try:
        return float(raw) if raw else DEFAULT_NODE_TIMEOUT_S
    except ValueError:
        return DEFAULT_NODE_TIMEOUT_S


def compile_flow(doc: FlowDocument, registry: NodeRegistry) -> Plan:
    """Validate the document and compile it; raises FlowValidationError with every problem."""
    problems = validate_document(doc, registry)
    if problems:
        raise FlowValidationError(problems)
    return compile_graph(doc, registry, doc.settings.max_concurrency)


def compile_graph(graph: GraphSpec, registry: NodeRegistry, max_concurrency: int) -> Plan:
    """Compile an already validated graph (a flow or a loop/map body)."""
    fallback_timeout = default_node_timeout()
    nodes: list[PlanNode] = []
    by_key: dict[str, int] = {}
    for spec in graph.nodes:
        cls = registry.get(spec.type)
        assert cls is not None, f"unvalidated node type {spec.type}"
        config = cls.Config.model_validate(spec.config)
        retry = spec.retry
        pn = PlanNode(
            index=len(nodes),
            id=spec.id,
            key=spec.id.lower(),
            spec=spec,
            node=cls(spec.id, config),
            inline=cls.inline,
            timeout_s=spec.timeout_s or cls.default_timeout_s or fallback_timeout,
            max_attempts=retry.max_attempts if retry else 1,
            retry_delay_s=retry.delay_s if retry else 0.0,
            retry_backoff=retry.backoff if retry else 2.0,
            input_validator=_validator(spec.input_schema),
            output_validator=_validator(spec.output_schema),
            is_output=cls.is_output,
        )
        if routes_errors(spec):
            pn.ok_ports = tuple(cls.output_ports(config))
        # Retries, timeouts and schemas need the task path; inline is only for the plain case.
        if pn.max_attempts > 1 or spec.timeout_s or pn.input_validator or pn.output_validator:
            pn.inline = False
        for name, body in cls.subgraphs(config).items():
            pn.bodies[name] = compile_graph(body, registry, max_concurrency)
        by_key[pn.key] = pn.index
        nodes.append(pn)
    edges: list[PlanEdge] = []
    for e in graph.edges:
        src, dst = by_key[e.source.lower()], by_key[e.target.lower()]
        label = e.id or f"{nodes[src].id}:{e.source_port}->{nodes[dst].id}:{e.target_port}"
        fired = ev.EdgeFired(label, nodes[src].id, nodes[dst].id)
        edges.append(PlanEdge(len(edges), src, e.source_port, dst, e.target_port, False, label, fired))
    for pn in nodes:
        for req in pn.spec.requires:
            src = by_key[req.lower()]
            if src != pn.index:
                label = f"{nodes[src].id}=>{pn.id}"
                fired = ev.EdgeFired(label, nodes[src].id, pn.id)
                edges.append(PlanEdge(len(edges), src, "*", pn.index, "*", True, label, fired))
    for edge in edges:
        nodes[edge.source].out_edges.append(edge)
        nodes[edge.target].in_count += 1
    roots = [pn.index for pn in nodes if pn.in_count == 0]
    return Plan(nodes, edges, by_key, roots, max_concurrency)


def _validator(schema: dict[str, Any] | None) -> Draft202012Validator | None:
    return Draft202012Validator(schema) if schema is not None else None
