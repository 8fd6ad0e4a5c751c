"""Run one node of a flow's draft ("Run this step" in the editor), with the inputs it had in an
earlier run of the flow, or with inputs the user pinned.

Why a document and not an engine mode: the run must be an ordinary run (its row, its events, the
sandbox for user code, secrets, cancel, the run inspector, queue mode), so it goes through
`RunService.start_document` like the assistant's runs. The document it runs is built here:

- the node as it is in the draft now (the config being tried), with a fresh `requires` list;
- one *stub* per upstream node (an ancestor through edges and `requires`) that produced an output
  in the earlier run: an `output` node with the ancestor's id whose value is that output, passed
  through the document's variables (`{{vars.<STEP_VAR>.<i>}}`: a whole reference keeps its type
  and is never rendered again). So `{{classify.label}}` in the node's config reads what it read
  then; stubs the node got no edge input from are in its `requires` (they must have run first);
- edges from the stubs into the node, as its input arrived in the earlier run (its recorded input
  sources: which source, port and target port delivered), or, with pinned inputs, one stub per
  target port delivering the pinned value.

Nothing downstream of the node runs. The run is a draft run of the flow (it shows in the flow's
run history); its inputs are the earlier run's (for `{{inputs.x}}`).
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

from plait import RunResult
from plait.engine.checkpoint import port_value
from plait.service.errors import Invalid, NotFound
from plait.service.runs.facade import RunService

STEP_VAR = "plait_step_values"  # the flow variable the stubs read their values from
RECENT_RUNS = 10  # how many of the flow's newest runs are looked at for the node's inputs


@dataclass(frozen=True, slots=True)
class EarlierRun:
    """What a run of the flow recorded that a one-node run reuses."""

    run_id: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]  # node id -> output, for the nodes that ended ok
    input_sources: dict[str, list[tuple[str, str, str]]]  # node id -> (source, port, target port)

    @classmethod
    def from_detail(cls, detail: dict[str, Any]) -> EarlierRun:
        outputs: dict[str, Any] = {}
        sources: dict[str, list[tuple[str, str, str]]] = {}
        for node_id, n in (detail.get("nodes") or {}).items():
            if n.get("status") == "ok":
                outputs[node_id] = n.get("output")
            raw = n.get("input_sources")
            if raw:
                sources[node_id] = [(s["node"], s["port"], s["target_port"]) for s in raw]
        return cls(str(detail["id"]), dict(detail.get("inputs") or {}), outputs, sources)


@dataclass(slots=True)
class StepDocument:
    """The document of a one-node run and what it is made of."""

    document: dict[str, Any]
    node_id: str  # as spelled in the draft
    stubs: list[str] = field(default_factory=list)  # upstream nodes given their earlier output
    missing: list[str] = field(default_factory=list)  # upstream nodes without an earlier output


def find_node(draft: dict[str, Any], node_id: str) -> dict[str, Any] | None:
    """The draft's top-level node `node_id` (ids are case-insensitive)."""
    key = node_id.lower()
    for node in draft.get("nodes") or []:
        if isinstance(node, dict) and str(node.get("id", "")).lower() == key:
            return node
    return None


def ancestors(draft: dict[str, Any], node_id: str) -> list[str]:
    """The nodes upstream of `node_id` (through edges and `requires`), in document order."""
    into: dict[str, set[str]] = {}
    for e in draft.get("edges") or []:
        into.setdefault(str(e.get("target", "")).lower(), set()).add(str(e.get("source", "")).lower())
    for n in draft.get("nodes") or []:
        for r in n.get("requires") or []:
            into.setdefault(str(n.get("id", "")).lower(), set()).add(str(r).lower())
    seen: set[str] = set()
    stack = [node_id.lower()]
    while stack:
        for src in into.get(stack.pop(), ()):
            if src not in seen:
                seen.add(src)
                stack.append(src)
    seen.discard(node_id.lower())
    return [str(n["id"]) for n in draft.get("nodes") or [] if str(n.get("id", "")).lower() in seen]


def _lookup(values: dict[str, Any], node_id: str) -> tuple[bool, Any]:
    if node_id in values:
        return True, values[node_id]
    key = node_id.lower()
    for k, v in values.items():
        if k.lower() == key:
            return True, v
    return False, None


def _free_id(taken: set[str], wanted: str) -> str:
    candidate, i = wanted, 2
    while candidate.lower() in taken:
        candidate, i = f"{wanted}_{i}", i + 1
    taken.add(candidate.lower())
    return candidate


def step_document(
    draft: dict[str, Any],
    node_id: str,
    earlier: EarlierRun | None,
    pinned: dict[str, Any] | None = None,
) -> StepDocument:
    """The document that runs only `node_id` of `draft` (see the module docstring). `pinned`:
    {target port: value} delivered to the node instead of what the earlier run delivered."""
    node = find_node(draft, node_id)
    if node is None:
        raise NotFound(
            f"the flow has no node {node_id!r} (at its top level)",
            hint="select a node of the canvas; nodes inside loop and map bodies run with their loop",
        )
    target = copy.deepcopy(node)
    target_id = str(target["id"])
    outputs = earlier.outputs if earlier else {}
    values: list[Any] = []
    nodes: list[dict[str, Any]] = []
    taken = {target_id.lower()}
    step = StepDocument({}, target_id)

    def stub(stub_id: str, value: Any, label: str) -> dict[str, Any]:
        values.append(value)
        return {
            "id": stub_id,
            "type": "output",
            "label": label,
            "config": {
                "name": f"step input {stub_id}",
                "value": f"{{{{vars.{STEP_VAR}.{len(values) - 1}}}}}",
            },
        }

    for up in ancestors(draft, target_id):
        found, value = _lookup(outputs, up)
        if not found:
            step.missing.append(up)
            continue
        taken.add(up.lower())
        nodes.append(stub(up, value, f"{up} (earlier output)"))
        step.stubs.append(up)

    edges: list[dict[str, Any]] = []
    if pinned is not None:
        for port, value in pinned.items():
            stub_id = _free_id(taken, f"pinned_{port}")
            nodes.append(stub(stub_id, value, f"pinned input {port}"))
            edges.append({"source": stub_id, "target": target_id, "target_port": str(port)})
    else:
        found, recorded = _lookup(earlier.input_sources, target_id) if earlier else (False, None)
        sources: list[tuple[str, str, str]] = list(recorded) if found and recorded else []
        if not found:  # the node did not run then (new, or not reached): its edges as drawn now
            for e in draft.get("edges") or []:
                if str(e.get("target", "")).lower() == target_id.lower():
                    src = str(e.get("source", ""))
                    sources.append(
                        (src, str(e.get("source_port") or "out"), str(e.get("target_port") or "in"))
                    )
        stubbed = {s.lower(): s for s in step.stubs}
        for src, port, target_port in sources:
            if src.lower() not in stubbed:
                continue
            _, output = _lookup(outputs, src)
            value = port_value(output, port)
            if value is output:
                edges.append(
                    {"source": stubbed[src.lower()], "target": target_id, "target_port": target_port}
                )
            else:  # the port delivered part of the output: a stub of its own delivers that part
                stub_id = _free_id(taken, f"{src}_{port}")
                nodes.append(stub(stub_id, value, f"{src}.{port} (earlier output)"))
                edges.append({"source": stub_id, "target": target_id, "target_port": target_port})
    wired = {str(e["source"]).lower() for e in edges}
    target["requires"] = [s for s in step.stubs if s.lower() not in wired]
    if not target["requires"]:
        target.pop("requires")
    nodes.append(target)
    variables = dict(draft.get("variables") or {})
    variables[STEP_VAR] = values
    settings = {k: v for k, v in (draft.get("settings") or {}).items() if k not in ("policy", "decider")}
    step.document = {
        "schema": draft.get("schema", "plait/flow@1"),
        "name": f"{draft.get('name') or 'flow'}: step {target_id}",
        "description": f"Runs only {target_id}, with the inputs of run {earlier.run_id}"
        if earlier
        else f"Runs only {target_id}",
        "inputs": {"type": "object"},
        "settings": settings,
        "variables": variables,
        "nodes": nodes,
        "edges": edges,
    }
    return step


@dataclass(frozen=True, slots=True)
class StepStarted:
    run_id: str
    node_id: str
    from_run: str | None
    stubs: list[str]
    missing: list[str]
    pinned: bool
    task: asyncio.Task[RunResult | None]


class NodeRuns:
    """Starts one-node runs of a flow's draft through `RunService.start_document`."""

    def __init__(self, runs: RunService) -> None:
        self.runs = runs

    async def earlier_run(self, flow_id: str, node_id: str, run_id: str | None) -> EarlierRun | None:
        """The run whose outputs a one-node run reuses: `run_id` (it must be a run of the flow),
        else the newest of the flow's recent runs in which the node got its input or ran, else
        the newest with any output; None when the flow has none."""
        if run_id is not None:
            detail = await self.runs.get(run_id)
            if detail.get("flow_id") != flow_id:
                raise Invalid(f"run {run_id!r} is not a run of flow {flow_id!r}")
            return EarlierRun.from_detail(detail)
        fallback: EarlierRun | None = None
        for summary in await self.runs.list(flow_id=flow_id, limit=RECENT_RUNS):
            earlier = EarlierRun.from_detail(await self.runs.get(summary["id"]))
            if _lookup(earlier.input_sources, node_id)[0] or _lookup(earlier.outputs, node_id)[0]:
                return earlier
            if fallback is None and earlier.outputs:
                fallback = earlier
        return fallback

    async def start(
        self,
        flow_id: str,
        draft: dict[str, Any],
        node_id: str,
        *,
        earlier: EarlierRun | None,
        pinned: dict[str, Any] | None,
        inputs: dict[str, Any] | None,
        owner_id: str | None,
    ) -> StepStarted:
        """Start the run of `node_id` alone (the caller checked that `owner_id` may run the flow)."""
        step = step_document(draft, node_id, earlier, pinned)
        run_inputs = inputs if inputs is not None else (earlier.inputs if earlier else {})
        try:
            run_id, task = await self.runs.start_document(
                flow_id, step.document, run_inputs, owner_id=owner_id
            )
        except Invalid as exc:
            missing = f" (no earlier output of {', '.join(step.missing)})" if step.missing else ""
            raise Invalid(
                f"cannot run {step.node_id!r} alone{missing}: {exc.message}",
                details=exc.details,
                hint="run the whole flow once, or pin the node's inputs, then run this step again",
            ) from exc
        return StepStarted(
            run_id,
            step.node_id,
            earlier.run_id if earlier else None,
            step.stubs,
            step.missing,
            pinned is not None,
            task,
        )


__all__ = [
    "STEP_VAR",
    "EarlierRun",
    "NodeRuns",
    "StepDocument",
    "StepStarted",
    "ancestors",
    "find_node",
    "step_document",
]
