"""The flow builder: one tool-calling agent that builds, edits and runs flows (spec 1.7-1.8).

The agent works on the request's *working flow*, a copy of the canvas's draft, through the
toolkit (`plait.assistant.toolkit`). It calls tools until it answers in words. What the tools
change reaches the client as `flow_update` / `file_written` events:

- Incremental edits (add, remove, connect, configure) apply live, in order.
- Field edit proposals (`edit_field`) and plans (`propose_plan`) are shown to the user for a
  decision. After a plan the agent stops and waits.
- A whole new flow (`build_flow`, a `set_flow`) is a proposal, not sent as it happens. It is sent
  once at the end of the turn, holding the working flow as the turn left it, so later edits of
  the same turn are in it rather than replayed after it. It carries `auto_apply: true` when the
  same turn also ran the flow successfully (spec B53, decided from what happened, never from the
  wording). Otherwise it comes with a `flow_preview` and the `flow_proposal_ready` step, and the
  user applies it with Add or Replace.

Restore point (issue 13). Before the turn's first change reaches the client, the canvas's
draft is saved as a restore point (`restore_point`), and `complete.restore_version_id` names it.

Verification (spec B61). A turn that built a new flow and never ran it runs the flow
once, with probe inputs. A failure goes back to the agent to fix, at most `verify_attempts` runs
in all. An error outside the flow (a missing key, the network, a timeout) stops at once with a
caveat instead. Verification runs are real runs of the flow, but they never count as "the user
asked to run it" for auto-apply. `PLAIT_ASSISTANT_VERIFY_FLOWS=off` turns verification off.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from plait.assistant import flow_io
from plait.assistant.events import FileWritten, FlowPreview, FlowUpdate, Progress, Token
from plait.assistant.ports import Emit, ModelCall, NoTelemetry, Telemetry
from plait.assistant.toolkit import RUN_OK_STATUSES, Toolkit
from plait.llm.base import Message

log = logging.getLogger("plait.assistant")

MAX_AGENT_STEPS = 30
MAX_VERIFY_ATTEMPTS = 3
MAX_TOOL_RESULT_CHARS = 12_000  # what one tool result may add to the conversation
# Errors outside the flow: fixing the flow cannot help, so verification stops at once.
_EXTERNAL = re.compile(
    r"timed? ?out|timeout|connection|unreachable|network|dns|rate limit|api key|missing_key|"
    r"no api key|authentication|401|403|429|503|proxy|ssrf|not allowed to reach",
    re.IGNORECASE,
)

AGENT_SYSTEM_PROMPT = """\
You are plait's flow builder. plait runs flows: graphs of typed nodes (start, llm, agent, http,
code, switch, loop, map, human, output, custom components...) joined by edges from an output port
to an input port. You change the user's flow only through your tools, then answer briefly in the
user's language.

Rules:
- The canvas reference in the message is the flow as it is now. If it has nodes, change it with the
  incremental tools (add_component, connect_components, configure_component, remove_component);
  use build_flow only on an empty canvas.
- Call search_components and describe_component before adding a type you have not described in
  this conversation; never guess config fields or ports.
- build_flow takes the compact spec: `nodes:` lines `ID: type`, `edges:` lines `A.port -> B.port`,
  `config:` lines `ID.field: value` (`|` for multi-line text), optional `inputs:` lines
  `field: type`. Every node needs an edge when there are two or more. Do not follow a build_flow
  with incremental edits in the same turn: fix the spec and call build_flow again instead.
- For a large or ambiguous change, call propose_plan with a short markdown plan and stop.
- For a small, clear change to one field the user may want to review, use propose_field_edit.
- Run the flow with run_flow when the user asks to run or test it; report the result and the
  duration and tokens it returns.
- Use generate_component when no existing node type does what is needed, then use the class name
  it returns as a node type.
- Files (write_file, read_file, edit_file, glob_search, grep_search) live in the user's workspace;
  use them for documents the user asks for.
- When a tool returns an error, read it and fix the cause; do not repeat the same call.
- Never reveal secrets; values shown as ***REDACTED*** stay hidden.
"""

VERIFY_RETRY = (
    "I ran the flow to check it and the run failed:\n{error}\n\n"
    "Fix the flow with your tools (do not rebuild it from scratch unless you must), then stop."
)
VERIFY_EXTERNAL_CAVEAT = (
    "I built the flow and it is valid, but I could not run it here: {error} "
    "It should work once that is available on your side."
)
VERIFY_FAILED_CAVEAT = (
    "I built the flow but could not get it to run after {n} attempt(s). Last error: {error}"
)
NO_ANSWER = "Done."

ToolkitFactory = Callable[[ModelCall, Emit], Awaitable[Toolkit]]


@dataclass(slots=True)
class _Turn:
    """What the agent did in this turn (the reconciliation reads it, never the wording)."""

    text: str = ""
    saw_set_flow: bool = False
    tail_updates: int = 0  # flow updates after a set_flow (they are in the final set_flow)
    changed: bool = False  # any flow edit that applies live
    stopped_for_plan: bool = False
    restore_point_id: int | None = None
    restore_saved: bool = False
    verification_runs: int = 0
    verified: bool | None = None
    caveat: str | None = None
    events: list[str] = field(default_factory=list)


class FlowBuilderAgent:
    """A `FlowAgent` (plait.assistant.turn) for one request: its toolkit comes from `toolkits`,
    built inside the turn (the component generator needs the turn's model and stream)."""

    def __init__(
        self,
        toolkits: ToolkitFactory,
        *,
        max_steps: int = MAX_AGENT_STEPS,
        verify: bool = True,
        verify_attempts: int = MAX_VERIFY_ATTEMPTS,
        restore_point: Callable[[], Awaitable[int | None]] | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.telemetry: Telemetry = telemetry or NoTelemetry()
        self.toolkits = toolkits
        # Saves the canvas's draft before the turn's first change (issue 13 item 4), once.
        self.restore_point = restore_point
        self.max_steps = max_steps
        self.verify = verify
        self.verify_attempts = verify_attempts

    async def run(
        self, request: Any, intent: str, text: str, models: ModelCall, emit: Emit
    ) -> dict[str, Any]:
        """One turn: `text` is the user's message inside its framing blocks (canvas, models,
        history), as the orchestrator built it."""
        toolkit = await self.toolkits(models, emit)
        turn = _Turn()
        messages = [Message("system", AGENT_SYSTEM_PROMPT), Message("user", text)]
        await self._loop(toolkit, messages, models, emit, turn, self.max_steps)
        if self.verify and not turn.stopped_for_plan:
            await self._verify(toolkit, messages, models, emit, turn)
        await self._finish(toolkit, emit, turn)
        return self._result(toolkit, intent, turn)

    # ------------------------------------------------------------------------------- the loop
    async def _loop(
        self,
        toolkit: Toolkit,
        messages: list[Message],
        models: ModelCall,
        emit: Emit,
        turn: _Turn,
        steps: int,
    ) -> None:
        specs = toolkit.specs()
        for step in range(steps):
            last = step == steps - 1
            pieces: list[str] = []

            def on_delta(chunk: str, pieces: list[str] = pieces) -> None:
                pieces.append(chunk)

            reply = await models(
                messages,
                phase="main",
                tools=specs,
                tool_choice="none" if last else None,
                on_delta=on_delta,
            )
            content = reply.content or "".join(pieces)
            if content and not reply.tool_calls:
                await emit(Token(content))  # the answer (text between tool calls is not shown)
            messages.append(Message("assistant", content or None, tool_calls=list(reply.tool_calls)))
            if not reply.tool_calls:
                turn.text = content
                return
            for call in reply.tool_calls:
                log.info("flow_builder.tool.invoked tool_name=%s", call.name)
                result = await toolkit.call(call.name, call.arguments)
                if "error" in result:
                    log.info(
                        "flow_builder.tool.failed tool_name=%s error=%s",
                        call.name,
                        str(result["error"])[:200],
                    )
                    self.telemetry.flow_builder("tool_failed", call.name)
                    problems = result.get("problems") or ()
                    if any(isinstance(p, dict) and p.get("code") == "orphan_nodes" for p in problems):
                        log.error("flow_builder.spec.orphan error=%s", str(result["error"])[:300])
                        self.telemetry.flow_builder("orphan_rejection")
                await self._forward(toolkit, emit, turn)
                messages.append(Message("tool", _as_text(result), tool_call_id=call.id, name=call.name))
            if toolkit.plan_proposed:
                turn.stopped_for_plan = True
                turn.text = content or "Here is my plan. Continue to build it, or tell me what to change."
                return
        turn.text = turn.text or NO_ANSWER

    async def _forward(self, toolkit: Toolkit, emit: Emit, turn: _Turn) -> None:
        """The tools' events since the last call: live ones now, a set_flow held for the end."""
        for event in toolkit.drain():
            if isinstance(event, FileWritten):
                await emit(event)
                continue
            if event.action != "propose_plan":
                await self._save_restore_point(turn)
            if event.action == "set_flow":
                turn.saw_set_flow = True
                continue
            if turn.saw_set_flow and event.action in (
                "add_component",
                "remove_component",
                "connect",
                "configure",
            ):
                turn.tail_updates += 1  # already in the final set_flow
                continue
            if event.action in ("add_component", "remove_component", "connect", "configure"):
                turn.changed = True
            turn.events.append(event.action)
            self.telemetry.flow_builder("update", event.action)
            await emit(event)

    # ------------------------------------------------------------------------- verification
    async def _verify(
        self, toolkit: Toolkit, messages: list[Message], models: ModelCall, emit: Emit, turn: _Turn
    ) -> None:
        if not turn.saw_set_flow or toolkit.last_run is not None or toolkit.runner is None:
            return  # nothing new to check, or the agent ran it itself and saw how it went
        if toolkit.flow.is_empty() or _has_pausing_nodes(toolkit.flow.doc):
            return  # loops of people and waits: checked by the validator, not by a run
        for attempt in range(1, self.verify_attempts + 1):
            await emit(
                Progress("orchestrating", attempt, self.verify_attempts, message="Checking the flow...")
            )
            ran_before = toolkit.flow.ran
            result = await toolkit.call("run_flow", {"inputs": probe_inputs(toolkit.flow.doc)})
            toolkit.flow.ran = ran_before  # a check, not the run the user asked for
            turn.verification_runs += 1
            error = result.get("error")
            status = str(result.get("status") or "")
            if error is None and status in RUN_OK_STATUSES:
                turn.verified = True
                return
            message = str(error or status)
            turn.verified = False
            if message.startswith("Refused to run"):  # unsafe code: never retried into running
                turn.caveat = _clip(message)
                return
            if _EXTERNAL.search(message):
                turn.caveat = VERIFY_EXTERNAL_CAVEAT.format(error=_clip(message))
                return
            if attempt == self.verify_attempts:
                turn.caveat = VERIFY_FAILED_CAVEAT.format(n=attempt, error=_clip(message))
                return
            messages.append(Message("user", VERIFY_RETRY.format(error=_clip(message, 2000))))
            await self._loop(toolkit, messages, models, emit, turn, max(3, self.max_steps // 3))

    # -------------------------------------------------------------------------- the outcome
    async def _save_restore_point(self, turn: _Turn) -> None:
        if turn.restore_saved or self.restore_point is None:
            return
        turn.restore_saved = True
        turn.restore_point_id = await self.restore_point()

    async def _finish(self, toolkit: Toolkit, emit: Emit, turn: _Turn) -> None:
        if not turn.saw_set_flow:
            return
        await self._save_restore_point(turn)
        flow = toolkit.flow.doc
        if turn.tail_updates:
            log.warning("flow_builder.tail_updates.buffered tail_count=%d", turn.tail_updates)
        self.telemetry.flow_builder("update", "set_flow")
        if toolkit.flow.ran:  # built and ran in this turn: applied without asking
            await emit(FlowUpdate("set_flow", {"flow": flow, "auto_apply": True}))
            return
        await emit(FlowUpdate("set_flow", {"flow": flow}))
        nodes = flow.get("nodes") or []
        edges = flow.get("edges") or []
        await emit(
            FlowPreview(
                flow=flow,
                name=str(flow.get("name") or flow.get("id") or "flow"),
                node_count=len(nodes),
                edge_count=len(edges),
                graph=ascii_graph(flow),
            )
        )
        log.info("flow_builder.proposal.ready node_count=%d edge_count=%d", len(nodes), len(edges))
        self.telemetry.flow_builder("proposal_ready")
        await emit(Progress("flow_proposal_ready", message="Flow ready: review it, then add or replace"))

    def _result(self, toolkit: Toolkit, intent: str, turn: _Turn) -> dict[str, Any]:
        text = turn.text or NO_ANSWER
        if turn.caveat:
            text = f"{text}\n\n{turn.caveat}"
        data: dict[str, Any] = {
            "result": text,
            "has_flow": not toolkit.flow.is_empty(),
            # An edit is waiting for the user and the request still has a step after it (it asked
            # for a run that has not happened): the panel sends the continuation after approval.
            "continuation_expected": toolkit.edits_proposed > 0
            and intent in ("run_flow", "component_then_flow")
            and not toolkit.flow.ran,
        }
        if turn.restore_point_id is not None:
            data["restore_version_id"] = turn.restore_point_id
        if turn.verified is not None:
            data["verified"] = turn.verified
            data["verification_caveat"] = turn.caveat
        if toolkit.last_run is not None:
            data["run_metrics"] = {
                k: toolkit.last_run[k]
                for k in ("duration_seconds", "input_tokens", "output_tokens", "total_tokens")
                if k in toolkit.last_run
            }
        return data


def _as_text(result: Mapping[str, Any]) -> str:
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_TOOL_RESULT_CHARS:
        text = text[:MAX_TOOL_RESULT_CHARS] + '... [cut: the result was too long]"}'
    return text


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_PROBES: dict[str, Any] = {"number": 1, "integer": 1, "boolean": True, "object": {}, "array": []}


def probe_inputs(flow: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs for a check run: each field's default, else a small value of its type ("test")."""
    out: dict[str, Any] = {}
    for spec in flow_io.run_inputs(flow):
        if "default" in spec:
            out[spec["name"]] = spec["default"]
        else:
            out[spec["name"]] = _PROBES.get(str(spec.get("type")), "test")
    return out


def _has_pausing_nodes(doc: Mapping[str, Any]) -> bool:
    return any(n.get("type") in ("human", "loop") for n in doc.get("nodes") or () if isinstance(n, Mapping))


def ascii_graph(flow: Mapping[str, Any]) -> str:
    """A small text drawing of the flow for the proposal card: one line per edge, grouped by
    source in the order of the nodes (`start --> ask`, `route.billing --> billing`), then the
    nodes with no edge."""
    nodes = [n for n in flow.get("nodes") or () if isinstance(n, Mapping)]
    types = {str(n.get("id")): str(n.get("type")) for n in nodes}
    lines: list[str] = []
    linked: set[str] = set()
    order = {node_id: i for i, node_id in enumerate(types)}
    edges = sorted(
        (e for e in flow.get("edges") or () if isinstance(e, Mapping)),
        key=lambda e: (order.get(str(e.get("source")), 0), order.get(str(e.get("target")), 0)),
    )
    for edge in edges:
        source, target = str(edge.get("source")), str(edge.get("target"))
        port = edge.get("source_port")
        left = f"{source}.{port}" if port and port not in ("out", "output") else source
        lines.append(f"[{left} ({types.get(source, '?')})] --> [{target} ({types.get(target, '?')})]")
        linked.update((source, target))
    lines += [f"[{node_id} ({node_type})]" for node_id, node_type in types.items() if node_id not in linked]
    return "\n".join(lines)
