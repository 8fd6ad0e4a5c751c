"""The edge-LLM policy (`settings.policy = "edge_llm"`): a model decides what runs next.

This is seed 002's orchestrator loop as a `SchedulingPolicy` (`plait.engine.policy`): the driver
supplies node execution, events, checkpoints, interrupts and resume; `EdgeLLMPolicy` makes only
the scheduling decisions:

1. a node is *ready* when it has not run, was not chosen yet, and every node it depends on
   (edges and `requires`) finished `ok` or `skipped`;
2. whenever nothing is running, the decider model gets the flow meta, the ready set (key, kind,
   type, input_schema, requires), the context (run input, vars, completed outputs) and the last
   completed node, and answers `{mode: next|parallel|stop, next: [{node, input, human?}], skips,
   reason}`;
3. the decision is checked (ready nodes only, inputs valid against each node's `input_schema`);
   a malformed or invalid one gets one corrective re-ask, a second failure fails the run;
4. skips mark nodes `skipped` (their dependants can still become ready, as the seed says);
   `next` runs the chosen nodes one after another, `parallel` concurrently, `stop` ends the run.

Every accepted decision is a `decision` event and a DecisionLog record: it is in
`RunResult.decisions`, reaches the checkpointer (`save_decision`, the store's `decisions` table)
and is replayed by `restore`, so a run resumed after a human task or a crash goes on exactly
where it stopped (chosen nodes that had not finished run again with their decided input).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import plait.engine.events as ev
from plait.engine.checkpoint import Checkpoint, NodeDelta
from plait.engine.context import Scope
from plait.engine.invoke import NodeOutcome, OutcomeKind
from plait.engine.plan import Plan, PlanNode
from plait.engine.policy import PolicyHost
from plait.engine.state import RunState
from plait.engine.status import NodeStatus, RunStatus
from plait.errors import PlaitError
from plait.llm.base import ChatRequest, Message, Provider, ProviderError, Usage
from plait.llm.chat import chat_with, resolve
from plait.spec.models import DeciderSettings, FlowDocument

MODES = ("next", "parallel", "stop")
_PENDING, _OK, _SKIPPED, _WAITING = NodeStatus.PENDING, NodeStatus.OK, NodeStatus.SKIPPED, NodeStatus.WAITING

_AI_TYPES = frozenset({"llm", "agent", "categorize"})

SYSTEM_PROMPT = """\
You schedule the steps of a workflow. At each step you get the flow, the nodes that are ready to \
run now (everything they depend on has finished), the context (the run input, the variables and \
the outputs of the completed nodes) and the last completed node. Decide what happens next.

Reply with ONE JSON object and nothing else:
{"mode": "next" | "parallel" | "stop",
 "next": [{"node": "<key of a ready node>", "input": <value conforming to that node's input_schema>,
           "human": {"message": "<what to ask the person>", "fields": [<extra form fields>]}}],
 "skips": ["<key of a ready node>"],
 "reason": "<short rationale>"}

Rules:
- "next": run the listed nodes one after another; "parallel": run them at the same time;
  "stop": end the run now ("next" must then be empty).
- Only keys from "ready" may appear in "next" or "skips", each at most once, never in both.
- "input" must conform to the node's "input_schema" (omit it when the node has none).
- "human" is optional and only for nodes of kind "human": the message shown to the person and,
  optionally, form fields to ask for besides the node's own, each {"name", "label"?, "type":
  "string" | "text" | "number" | "integer" | "boolean" | "select", "options"? (for select),
  "required"? (default true)}.
- Skipped nodes count as finished: nodes that depend on them can still become ready.
"""


class DecisionError(PlaitError, ValueError):
    """A decider reply that is not a valid decision; `problems` says what is wrong, one per line."""

    code = "invalid_decision"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(slots=True)
class Dispatch:
    """A node the decider chose: its input (when it gave one), its human-task hints, its mode."""

    input: Any
    has_input: bool
    human: dict[str, Any] | None
    parallel: bool


def node_kind(pn: PlanNode) -> str:
    """The seed's node kinds: `human` (pauses for a person), `ai` (model calls), `program` (others)."""
    if pn.spec.type == "human" or getattr(pn.node, "category", "") == "human":
        return "human"
    if pn.spec.type in _AI_TYPES:
        return "ai"
    return "program"


def _parse_json(text: str | None) -> Any:
    body = (text or "").strip()
    fenced = re.fullmatch(r"```[a-zA-Z]*\s*(.*?)\s*```", body, re.S)
    if fenced:
        body = fenced.group(1)
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        preview = body[:200] + ("..." if len(body) > 200 else "")
        raise DecisionError([f"the reply is not JSON ({exc.msg} at char {exc.pos}): {preview!r}"]) from exc


def parse_decision(text: str | None, plan: Plan, ready: list[int]) -> dict[str, Any]:
    """Check a decider reply against the contract; returns the normalised decision.

    Raises DecisionError listing every problem (each naming the item, node and field at fault).
    Accepted spellings: `node`, `nodeKey` or `key` for the node, a bare string for an item
    without input. An empty `next` with no skips means stop (the seed's "stop/empty").
    """
    data = _parse_json(text)
    if not isinstance(data, dict):
        raise DecisionError([f"the reply must be a JSON object, not {type(data).__name__}"])
    problems: list[str] = []
    ready_ids = {plan.nodes[i].key: i for i in ready}
    ready_list = ", ".join(plan.nodes[i].id for i in ready)

    def ready_node(raw: Any, where: str) -> int | None:
        if not isinstance(raw, str) or not raw:
            problems.append(f"{where}: the node key must be a non-empty string")
            return None
        idx = ready_ids.get(raw.lower())
        if idx is None:
            known = raw.lower() in plan.by_key
            why = "is not ready now" if known else "is not a node of this flow"
            problems.append(f"{where}: node {raw!r} {why} (ready: {ready_list})")
        return idx

    mode = data.get("mode")
    if not isinstance(mode, str) or mode.lower() not in MODES:
        problems.append(f"mode: must be one of next, parallel, stop (got {mode!r})")
        mode = None
    else:
        mode = mode.lower()
    raw_next = data.get("next", [])
    if raw_next is None:
        raw_next = []
    if not isinstance(raw_next, list):
        problems.append("next: must be a list of {node, input} objects")
        raw_next = []
    items: list[dict[str, Any]] = []
    seen: set[int] = set()
    for n, raw in enumerate(raw_next):
        where = f"next[{n}]"
        if isinstance(raw, str):
            raw = {"node": raw}
        if not isinstance(raw, dict):
            problems.append(f"{where}: must be an object with node and input")
            continue
        key = raw.get("node", raw.get("nodeKey", raw.get("key")))
        idx = ready_node(key, where)
        if idx is None:
            continue
        pn = plan.nodes[idx]
        if idx in seen:
            problems.append(f"{where}: node {pn.id!r} is listed twice")
            continue
        seen.add(idx)
        item: dict[str, Any] = {"node": pn.id}
        if "input" in raw:
            item["input"] = raw["input"]
        if pn.input_validator is not None:
            errors = sorted(
                pn.input_validator.iter_errors(raw.get("input")), key=lambda e: list(e.absolute_path)
            )
            if errors and "input" not in raw:
                problems.append(f"{where} (node {pn.id!r}): input is missing; it must match the input_schema")
            elif errors:
                for err in errors[:5]:
                    path = "/".join(str(p) for p in err.absolute_path) or "(root)"
                    problems.append(f"{where} (node {pn.id!r}): input/{path}: {err.message}")
        human = raw.get("human")
        if human is not None:
            hint_problems = type(pn.node).task_hint_problems(human)
            if hint_problems is None:  # a node that asks no one: its hints are ignored
                if not isinstance(human, dict):
                    problems.append(
                        f"{where} (node {pn.id!r}): human must be an object like {{'message': '...'}}"
                    )
            elif hint_problems:
                problems.extend(f"{where} (node {pn.id!r}): {p}" for p in hint_problems)
            else:
                item["human"] = human
        items.append(item)
    raw_skips = data.get("skips", [])
    if raw_skips is None:
        raw_skips = []
    if not isinstance(raw_skips, list):
        problems.append("skips: must be a list of node keys")
        raw_skips = []
    skips: list[str] = []
    for n, raw in enumerate(raw_skips):
        idx = ready_node(raw, f"skips[{n}]")
        if idx is None:
            continue
        pn = plan.nodes[idx]
        if idx in seen:
            problems.append(f"skips[{n}]: node {pn.id!r} is both in next and in skips")
            continue
        if pn.id not in skips:
            skips.append(pn.id)
    reason = data.get("reason", "")
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        reason = json.dumps(reason, default=str)
    if mode == "stop" and items:
        problems.append("next: must be empty when mode is stop (use mode next or parallel to run nodes)")
    if problems:
        raise DecisionError(problems)
    if not items and not skips:
        mode = "stop"  # the seed: "LLM returned stop/empty" completes the run
    return {"mode": mode, "next": items, "skips": skips, "reason": reason}


class InputScope:
    """References of a node the decider started: `{{input}}` is its decided input (unless a node
    is named `input`), everything else resolves in the run."""

    __slots__ = ("value", "run")

    def __init__(self, value: Any, run: PolicyHost) -> None:
        self.value = value
        self.run = run

    def lookup(self, root: str) -> Any:
        if root == "input" and root not in self.run.state.outputs:
            return self.value
        return self.run.lookup(root)


class EdgeLLMPolicy:
    """A `SchedulingPolicy` whose scheduling step asks the decider model (see the module docstring).

    One instance per run: it keeps the run's decisions, the nodes they chose and what completed.
    """

    runs_inline = False  # every chosen node runs as a task, in decision order

    def __init__(self, doc: FlowDocument, plan: Plan) -> None:
        decider = doc.settings.decider
        if decider is None:  # validation reports it first; this guards hand-built documents
            raise ValueError("policy 'edge_llm' needs settings.decider (provider and model)")
        self.plan = plan
        self.decider: DeciderSettings = decider
        self.meta: dict[str, Any] = {"id": doc.id, "name": doc.name, "description": doc.description}
        version = doc.metadata.get("version")
        if version is not None:
            self.meta["version"] = version
        preds: list[list[int]] = [[] for _ in plan.nodes]
        for edge in plan.edges:
            preds[edge.target].append(edge.source)
        self.preds = [tuple(dict.fromkeys(p)) for p in preds]
        self.records: list[dict[str, Any]] = []
        self.dispatched: dict[int, Dispatch] = {}
        self.completed: list[int] = []
        self.stopped = False
        self.decider_usage = Usage()
        self._decider_task: asyncio.Future[Any] | None = None
        self._provider: tuple[Provider, list[str]] | None = None

    # ------------------------------------------------------------------ scheduling
    def startable(self, run: PolicyHost) -> Iterator[int]:
        """Chosen nodes in decision order: `next` items one at a time, `parallel` ones together."""
        state, running = run.state, run.running
        state.ready.clear()  # the dataflow queue; readiness here is `_ready_set`
        if self._blocked(state):
            return
        limit = self.plan.max_concurrency
        for idx, d in self.dispatched.items():
            if state.status[idx] != _PENDING:
                continue
            if running and (not d.parallel or len(running) >= limit):
                return
            yield idx
            if not d.parallel:
                return

    async def idle(self, run: PolicyHost) -> RunStatus | None:
        state = run.state
        if self._blocked(state):
            return RunStatus.WAITING
        if self.stopped:
            return RunStatus.COMPLETED
        ready = self._ready_set(state)
        if not ready:
            return RunStatus.WAITING if state.interrupts else RunStatus.COMPLETED
        await self._decide(run, ready)
        return None

    def node_input(self, run: PolicyHost, idx: int) -> tuple[Any, dict[str, Any], Scope]:
        d = self.dispatched.get(idx)
        if d is not None and d.has_input:
            value, ports = d.input, {"in": d.input}
        else:  # no decided input: what the edges delivered
            value, ports = run.state.inputs_of(idx)
        return value, ports, InputScope(value, run)

    def _blocked(self, state: RunState) -> bool:
        return any(info.get("blocking", True) for info in state.interrupts.values())

    def _ready_set(self, state: RunState) -> list[int]:
        status, ok = state.status, (_OK, _SKIPPED)
        return [
            i
            for i in range(len(status))
            if status[i] == _PENDING
            and i not in self.dispatched
            and all(status[p] in ok for p in self.preds[i])
        ]

    def on_outcome(self, run: PolicyHost, idx: int, outcome: NodeOutcome) -> None:
        if outcome.kind == OutcomeKind.INTERRUPT and outcome.interrupt is not None:
            d = self.dispatched.get(idx)
            if d is not None:
                self.plan.nodes[idx].node.apply_task_hints(
                    outcome.interrupt.payload, d.human, d.input if d.has_input else None
                )
        elif outcome.kind == OutcomeKind.OK:
            self.completed.append(idx)

    def cancel(self) -> None:
        if self._decider_task is not None:
            self._decider_task.cancel()

    # ------------------------------------------------------------------ the decision step
    def decider_input(self, run: PolicyHost, ready: list[int]) -> dict[str, Any]:
        """What the decider sees (seed 002, section 6)."""
        nodes, state = self.plan.nodes, run.state
        ready_view = []
        for i in ready:
            pn = nodes[i]
            item: dict[str, Any] = {"key": pn.id, "kind": node_kind(pn), "type": pn.spec.type}
            if pn.spec.label:
                item["title"] = pn.spec.label
            if pn.spec.description:
                item["description"] = pn.spec.description
            item["input_schema"] = pn.spec.input_schema
            if self.preds[i]:
                item["requires"] = [nodes[p].id for p in self.preds[i]]
            ready_view.append(item)
        last = self.completed[-1] if self.completed else None
        context: dict[str, Any] = {
            "input": run.inputs,
            "vars": state.vars,
            "completed": [
                {"key": nodes[i].id, "output": state.outputs.get(nodes[i].key)} for i in self.completed
            ],
        }
        skipped = [pn.id for pn in nodes if state.status[pn.index] == _SKIPPED]
        if skipped:
            context["skipped"] = skipped
        if state.interrupts:
            context["waiting"] = [nodes[i].id for i in state.interrupts]
        return {
            "flow": self.meta,
            "ready": ready_view,
            "context": context,
            "last": None
            if last is None
            else {"key": nodes[last].id, "output": state.outputs.get(nodes[last].key)},
        }

    def _request(self, run: PolicyHost, ready: list[int]) -> ChatRequest:
        system = SYSTEM_PROMPT
        if self.decider.instructions:
            system += "\nInstructions for this flow:\n" + self.decider.instructions
        payload = json.dumps(self.decider_input(run, ready), ensure_ascii=False, default=str)
        keys = [self.plan.nodes[i].id for i in ready]
        schema = {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": list(MODES)},
                "next": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "node": {"type": "string", "enum": keys},
                            "input": {},
                            "human": {"type": "object"},
                        },
                        "required": ["node"],
                    },
                },
                "skips": {"type": "array", "items": {"type": "string", "enum": keys}},
                "reason": {"type": "string"},
            },
            "required": ["mode", "next", "skips", "reason"],
        }
        return ChatRequest(
            model=self.decider.model or "scripted",
            messages=[Message("system", system), Message("user", payload)],
            response_format={"type": "json_schema", "name": "decision", "schema": schema},
            temperature=self.decider.temperature,
            max_tokens=self.decider.max_tokens,
        )

    def provider(self, run: PolicyHost) -> tuple[Provider, list[str]]:
        """The decider's provider and model candidates, resolved once per run like a model node's
        (`plait.llm.chat.resolve`): a `script` in the document, else the run's `providers=`, else
        the registry of `plait.llm` with keys from the run's variables, then the environment."""
        if self._provider is None:
            script = self.decider.script
            if script is not None:
                # A resumed run goes on with the replies its earlier decisions did not use.
                script = script[sum(1 + len(d.get("rejected") or ()) for d in self.records) :]
            models = [self.decider.model, *self.decider.fallback_models]
            self._provider = resolve(run, self.decider.provider, models, script=script)
        return self._provider

    async def _ask(self, run: PolicyHost, request: ChatRequest) -> Any:
        provider, models = self.provider(run)
        self._decider_task = asyncio.ensure_future(chat_with(provider, models, request))
        try:
            return await self._decider_task
        finally:
            self._decider_task = None

    async def _decide(self, run: PolicyHost, ready: list[int]) -> None:
        step = len(self.records) + 1
        who = f"edge-LLM decider ({'/'.join(filter(None, (self.decider.provider, self.decider.model)))})"
        request = self._request(run, ready)
        usage = Usage()
        rejected: list[dict[str, Any]] = []
        decision: dict[str, Any] | None = None
        for attempt in (1, 2):
            try:
                response = await self._ask(run, request)
            except asyncio.CancelledError:
                if run.cancelled:
                    return
                raise
            except ProviderError as exc:
                run.state.fail(None, f"{who} failed at step {step}: {exc.message}")
                return
            except Exception as exc:  # noqa: BLE001 - an unknown provider, a bug in one: fail the run
                run.state.fail(None, f"{who} failed at step {step}: {type(exc).__name__}: {exc}")
                return
            usage = usage + response.usage
            self.decider_usage = self.decider_usage + response.usage
            try:
                decision = parse_decision(response.content, self.plan, ready)
                break
            except DecisionError as exc:
                rejected.append({"reply": response.content, "problems": exc.problems})
                if attempt == 2:
                    # Kept in the event log: what the model answered is what one needs to fix it.
                    run.emit(ev.DecisionRejected(step, rejected, usage.as_dict()))
                    run.state.fail(
                        None,
                        f"{who} gave an invalid decision at step {step}, also after one corrective re-ask: "
                        + "; ".join(exc.problems)
                        + " (fix: use a stronger decider model, or describe the nodes and their"
                        " input_schema more clearly in settings.decider.instructions)",
                    )
                    return
                request.messages = [
                    *request.messages,
                    Message("assistant", response.content or ""),
                    Message(
                        "user",
                        "That is not a valid decision:\n"
                        + "\n".join(f"- {p}" for p in exc.problems)
                        + "\nReply again with only the corrected JSON object.",
                    ),
                ]
        assert decision is not None
        last = self.completed[-1] if self.completed else None
        record: dict[str, Any] = {
            "step": step,
            **decision,
            "at": None if last is None else self.plan.nodes[last].id,
            "ready": [self.plan.nodes[i].id for i in ready],
            "usage": usage.as_dict(),
        }
        if rejected:
            record["rejected"] = rejected
        run.emit(ev.Decision.from_wire(record))
        self._apply(run, record, emit=True)
        await run.save_decision(record)

    def _apply(self, run: PolicyHost, record: dict[str, Any], *, emit: bool) -> None:
        """Put a decision into effect: while running (emit) and when replaying a checkpoint."""
        self.records.append(record)
        by_key, nodes, state = self.plan.by_key, self.plan.nodes, run.state
        parallel = record["mode"] == "parallel"
        for item in record["next"]:
            idx = by_key[item["node"].lower()]
            self.dispatched[idx] = Dispatch(item.get("input"), "input" in item, item.get("human"), parallel)
        for key in record["skips"]:
            self._skip(run, by_key[key.lower()], "decider", emit)
        if record["mode"] == "stop":
            self.stopped = True
            for pn in nodes:
                if state.status[pn.index] in (_PENDING, _WAITING) and pn.index not in run.running:
                    self._skip(run, pn.index, "stop", emit)

    def _skip(self, run: PolicyHost, idx: int, reason: str, emit: bool) -> None:
        run.state.skip(idx)
        if emit:
            run.emit(ev.NodeSkipped(reason), self.plan.nodes[idx].id)

    # ------------------------------------------------------------------ results, restore
    def usage(self) -> Mapping[str, int] | None:
        return self.decider_usage.as_dict() if self.decider_usage.total_tokens else None

    def decisions(self) -> list[dict[str, Any]]:
        return list(self.records)

    def restore(self, run: PolicyHost, checkpoint: Checkpoint) -> None:
        for record in checkpoint.decisions:
            self._apply(run, record, emit=False)
            usage = record.get("usage") or {}
            self.decider_usage = self.decider_usage + Usage(
                int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
            )

    def on_delta(self, run: PolicyHost, idx: int, delta: NodeDelta) -> None:
        if delta.status == _OK:
            self.completed.append(idx)


__all__ = ["DecisionError", "Dispatch", "EdgeLLMPolicy", "InputScope", "node_kind", "parse_decision"]
