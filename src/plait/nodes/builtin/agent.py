"""`agent`: a tool-calling loop over a model, with per-tool permissions and approval pauses.

The loop: send the conversation and the offered tools to the model; run the tool calls it asks
for (in order); append their results; repeat until the model answers without tool calls or
`max_steps` model calls have been made.

Permissions (`permissions`, by tool name, ``mcp:<server>``, ``mcp:<server>/<tool>`` or ``*``):
``allow`` runs the call, ``deny`` never runs it and tells the model so, ``ask`` pauses the run with a
``tool_approval`` interrupt. The interrupt payload carries the loop's state (conversation, usage,
pending calls); `accept_resume` hands that state back with the answer, so the re-run node continues
exactly where it stopped (no model call or tool call is repeated). On *approve* the tool runs; on
*deny* a refusal goes back to the model, which finishes its answer.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, field_validator

from plait.llm.base import ChatRequest, Message, ProviderError, ToolCall, ToolSpec, Usage
from plait.llm.chat import answered_by, chat_with, resolve
from plait.llm.scripted import ScriptedProvider
from plait.nodes.base import InterruptRequest, Node, NodeContext, NodeError, NodeResult
from plait.nodes.builtin.component_tools import component_tool, is_component_ref
from plait.nodes.llm_errors import as_node_error
from plait.spec.model_settings import ModelSettings
from plait.tools.base import Tool, ToolError
from plait.tools.flow import flow_tool
from plait.tools.select import parse_ref, resolve_tools

Permission = Literal["allow", "ask", "deny"]
APPROVAL_KIND = "tool_approval"
_NAME_OK = re.compile(r"[^a-zA-Z0-9_-]+")
MAX_RESULT_CHARS = 20_000


class FlowToolConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    flow: str = Field(min_length=1, description="The id of the published flow to run.")
    name: str | None = Field(None, description="Tool name shown to the model (default flow_<id>).")
    description: str | None = None
    parameters: dict[str, Any] | None = Field(None, description="JSON Schema of the flow's inputs.")


class AgentSettings(ModelSettings):
    """What an agent and its sub-agents share: model, instructions, tools and permissions."""

    system: str = Field("", title="System prompt", description="Template; {{node.port}} references allowed.")
    tools: list[str] = Field(
        default_factory=list,
        title="Tools",
        description=(
            "Tool names (web_search, http_request...), mcp:<server>, mcp:<server>/<tool>, or "
            "component:<Name> (a registered component, run in the sandbox)."
        ),
    )
    flows: list[FlowToolConfig] = Field(
        default_factory=list, title="Flows as tools", description="Published flows the agent may run."
    )
    permissions: dict[str, Permission] = Field(
        default_factory=dict,
        title="Permissions",
        description=(
            "allow / ask / deny per tool name, mcp:<server>, mcp:<server>/<tool> or '*' "
            "(default allow). ask pauses the run for approval."
        ),
    )
    max_steps: int = Field(
        8,
        ge=1,
        le=100,
        title="Max steps",
        description="Most model calls in one run; the last one is asked to answer without tools.",
    )
    force_tool: str | None = Field(
        None,
        title="Force a tool first",
        description="The first model call must call this tool (tool_choice); later calls choose freely.",
    )
    on_tool_error: Literal["model", "fail"] = Field(
        "model",
        title="On tool error",
        description="model: the error text goes back to the model; fail: the node fails.",
    )

    @field_validator("tools")
    @classmethod
    def _refs(cls, refs: list[str]) -> list[str]:
        for ref in refs:
            try:
                parse_ref(ref)
            except ToolError as exc:
                raise ValueError(f"{exc.message} ({exc.hint})") from exc
        return refs


class SubAgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
    description: str = Field(min_length=1, description="What the sub-agent is good at (the model reads it).")
    agent: AgentSettings


class AgentConfig(AgentSettings):
    prompt: str = Field(
        "",
        title="Task",
        description="Template of the user message; empty: the node's input (as text).",
    )
    sub_agents: list[SubAgentConfig] = Field(
        default_factory=list,
        title="Sub-agents",
        description="Other agent configurations offered as tools (argument: task); one level deep.",
    )
    stream: bool = Field(
        True, title="Stream tokens", description="Emit the answer's tokens as node_token events."
    )


# --------------------------------------------------------------------------- state (JSON)


def _msg_to_json(m: Message) -> dict[str, Any]:
    data: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        data["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
    if m.tool_call_id:
        data["tool_call_id"] = m.tool_call_id
    if m.name:
        data["name"] = m.name
    return data


def _msg_from_json(d: dict[str, Any]) -> Message:
    return Message(
        role=d["role"],
        content=d.get("content"),
        tool_calls=[
            ToolCall(c["id"], c["name"], dict(c.get("arguments") or {})) for c in d.get("tool_calls", [])
        ],
        tool_call_id=d.get("tool_call_id"),
        name=d.get("name"),
    )


class _Loop:
    """One agent conversation; `state()` / `restore()` make it survive an approval pause."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.call_lengths: list[int] = []  # conversation length at each model call (replaying scripts)
        self.usage = Usage()
        self.log: list[dict[str, Any]] = []  # every tool call: name, args, status, result/error
        self.pending: list[ToolCall] = []  # calls of the last reply not handled yet
        self.decision: dict[str, Any] | None = None  # the approval answer for pending[0]
        self.model: dict[str, str] | None = None  # {provider, model} of the last reply

    def state(self) -> dict[str, Any]:
        return {
            "messages": [_msg_to_json(m) for m in self.messages],
            "call_lengths": self.call_lengths,
            "usage": self.usage.as_dict(),
            "log": self.log,
            "pending": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.pending],
            "model": self.model,
        }

    @classmethod
    def restore(cls, state: dict[str, Any]) -> _Loop:
        loop = cls()
        loop.messages = [_msg_from_json(m) for m in state["messages"]]
        loop.call_lengths = list(state["call_lengths"])
        loop.usage = Usage(state["usage"]["input_tokens"], state["usage"]["output_tokens"])
        loop.log = list(state["log"])
        loop.pending = [ToolCall(c["id"], c["name"], dict(c["arguments"])) for c in state["pending"]]
        loop.model = state.get("model")  # absent in states saved before it was recorded
        return loop


# --------------------------------------------------------------------------- the node


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _result_text(value: Any) -> str:
    text = _text(value)
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + "... [truncated]"


def _model_name(name: str) -> str:
    return _NAME_OK.sub("_", name)[:64] or "tool"


class _Offered:
    """The tools one agent offers its model: model-visible name -> (Tool, permission)."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.permission: dict[str, Permission] = {}

    def add(self, tool: Tool, permission: Permission) -> None:
        name = _model_name(tool.name)
        if name in self.tools and tool.source.startswith("mcp:"):
            name = _model_name(f"{tool.source[4:]}_{tool.name}")
        base, n = name, 2
        while name in self.tools:
            name, n = f"{base[:60]}_{n}", n + 1
        self.tools[name] = tool
        self.permission[name] = permission

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(n, t.description, t.parameters) for n, t in self.tools.items()]


def _permission(cfg: AgentSettings, tool: Tool) -> Permission:
    keys = [tool.name]
    if tool.source.startswith("mcp:"):
        server = tool.source[4:]
        keys = [f"mcp:{server}/{tool.name}", f"mcp:{server}", tool.name]
    for key in [*keys, "*"]:
        if key in cfg.permissions:
            return cfg.permissions[key]
    return "allow"


def _parse_decision(data: Any) -> dict[str, Any]:
    """approve/deny answers: "approve", true, {"action": "deny", "reason": "..."}, {"approved": false}."""
    action: Any = None
    reason: Any = None
    if isinstance(data, bool):
        action = "approve" if data else "deny"
    elif isinstance(data, str):
        action = data
    elif isinstance(data, dict):
        if "approved" in data and isinstance(data["approved"], bool):
            action = "approve" if data["approved"] else "deny"
        else:
            action = data.get("action")
        reason = data.get("reason") or data.get("comment")
    if isinstance(action, str):
        action = {"approve": "approve", "approved": "approve", "allow": "approve", "yes": "approve",
                  "deny": "deny", "denied": "deny", "reject": "deny", "no": "deny"}.get(action.strip().lower())  # fmt: skip
    if action not in ("approve", "deny"):
        raise NodeError(
            "a tool approval needs an answer: approve or deny",
            hint='send {"action": "approve"} or {"action": "deny", "reason": "..."}',
            retryable=False,
        )
    return {"action": action, "reason": str(reason) if reason else None}


class AgentNode(Node[AgentConfig]):
    type_name = "agent"
    title = "Agent"
    description = (
        "A model that calls tools (built-in, MCP, flows, sub-agents) in a loop until it answers; "
        "tools can need approval (ask) or be denied."
    )
    category = "ai"
    Config = AgentConfig

    @classmethod
    def reference_texts(cls, config: AgentConfig) -> list[tuple[str, Any]]:
        """Only the templates: scripts, tool lists and schemas are plain data."""
        texts: list[tuple[str, Any]] = [("system", config.system), ("prompt", config.prompt)]
        texts += [(f"sub_agents[{i}].agent.system", s.agent.system) for i, s in enumerate(config.sub_agents)]
        return texts

    def validate_resume(self, data: Any) -> Any:
        return _parse_decision(data)

    def accept_resume(self, data: Any, interrupt: Any) -> Any:
        decision = _parse_decision(data)
        if interrupt.get("kind") == APPROVAL_KIND:
            decision["state"] = (interrupt.get("payload") or {}).get("state")
        return decision

    async def run(self, ctx: NodeContext) -> NodeResult:
        cfg = self.config
        try:
            resumed = ctx.interrupt({}, kind=APPROVAL_KIND)
        except InterruptRequest:
            resumed = None
        if isinstance(resumed, dict) and resumed.get("state"):
            loop = _Loop.restore(resumed["state"])
            loop.decision = resumed
        else:
            loop = _Loop()
            system = _text(await ctx.arender(cfg.system)) if cfg.system else ""
            task = _text(await ctx.arender(cfg.prompt)) if cfg.prompt else _text(ctx.input)
            if not task.strip():
                raise NodeError(
                    "the agent has no task: its prompt and its input are empty",
                    hint="set prompt (e.g. {{inputs.question}}) or connect an input",
                    retryable=False,
                )
            if system:
                loop.messages.append(Message("system", system))
            loop.messages.append(Message("user", task))
        answer = await _run_agent(ctx, cfg, loop, top=True)
        output = {"content": answer, "tool_calls": loop.log, "steps": len(loop.call_lengths)}
        return NodeResult(output, usage=loop.usage.as_dict(), model=loop.model)


async def _offered_tools(ctx: NodeContext, cfg: AgentSettings) -> _Offered:
    offered = _Offered()
    try:
        tools = await resolve_tools(ctx, [r for r in cfg.tools if not is_component_ref(r)])
        for ref in cfg.tools:
            if is_component_ref(ref):
                tools.append(await component_tool(ctx, ref))
    except ToolError as exc:
        raise NodeError(exc.message, hint=exc.hint, retryable=exc.fatal) from exc
    for tool in tools:
        offered.add(tool, _permission(cfg, tool))
    for f in cfg.flows:
        tool = flow_tool(f.flow, name=f.name, description=f.description, parameters=f.parameters)
        offered.add(tool, _permission(cfg, tool))
    for sub in getattr(cfg, "sub_agents", ()):
        if any(v == "ask" for v in sub.agent.permissions.values()):
            # A pause inside a nested loop could not be resumed to the same point.
            raise NodeError(
                f"sub-agent {sub.name!r} uses ask permissions: not supported",
                hint="give sub-agents allow/deny permissions; ask on the parent agent's tools",
                retryable=False,
            )
        offered.add(
            _sub_agent_tool(ctx, sub), _permission(cfg, Tool(sub.name, "", {}, _never, source="agent"))
        )
    return offered


async def _never(args: dict[str, Any], ctx: Any) -> Any:  # pragma: no cover - placeholder
    raise AssertionError


def _sub_agent_tool(ctx: NodeContext, sub: SubAgentConfig) -> Tool:
    async def call(args: dict[str, Any], _ctx: Any) -> Any:
        task = args.get("task")
        if not isinstance(task, str) or not task.strip():
            raise ToolError("task must be a non-empty string")
        loop = _Loop()
        if sub.agent.system:
            loop.messages.append(Message("system", _text(await ctx.arender(sub.agent.system))))
        loop.messages.append(Message("user", task))
        answer = await _run_agent(ctx, sub.agent, loop, top=False)
        return {"answer": answer, "usage": loop.usage.as_dict(), "tool_calls": loop.log}

    return Tool(
        name=sub.name,
        description=sub.description,
        parameters={
            "type": "object",
            "properties": {"task": {"type": "string", "description": "What the sub-agent should do."}},
            "required": ["task"],
        },
        call=call,
        source="agent",
    )


async def _run_agent(ctx: NodeContext, cfg: AgentSettings, loop: _Loop, *, top: bool) -> str:
    offered = await _offered_tools(ctx, cfg)
    specs = offered.specs()
    try:
        provider, models = resolve(ctx, cfg.provider, cfg.models(), script=cfg.script)
    except ProviderError as exc:
        raise as_node_error(exc) from exc
    if loop.call_lengths and isinstance(provider, ScriptedProvider) and not provider.requests:
        # Resumed with a fresh scripted provider: replay the recorded model calls (no side
        # effects) so the script continues at the step the paused run had reached.
        for step, n in enumerate(loop.call_lengths):
            await provider.chat(_request(cfg, models, loop.messages[:n], specs, _choice(cfg, offered, step)))
    on_delta = ctx.emit_token if (top and getattr(cfg, "stream", False)) else None
    while True:
        if loop.pending:
            await _handle_pending(ctx, cfg, loop, offered)
            continue
        if loop.messages[-1].role == "assistant":
            return loop.messages[-1].content or ""
        if len(loop.call_lengths) >= cfg.max_steps:
            asked = ", ".join(sorted({c["name"] for c in loop.log[-5:]})) or "-"
            raise NodeError(
                f"the agent did not finish within max_steps={cfg.max_steps} model calls "
                f"(last tools called: {asked})",
                hint="raise max_steps or make the task narrower",
                retryable=False,
            )
        choice = _choice(cfg, offered, len(loop.call_lengths))
        loop.call_lengths.append(len(loop.messages))
        try:
            response = await chat_with(
                provider, models, _request(cfg, models, loop.messages, specs, choice), on_delta=on_delta
            )
        except ProviderError as exc:
            raise as_node_error(exc) from exc
        loop.usage = loop.usage + response.usage
        loop.model = answered_by(provider, response)
        # "" rather than None beside tool calls: llama.cpp's server refuses a null assistant content.
        content = response.content if response.content is not None or not response.tool_calls else ""
        loop.messages.append(Message("assistant", content, tool_calls=list(response.tool_calls)))
        loop.pending = list(response.tool_calls)


def _request(
    cfg: AgentSettings,
    models: list[str],
    messages: list[Message],
    specs: list[ToolSpec],
    choice: str | dict[str, Any] | None = None,
) -> ChatRequest:
    return ChatRequest(
        model=models[0] if models else "",
        messages=list(messages),
        tools=specs,
        tool_choice=choice if specs else None,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
    )


def _choice(cfg: AgentSettings, offered: _Offered, step: int) -> str | dict[str, Any] | None:
    """tool_choice of model call `step`: the forced tool first, no tools on the last allowed call."""
    if step == 0 and cfg.force_tool:
        for name, tool in offered.tools.items():
            if cfg.force_tool in (name, tool.name):
                return {"name": name}
        raise NodeError(
            f"force_tool {cfg.force_tool!r} is not one of the agent's tools ({', '.join(offered.tools) or 'none'})",
            hint="add it to tools (or flows / sub_agents) or clear force_tool",
            retryable=False,
        )
    if step == cfg.max_steps - 1 and step > 0:
        return "none"
    return None


async def _handle_pending(ctx: NodeContext, cfg: AgentSettings, loop: _Loop, offered: _Offered) -> None:
    """Handle the first pending tool call: run it, refuse it, or pause for approval."""
    call = loop.pending[0]
    tool = offered.tools.get(call.name)
    entry: dict[str, Any] = {"id": call.id, "name": call.name, "args": call.arguments}
    if tool is None:
        known = ", ".join(offered.tools) or "none"
        content = f"Error: there is no tool named {call.name!r}. Available tools: {known}."
        entry["status"] = "unknown_tool"
        _reply(loop, call, content, entry)
        return
    permission = offered.permission[call.name]
    decision, loop.decision = loop.decision, None
    if permission == "deny":
        entry["status"] = "denied"
        _reply(
            loop,
            call,
            f"Permission denied: the tool {call.name} may not be used here. Answer without it.",
            entry,
        )
        return
    if permission == "ask":
        if decision is None:
            raise InterruptRequest(
                {
                    "message": f"The agent wants to call {call.name}. Approve?",
                    "tool": call.name,
                    "source": tool.source,
                    "args": call.arguments,
                    "call_id": call.id,
                    "actions": ["approve", "deny"],
                    "state": loop.state(),
                },
                kind=APPROVAL_KIND,
            )
        if decision["action"] == "deny":
            entry["status"] = "denied_by_user"
            reason = f" (reason: {decision['reason']})" if decision.get("reason") else ""
            _reply(
                loop,
                call,
                f"The user denied this call of {call.name}{reason}. Do not call it again; "
                "finish your answer without it.",
                entry,
            )
            return
        entry["approved"] = True
    problem = _argument_problem(tool, call.arguments)
    if problem:
        entry["status"] = "invalid_arguments"
        _reply(loop, call, f"Error: invalid arguments for {call.name}: {problem}", entry)
        return
    ctx.emit_tool_call(call.name, call.arguments)
    try:
        result = await tool.call(dict(call.arguments), ctx)
    except ToolError as exc:
        if exc.fatal or cfg.on_tool_error == "fail":
            raise NodeError(
                f"tool {call.name!r} failed: {exc.message}", hint=exc.hint, retryable=exc.fatal
            ) from exc
        entry.update(status="error", error=exc.message)
        _reply(loop, call, f"Error: {exc}", entry)
        return
    except NodeError:
        raise
    except Exception as exc:  # a bug in a tool must not look like a model problem
        raise NodeError(f"tool {call.name!r} crashed: {type(exc).__name__}: {exc}") from exc
    if tool.source == "agent" and isinstance(result, dict) and "usage" in result:
        used = result.pop("usage")
        loop.usage = loop.usage + Usage(used["input_tokens"], used["output_tokens"])
    try:  # the log is checkpointed (and may sit in an approval payload): plain JSON only
        result = json.loads(json.dumps(result, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        result = str(result)
    entry.update(status="ok", result=result)
    _reply(loop, call, _result_text(result), entry)


def _reply(loop: _Loop, call: ToolCall, content: str, entry: dict[str, Any]) -> None:
    loop.messages.append(Message("tool", content, tool_call_id=call.id, name=call.name))
    loop.log.append(entry)
    loop.pending.pop(0)


def _argument_problem(tool: Tool, args: dict[str, Any]) -> str | None:
    try:
        validator = jsonschema.Draft202012Validator(tool.parameters)
        err = next(iter(validator.iter_errors(args)), None)
    except jsonschema.SchemaError:
        return None  # a server's odd schema must not block its tool
    if err is None:
        return None
    path = "/".join(str(p) for p in err.absolute_path)
    return f"{path or '(arguments)'}: {err.message}"
