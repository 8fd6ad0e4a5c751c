"""Model nodes: `llm` (one model call: text or validated JSON) and `categorize` (classification
into one output port per category).

Both call models only through `plait.llm.chat`, so providers, keys by name, the `scripted`
provider and same-provider model fallback behave as in every other model-using node. Token usage
goes into `NodeResult.usage`, which the run sums.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from plait.llm import ChatRequest, Message, ProviderError, Usage, resolve
from plait.llm.chat import answered_by, chat_with
from plait.nodes.base import Node, NodeContext, NodeError, NodeResult
from plait.nodes.llm_errors import as_node_error
from plait.spec.model_settings import ModelSettings

ELSE_PORT = "else"
_ROLES = ("system", "user", "assistant")
_NOT_TEMPLATES = frozenset({"script", "output_schema", "categories"})


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _model_texts(config: BaseModel) -> list[tuple[str, Any]]:
    """Fields validation should check for references: not the script or schemas (plain data)."""
    return [(k, v) for k, v in config.model_dump(mode="json").items() if k not in _NOT_TEMPLATES]


async def _call(
    ctx: NodeContext, settings: ModelSettings, request: ChatRequest, *, stream: bool, state: dict[str, Any]
) -> Any:
    """One chat call for a node: resolve the provider once per execution, map provider errors."""
    try:
        if "provider" not in state:
            state["provider"], state["models"] = resolve(
                ctx, settings.provider, settings.models(), script=settings.script
            )
        response = await chat_with(
            state["provider"], state["models"], request, on_delta=ctx.emit_token if stream else None
        )
    except ProviderError as exc:
        raise as_node_error(exc) from exc
    state["usage"] = state.get("usage", Usage()) + response.usage
    state["model"] = answered_by(state["provider"], response)  # recorded on the node's event
    return response


class LlmConfig(ModelSettings):
    """One model call. The reply is the node's output: a string, or the parsed JSON value."""

    model_config = ConfigDict(extra="forbid", title="LLM")

    prompt: str = Field(
        "",
        title="Prompt",
        description="User message template, e.g. 'Summarise: {{fetch.body}}'. Empty: the node's input.",
    )
    system: str | None = Field(None, title="System prompt", description="System message template.")
    history: Any = Field(
        None,
        title="History",
        description=(
            "Earlier messages, usually a reference such as '{{vars.chat}}': a list of "
            "{role: system|user|assistant, content} (plain strings are user messages)."
        ),
    )
    history_window: int = Field(
        20, ge=0, le=1000, title="History window", description="Keep only the last N history messages."
    )
    output: Literal["text", "json"] = Field(
        "text",
        title="Output",
        description="'json' parses the reply (and validates it against output_schema).",
    )
    output_schema: dict[str, Any] | None = Field(
        None, title="Output schema", description="JSON Schema the JSON reply must match (output 'json')."
    )
    stream: bool = Field(
        True, title="Stream", description="Send tokens as node_token events while they arrive."
    )

    @field_validator("output_schema")
    @classmethod
    def _schema_is_valid(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise ValueError(f"output_schema is not a valid JSON Schema: {exc.message}") from exc
        return schema

    @model_validator(mode="after")
    def _schema_needs_json(self) -> LlmConfig:
        if self.output_schema is not None and self.output != "json":
            raise ValueError(
                "output_schema needs output 'json' (set output to 'json' or remove output_schema)"
            )
        return self


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_json_reply(text: str | None) -> Any:
    """The JSON value in a reply, tolerating code fences and prose around one object or array."""
    raw = (text or "").strip()
    m = _FENCE.match(raw)
    if m:
        raw = m.group(1)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as first:
        for open_, close in (("{", "}"), ("[", "]")):
            start, end = raw.find(open_), raw.rfind(close)
            if 0 <= start < end:
                try:
                    return json.loads(raw[start : end + 1])
                except json.JSONDecodeError:
                    pass
        raise ValueError(f"the reply is not valid JSON ({first.msg} at position {first.pos})") from first


def _schema_problem(validator: Draft202012Validator | None, value: Any) -> str | None:
    if validator is None:
        return None
    err = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))), None)
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path)
    return f"{err.message}" + (f" (at {where})" if where else "")


class LlmNode(Node[LlmConfig]):
    type_name = "llm"
    title = "LLM"
    description = "Calls a model with a prompt (and history); outputs its text or validated JSON."
    category = "ai"
    Config = LlmConfig
    default_timeout_s = 600.0

    def __init__(self, node_id: str, config: LlmConfig) -> None:
        super().__init__(node_id, config)
        schema = config.output_schema
        self._validator = Draft202012Validator(schema) if schema else None

    @classmethod
    def reference_texts(cls, config: LlmConfig) -> list[tuple[str, Any]]:
        return _model_texts(config)

    async def _history(self, ctx: NodeContext) -> list[Message]:
        cfg = self.config
        if cfg.history is None or cfg.history_window == 0:
            return []
        value = await ctx.arender(cfg.history)
        if value in (None, ""):
            return []
        if not isinstance(value, list):
            raise NodeError(
                f"history must be a list of messages, got {type(value).__name__}",
                hint="reference a list such as {{vars.chat}} of {role, content} items",
                retryable=False,
            )
        out: list[Message] = []
        for i, item in enumerate(value[-cfg.history_window :]):
            if isinstance(item, str):
                out.append(Message("user", item))
            elif isinstance(item, dict) and item.get("role") in _ROLES:
                out.append(Message(item["role"], _text(item.get("content"))))
            else:
                raise NodeError(
                    f"history item {i} is not a message: {_text(item)[:80]}",
                    hint="each item needs role (system, user or assistant) and content",
                    retryable=False,
                )
        return out

    async def _messages(self, ctx: NodeContext) -> list[Message]:
        cfg = self.config
        system = _text(await ctx.arender(cfg.system)) if cfg.system else ""
        if cfg.output == "json":
            rule = "Reply with JSON only: no prose, no code fences."
            if cfg.output_schema:
                rule += " The JSON must match this JSON Schema: " + json.dumps(cfg.output_schema)
            system = f"{system}\n\n{rule}" if system else rule
        prompt = _text(await ctx.arender(cfg.prompt)) if cfg.prompt else _text(ctx.input)
        if not prompt.strip():
            raise NodeError(
                "the prompt is empty", hint="set prompt (e.g. '{{inputs.question}}') or connect an input"
            )
        messages = [Message("system", system)] if system else []
        return [*messages, *await self._history(ctx), Message("user", prompt)]

    async def run(self, ctx: NodeContext) -> NodeResult:
        cfg = self.config
        messages = await self._messages(ctx)
        fmt = None
        if cfg.output == "json":
            fmt = (
                {"type": "json_schema", "schema": cfg.output_schema, "name": "output"}
                if cfg.output_schema
                else {"type": "json_object"}
            )
        request = ChatRequest(
            "", messages, response_format=fmt, temperature=cfg.temperature, max_tokens=cfg.max_tokens
        )
        state: dict[str, Any] = {}
        response = await _call(ctx, cfg, request, stream=cfg.stream, state=state)
        if cfg.output == "text":
            return NodeResult(response.content or "", usage=state["usage"].as_dict(), model=state["model"])
        value, problem = self._check(response.content)
        if problem is not None:  # one corrective re-ask with what was wrong
            request.messages = [
                *messages,
                Message("assistant", response.content or ""),
                Message(
                    "user",
                    f"Your reply was not usable: {problem}. Reply again with only the corrected JSON.",
                ),
            ]
            response = await _call(ctx, cfg, request, stream=cfg.stream, state=state)
            value, problem = self._check(response.content)
            if problem is not None:
                raise NodeError(
                    f"the model's JSON reply was still invalid after one corrective re-ask: {problem}; "
                    f"reply: {(response.content or '')[:200]!r}",
                    hint="make the prompt or output_schema clearer, or use a stronger model",
                )
        return NodeResult(value, usage=state["usage"].as_dict(), model=state["model"])

    def _check(self, content: str | None) -> tuple[Any, str | None]:
        try:
            value = parse_json_reply(content)
        except ValueError as exc:
            return None, str(exc)
        problem = _schema_problem(self._validator, value)
        return value, (f"it does not match the output schema: {problem}" if problem else None)


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid", title="Category")

    name: str = Field(
        ...,
        pattern=r"^[A-Za-z0-9_\-]+$",
        title="Name",
        description="The category and its output port (letters, digits, _ and -).",
    )
    description: str = Field("", title="Description", description="What belongs in this category.")
    examples: list[str] = Field(default_factory=list, title="Examples", description="Sample inputs.")


class CategorizeConfig(ModelSettings):
    """Fires the port of the category the model picks; answers naming no category go to 'else'."""

    model_config = ConfigDict(extra="forbid", title="Categorize")

    input: str = Field("", title="Input", description="Text to classify (template). Empty: the node's input.")
    categories: list[Category] = Field(..., min_length=1, title="Categories")
    instructions: str | None = Field(None, title="Instructions", description="Extra guidance for the model.")

    @model_validator(mode="after")
    def _names_are_unique(self) -> CategorizeConfig:
        seen: set[str] = set()
        for c in self.categories:
            key = c.name.lower()
            if key == ELSE_PORT:
                raise ValueError(
                    "'else' is reserved for answers that match no category; rename that category"
                )
            if key in seen:
                raise ValueError(f"two categories are named {c.name!r}; category names must be unique")
            seen.add(key)
        return self


def _prompt(cfg: CategorizeConfig) -> str:
    lines = [
        "You classify the user's message into exactly one of these categories:",
    ]
    for c in cfg.categories:
        lines.append(f"- {c.name}: {c.description}".rstrip(": "))
        for ex in c.examples:
            lines.append(f"    example: {ex}")
    lines.append(
        f"Reply with the category name only. If none fits, reply {ELSE_PORT}."
        + (f"\n{cfg.instructions}" if cfg.instructions else "")
    )
    return "\n".join(lines)


def pick_category(reply: str | None, names: list[str]) -> str:
    """The category a reply names: an exact name (ignoring case, quotes and punctuation), else the
    only category name appearing as a word in the reply, else 'else'."""
    text = (reply or "").strip().strip("\"'`*.:!").strip()
    by_lower = {n.lower(): n for n in names}
    if text.lower() in by_lower:
        return by_lower[text.lower()]
    found = [n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", reply or "", re.IGNORECASE)]
    return found[0] if len(found) == 1 else ELSE_PORT


class CategorizeNode(Node[CategorizeConfig]):
    type_name = "categorize"
    title = "Categorize"
    description = "Classifies its input with a model: one output port per category, plus 'else'."
    category = "ai"
    Config = CategorizeConfig
    default_timeout_s = 600.0

    @classmethod
    def output_ports(cls, config: CategorizeConfig) -> list[str]:
        return [c.name for c in config.categories] + [ELSE_PORT]

    @classmethod
    def reference_texts(cls, config: CategorizeConfig) -> list[tuple[str, Any]]:
        return _model_texts(config)

    async def run(self, ctx: NodeContext) -> NodeResult:
        cfg = self.config
        text = _text(await ctx.arender(cfg.input)) if cfg.input else _text(ctx.input)
        request = ChatRequest(
            "",
            [Message("system", _prompt(cfg)), Message("user", text)],
            temperature=0.0 if cfg.temperature is None else cfg.temperature,
            max_tokens=cfg.max_tokens or 20,
        )
        state: dict[str, Any] = {}
        response = await _call(ctx, cfg, request, stream=False, state=state)
        port = pick_category(response.content, [c.name for c in cfg.categories])
        return NodeResult(
            {"category": port, "input": text, "reply": response.content or ""},
            ports=(port,),
            usage=state["usage"].as_dict(),
            model=state["model"],
        )
