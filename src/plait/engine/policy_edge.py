"""The edge-LLM policy (`settings.policy = "edge_llm"`): a model decides what runs next.

This is seed 002's orchestrator loop on top of the dataflow `Runner`, kept in its own module so
the dataflow hot path stays as it is. The runner supplies node execution, events, checkpoints,
interrupts and resume; `EdgeRunner` replaces only the scheduling step:

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
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from plait.engine import events as ev
from plait.engine.checkpoint import Checkpoint, NodeDelta
from plait.engine.plan import Plan, PlanNode
from plait.engine.runner import NodeRun, Runner, RunResult, _Outcome, lookup_secret
from plait.llm.base import ChatRequest, Message, Provider, ProviderError, Usage
from plait.llm.chat import chat_with, resolve
from plait.spec.models import DeciderSettings, FlowDocument

MODES = ("next", "parallel", "stop")
_MISSING = object()
# The decided input of the node whose task is running: the `{{input}}` reference root. Set right
# before the node's task is created, so each concurrently running node sees its own.
_current_input: ContextVar[Any] = ContextVar("plait_edge_input", default=_MISSING)

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


class DecisionError(ValueError):
    """A decider reply that is not a valid decision; `problems` says what is wrong, one per line."""

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
        raise DecisionError([f"the reply is not JSON ({exc.msg} at char {exc.pos}): {preview!r}"]) from None


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


class EdgeRunner(Runner):
    """A `Runner` whose scheduling step asks the decider model (see the module docstring)."""

    def __init__(self, plan: Plan, run_id: str, *, doc: FlowDocument, **kwargs: Any) -> None:
        super().__init__(plan, run_id, **kwargs)
        decider = doc.settings.decider
        if decider is None:  # validation reports it first; this guards hand-built documents
            raise ValueError("policy 'edge_llm' needs settings.decider (provider and model)")
        self.decider: DeciderSettings = decider
        self.meta = {"id": doc.id, "name": doc.name, "description": doc.description}
        version = doc.metadata.get("version")
        if version is not None:
            self.meta["version"] = version
        preds: list[list[int]] = [[] for _ in plan.nodes]
        for edge in plan.edges:
            preds[edge.target].append(edge.source)
        self.preds = [tuple(dict.fromkeys(p)) for p in preds]
        self.decisions: list[dict[str, Any]] = []
        self.dispatched: dict[int, Dispatch] = {}
        self.completed: list[int] = []
        self.stopped = False
        self.decider_usage = Usage()
        self._decider_task: asyncio.Task[Any] | None = None
        self._provider: tuple[Provider, list[str]] | None = None

    # ------------------------------------------------------------------ scheduling
    async def _drive(self) -> str:
        loop = asyncio.get_running_loop()
        done = self._done
        while True:
            while done:
                idx, outcome = done.popleft()
                await self._complete(idx, outcome)
            self.ready.clear()  # the dataflow queue; readiness here is `_ready_set`
            if self._cancelled or self._failure is not None:
                if self._tasks:
                    for task in self._tasks.values():
                        task.cancel()
                    await self._drain()
                return "cancelled" if self._cancelled else "failed"
            blocked = self._blocked()
            if not blocked:
                self._start_dispatched(loop)
            if done:
                continue
            if self._tasks:
                self._wakeup = loop.create_future()
                await self._wakeup
                continue
            if blocked:
                return "waiting"
            if self.stopped:
                return "completed"
            ready = self._ready_set()
            if not ready:
                return "waiting" if self.interrupts else "completed"
            await self._decide(ready)

    def _blocked(self) -> bool:
        return any(info.get("blocking", True) for info in self.interrupts.values())

    def _ready_set(self) -> list[int]:
        status, ok = self.status, ("ok", "skipped")
        return [
            i
            for i in range(len(status))
            if status[i] == "pending"
            and i not in self.dispatched
            and all(status[p] in ok for p in self.preds[i])
        ]

    def _start_dispatched(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start chosen nodes in decision order: `next` items one at a time, `parallel` ones together."""
        limit = self.plan.max_concurrency
        for idx, d in self.dispatched.items():
            if self.status[idx] != "pending":
                continue
            if self._tasks and (not d.parallel or len(self._tasks) >= limit):
                return
            pn = self.plan.nodes[idx]
            self._mark_started(pn, 1)
            token = _current_input.set(self._inputs_of(idx)[0])
            try:
                self._tasks[idx] = loop.create_task(self._run_task(pn))
            finally:
                _current_input.reset(token)
            if not d.parallel:
                return

    def _inputs_of(self, idx: int) -> tuple[Any, dict[str, Any]]:
        d = self.dispatched.get(idx)
        if d is not None and d.has_input:
            return d.input, {"in": d.input}
        return super()._inputs_of(idx)  # no decided input: what the edges delivered

    def lookup(self, root: str) -> Any:
        if root == "input" and root not in self.outputs:
            value = _current_input.get()
            if value is not _MISSING:
                return value
        return super().lookup(root)

    async def _complete(self, idx: int, outcome: _Outcome) -> None:
        if outcome.kind == "interrupt" and outcome.interrupt is not None:
            d = self.dispatched.get(idx)
            if d is not None:
                self.plan.nodes[idx].node.apply_task_hints(
                    outcome.interrupt.payload, d.human, d.input if d.has_input else None
                )
        await super()._complete(idx, outcome)
        if outcome.kind == "ok":
            self.completed.append(idx)

    def cancel(self) -> None:
        super().cancel()
        if self._decider_task is not None:
            self._decider_task.cancel()

    # ------------------------------------------------------------------ the decision step
    def decider_input(self, ready: list[int]) -> dict[str, Any]:
        """What the decider sees (seed 002, section 6)."""
        nodes = self.plan.nodes
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
            "input": self.inputs,
            "vars": self.vars,
            "completed": [
                {"key": nodes[i].id, "output": self.outputs.get(nodes[i].key)} for i in self.completed
            ],
        }
        skipped = [pn.id for pn in nodes if self.status[pn.index] == "skipped"]
        if skipped:
            context["skipped"] = skipped
        if self.interrupts:
            context["waiting"] = [nodes[i].id for i in self.interrupts]
        return {
            "flow": self.meta,
            "ready": ready_view,
            "context": context,
            "last": None
            if last is None
            else {"key": nodes[last].id, "output": self.outputs.get(nodes[last].key)},
        }

    def _request(self, ready: list[int]) -> ChatRequest:
        system = SYSTEM_PROMPT
        if self.decider.instructions:
            system += "\nInstructions for this flow:\n" + self.decider.instructions
        payload = json.dumps(self.decider_input(ready), ensure_ascii=False, default=str)
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

    def provider(self) -> tuple[Provider, list[str]]:
        """The decider's provider and model candidates, resolved once per run like a model node's
        (`plait.llm.chat.resolve`): a `script` in the document, else the run's `providers=`, else
        the registry of `plait.llm` with keys from the run's variables, then the environment."""
        if self._provider is None:
            script = self.decider.script
            if script is not None:
                # A resumed run goes on with the replies its earlier decisions did not use.
                script = script[sum(1 + len(d.get("rejected") or ()) for d in self.decisions) :]
            models = [self.decider.model, *self.decider.fallback_models]
            self._provider = resolve(self, self.decider.provider, models, script=script)
        return self._provider

    def secret(self, name: str) -> str | None:
        """A key by name for the decider's provider: the run's stored variables, then the environment."""
        return lookup_secret(self.env, name)

    async def _ask(self, request: ChatRequest) -> Any:
        provider, models = self.provider()
        self._decider_task = asyncio.ensure_future(chat_with(provider, models, request))
        try:
            return await self._decider_task
        finally:
            self._decider_task = None

    async def _decide(self, ready: list[int]) -> None:
        step = len(self.decisions) + 1
        who = f"edge-LLM decider ({'/'.join(filter(None, (self.decider.provider, self.decider.model)))})"
        request = self._request(ready)
        usage = Usage()
        rejected: list[dict[str, Any]] = []
        decision: dict[str, Any] | None = None
        for attempt in (1, 2):
            try:
                response = await self._ask(request)
            except asyncio.CancelledError:
                if self._cancelled:
                    return
                raise
            except ProviderError as exc:
                self._failure = (None, f"{who} failed at step {step}: {exc.message}")
                return
            except Exception as exc:  # noqa: BLE001 - an unknown provider, a bug in one: fail the run
                self._failure = (None, f"{who} failed at step {step}: {type(exc).__name__}: {exc}")
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
                    self.emit(ev.DecisionRejected(step, rejected, usage.as_dict()))
                    self._failure = (
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
        self.emit(ev.Decision.from_wire(record))
        self._apply(record, emit=True)
        if self.checkpointer is not None:
            await self.checkpointer.save_decision(self.run_id, record, self._take_unsaved())

    def _apply(self, record: dict[str, Any], *, emit: bool) -> None:
        """Put a decision into effect: while running (emit) and when replaying a checkpoint."""
        self.decisions.append(record)
        by_key, nodes = self.plan.by_key, self.plan.nodes
        parallel = record["mode"] == "parallel"
        for item in record["next"]:
            idx = by_key[item["node"].lower()]
            self.dispatched[idx] = Dispatch(item.get("input"), "input" in item, item.get("human"), parallel)
        for key in record["skips"]:
            self._skip(by_key[key.lower()], "decider", emit)
        if record["mode"] == "stop":
            self.stopped = True
            for pn in nodes:
                if self.status[pn.index] in ("pending", "waiting") and pn.index not in self._tasks:
                    self._skip(pn.index, "stop", emit)

    def _skip(self, idx: int, reason: str, emit: bool) -> None:
        pn = self.plan.nodes[idx]
        self.status[idx] = "skipped"
        self.interrupts.pop(idx, None)
        self.resume_data.pop(idx, None)
        nr = self.node_runs.get(idx)
        if nr is None:
            self.node_runs[idx] = NodeRun(pn.id, "skipped")
        else:
            nr.status = "skipped"
        if emit:
            self.emit(ev.NodeSkipped(reason), pn.id)

    # ------------------------------------------------------------------ results, restore
    def total_usage(self) -> dict[str, int]:
        total = super().total_usage()
        if self.decider_usage.total_tokens:
            for k, v in self.decider_usage.as_dict().items():
                total[k] = total.get(k, 0) + v
        return total

    async def _finish(self, status: str) -> RunResult:
        result = await super()._finish(status)
        result.decisions = list(self.decisions)
        return result

    def restore(self, checkpoint: Checkpoint) -> None:
        super().restore(checkpoint)
        for record in checkpoint.decisions:
            self._apply(record, emit=False)
            usage = record.get("usage") or {}
            self.decider_usage = self.decider_usage + Usage(
                int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
            )

    def apply_delta(self, delta: NodeDelta) -> None:
        super().apply_delta(delta)
        if delta.status == "ok":
            self.completed.append(self.plan.by_key[delta.node_id.lower()])
