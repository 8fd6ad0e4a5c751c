"""The RAGFlow component table: which plait node type each component becomes, and how.

One `Mapping` per RAGFlow component (with its v1/v2 aliases). `plait_types` lists the plait node
types that can run it, first found wins; a mapping whose types are not in the node catalog is
reported as "without a plait equivalent" with its `hint`. So supporting a component later (a
`retrieval` or `sql` node) is one entry here, or nothing at all when the entry exists already and
only waited for its node type. Entries for node types plait does not ship yet pass the RAGFlow
params through `passthrough`, keeping only the fields the node's config declares.

Agent tools (`Agent.params.tools[].component_name`) have their own table, `TOOLS`, checked against
the run's tool names the same way.

Every `build` gets the component and a `Context` (the importer) and returns a `Built`: the node's
type and config, and for routing components the (port, target) pairs of its out-edges.
`output_path` says where a RAGFlow `{cpn@param.path}` lands in the plait node's output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from plait.spec.assign import ASSIGN_OPERATORS
from plait.spec.formats.ragflow_dsl import Component, as_dict, as_list

Path = tuple[str | int, ...]

# RAGFlow's condition operators, spelled as plait's (plait also accepts RAGFlow's as written).
OPERATORS = {
    "=": "==",
    "is": "==",
    "≠": "!=",
    "is not": "!=",
    "contains": "contains",
    "not contains": "not_contains",
    "start with": "starts_with",
    "end with": "ends_with",
    "empty": "empty",
    "not empty": "not_empty",
    ">": ">",
    "<": "<",
    "≥": ">=",
    "≤": "<=",
    ">=": ">=",
    "<=": "<=",
    "==": "==",
    "!=": "!=",
}
# RAGFlow model factories that are plait providers; every other factory runs on `auto` (any
# OpenAI-compatible endpoint set with OPENAI_BASE_URL / OPENAI_API_KEY, else the scripted provider).
FACTORIES = {"openai": "openai", "anthropic": "anthropic", "groq": "groq", "ollama": "ollama"}
FIELD_TYPES = {
    "line": "string",
    "paragraph": "text",
    "options": "select",
    "integer": "integer",
    "number": "number",
    "float": "number",
    "boolean": "boolean",
    "file": "string",
}
CODE_TYPES = {
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "object": "object",
}
# Message output formats that make RAGFlow generate a file (md / html / text are display formats).
FILE_FORMATS = frozenset({"pdf", "docx", "doc", "xlsx", "csv", "pptx"})
_NAME_BAD = re.compile(r"[^A-Za-z0-9_]+")
_PORT_BAD = re.compile(r"[^A-Za-z0-9_\-]+")


class Context(Protocol):
    """What a converter may ask of the importer."""

    def template(self, text: Any) -> Any:
        """A RAGFlow template with every reference rewritten for plait (`{{node.path}}`)."""

    def ref(self, text: Any) -> Any:
        """A field that holds one bare reference (`cpn@param`, `sys.query`, `env.x`) as a plait
        template `{{...}}`; a constant is returned unchanged."""

    def warn(self, message: str) -> None: ...

    def unsupported(self, c: Component, what: str) -> None:
        """Report a component (or a part of one) that has no plait equivalent."""

    def tool(self, c: Component, spec: Any) -> str | None:
        """The plait tool name for a RAGFlow agent tool entry (None: reported)."""

    def fields_of(self, plait_type: str) -> frozenset[str] | None:
        """The config fields a node type declares (None: unknown, without a node catalog)."""

    def output_of(self, cid: str) -> str | None:
        """`{{...}}` for the whole output of component `cid` (v1 refers to components by id), or
        None if there is no such component."""

    def upstream_of(self, c: Component) -> list[str]:
        """The components with a link to `c`."""

    def v1_input(self, c: Component) -> str:
        """What reaches `c` in a v1 document (its `{input}`): the outputs of the nearest upstream
        components that produce something, past routing ones; the user's query past Begin/Answer."""


@dataclass(slots=True)
class Built:
    type: str
    config: dict[str, Any]
    # (source port, target component id) for routing components; None: every downstream on `port`.
    routes: list[tuple[str, str]] | None = None
    port: str = "out"
    retry: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Build = Callable[[Component, Context], Built]
OutputPath = Callable[[Component, Path], Path]


@dataclass(frozen=True, slots=True)
class Mapping:
    names: tuple[str, ...]
    plait_types: tuple[str, ...]
    build: Build | None
    hint: str = ""
    output_path: OutputPath | None = None
    passthrough: dict[str, str] | None = None  # RAGFlow param -> plait config field


# ----------------------------------------------------------------------------- helpers


def safe_name(text: str, fallback: str, pattern: re.Pattern[str] = _NAME_BAD) -> str:
    name = pattern.sub("_", text).strip("_")
    if not name or name[0].isdigit():
        name = f"{fallback}_{name}" if name else fallback
    return name[:64]


def unique(name: str, taken: set[str]) -> str:
    out, i = name, 2
    while out.lower() in taken:
        out, i = f"{name}_{i}", i + 1
    taken.add(out.lower())
    return out


def str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def is_sub_agent(spec: Any) -> bool:
    """An Agent's `tools` entry that is another agent: `{component_name: Agent, ...}` or just
    `{id: "Agent:..."}`."""
    if not isinstance(spec, dict):
        return False
    name = str(spec.get("component_name") or "").lower()
    return name == "agent" or (not name and str(spec.get("id") or "").lower().startswith("agent:"))


def model_settings(p: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """`llm_id` ("model@factory", "model___x@factory#tenant") and sampling settings."""
    llm_id = str(p.get("llm_id") or "")
    model = llm_id.split("@", 1)[0].split("___", 1)[0]
    factory = llm_id.rsplit("@", 1)[-1].split("#", 1)[0] if "@" in llm_id else ""
    provider = FACTORIES.get(factory.lower(), "auto")
    out: dict[str, Any] = {"provider": provider, "model": model}
    if provider == "auto" and llm_id:
        ctx.warn(
            f"model {llm_id!r} runs on provider 'auto': the OpenAI-compatible endpoint in "
            "OPENAI_BASE_URL / OPENAI_API_KEY (OPENAI_MODEL overrides the model), else the "
            "scripted provider; set `provider` on the node to choose another"
        )
    temperature = _number(p.get("temperature"))
    if temperature is not None and p.get("temperatureEnabled", True) is not False:
        out["temperature"] = min(max(temperature, 0.0), 2.0)
    tokens = _number(p.get("max_tokens"))
    if tokens and tokens >= 1 and p.get("maxTokensEnabled", False):
        out["max_tokens"] = int(tokens)
    return out


def retry_policy(p: dict[str, Any]) -> dict[str, Any] | None:
    """`max_retries` extra attempts, `delay_after_error` seconds apart (a fixed delay, as RAGFlow)."""
    retries = _number(p.get("max_retries"))
    if not retries or retries < 1:
        return None
    delay = _number(p.get("delay_after_error")) or 0.0
    return {
        "max_attempts": min(int(retries) + 1, 100),
        "delay_s": min(max(delay, 0.0), 3600.0),
        "backoff": 1.0,
    }


def _prompt_text(p: dict[str, Any], ctx: Context) -> str:
    prompts = p.get("prompts")
    if isinstance(prompts, str):
        return str(ctx.template(prompts))
    texts = [
        str(m.get("content") or "")
        for m in as_list(prompts)
        if isinstance(m, dict) and m.get("role", "user") == "user"
    ]
    if len(texts) > 1:
        ctx.warn("several user prompts were joined into one")
    return str(ctx.template("\n\n".join(t for t in texts if t)))


def _condition(item: dict[str, Any], ctx: Context, ref_key: str) -> dict[str, Any]:
    op = str(item.get("operator") or "=")
    out: dict[str, Any] = {"ref": ctx.ref(item.get(ref_key) or ""), "op": OPERATORS.get(op.lower(), op)}
    if out["op"] not in ("empty", "not_empty"):
        value = item.get("value")
        if item.get("input_mode") == "variable":
            value = ctx.ref(value)
        else:
            value = ctx.template(value)
        out["value"] = value
    if not isinstance(out["ref"], str) or not out["ref"].startswith("{{"):
        out["ref"] = "{{sys.query}}" if not out["ref"] else out["ref"]
    return out


# ----------------------------------------------------------------------------- converters


def _begin(c: Component, ctx: Context) -> Built:
    p = c.params
    mode = str(p.get("mode") or "conversational")
    config: dict[str, Any] = {"trigger": {"conversational": "chat", "webhook": "webhook"}.get(mode, "manual")}
    if p.get("prologue") and p.get("enablePrologue", True) is not False:
        config["prologue"] = str(p["prologue"])
    return Built("start", config)


def begin_inputs(c: Component, ctx: Context) -> dict[str, Any] | None:
    """The flow's input schema from Begin's `inputs` ({key: {name, type, optional, value}})."""
    raw = c.params.get("inputs")
    if not isinstance(raw, dict) or not raw:
        return None
    props: dict[str, Any] = {}
    required: list[str] = []
    for key, spec in raw.items():
        spec = spec if isinstance(spec, dict) else {}
        kind = str(spec.get("type") or "line")
        schema: dict[str, Any] = {"title": str(spec.get("name") or key)}
        if kind in ("integer", "number", "boolean"):
            schema["type"] = kind
        elif kind == "file":
            schema["description"] = "a file (RAGFlow file input): pass its content or URL"
            ctx.warn(f"Begin input {key!r} is a file: plait passes it as an ordinary input value")
        else:
            schema["type"] = "string"
            if kind == "options" and str_list(spec.get("options")):
                schema["enum"] = str_list(spec.get("options"))
        value = spec.get("value")
        if value not in (None, "", []) and kind != "file":
            schema["default"] = value
        props[key] = schema
        if spec.get("optional") is False and "default" not in schema:
            required.append(key)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def _message(c: Component, ctx: Context) -> Built:
    content = c.params.get("content") or c.params.get("messages")
    texts = str_list(content) if not isinstance(content, str) else [content]
    if not texts and c.name.lower() == "answer":  # v1: shows what reaches it
        ups = [u for u in ctx.upstream_of(c) if u.lower() != "begin"]
        texts = ["\n".join(filter(None, (ctx.output_of(u) for u in ups)))]
    if len(texts) > 1:
        ctx.warn(f"{c.id}: RAGFlow picks one of {len(texts)} message texts at random; plait keeps the first")
    if str(c.params.get("output_format") or "").lower() in FILE_FORMATS:
        ctx.warn(f"{c.id}: the message's file output ({c.params['output_format']}) is not imported")
    return Built("message", {"text": str(ctx.template(texts[0] if texts else ""))})


def _llm(c: Component, ctx: Context) -> Built:
    p = c.params
    config = model_settings(p, ctx)
    if c.name.lower() == "generate":  # v1: `prompt` is the system prompt, the user turn the query
        config["system"] = str(ctx.template(v1_placeholders(c, str(p.get("prompt") or ""), ctx)))
        config["prompt"] = "{{sys.query}}"
    else:
        if p.get("sys_prompt"):
            config["system"] = str(ctx.template(p["sys_prompt"]))
        config["prompt"] = _prompt_text(p, ctx)
    window = _number(p.get("message_history_window_size"))
    if window is not None and window >= 0:
        config["history_window"] = min(int(window), 1000)
    outputs = as_dict(p.get("outputs"))
    structured = outputs.get("structured") if isinstance(outputs, dict) else None
    if p.get("showStructuredOutput") and isinstance(structured, dict) and structured.get("value"):
        config["output"] = "json"
        if isinstance(structured["value"], dict):
            config["output_schema"] = structured["value"]
    return Built("llm", config, retry=retry_policy(p))


def v1_placeholders(c: Component, text: str, ctx: Context) -> str:
    """v1 prompts name inputs `{key}` (`parameters: [{key, component_id}]`) and `{input}` (what
    reaches the component): both become references."""
    for item in as_list(c.params.get("parameters")):
        if isinstance(item, dict) and item.get("key") and item.get("component_id"):
            ref = ctx.output_of(str(item["component_id"]))
            if ref:
                text = text.replace("{" + str(item["key"]) + "}", ref)
    if "{input}" in text:
        text = text.replace("{input}", ctx.v1_input(c))
    return text


def _llm_path(c: Component, path: Path) -> Path:
    return path[1:] if path and path[0] in ("content", "structured", "output") else path


def _fixed_llm(system: str) -> Build:
    """v1 components that are one model call with a fixed instruction."""

    def build(c: Component, ctx: Context) -> Built:
        p = c.params
        config = model_settings(p, ctx)
        top_n = int(_number(p.get("top_n")) or 3)
        config["system"] = system.format(top_n=top_n)
        config["prompt"] = str(ctx.ref(p.get("query"))) if p.get("query") else "{{sys.query}}"
        return Built("llm", config, retry=retry_policy(p))

    return build


def agent_settings(c: Component, ctx: Context, *, tools_of: Component | None = None) -> dict[str, Any]:
    p = c.params
    config = model_settings(p, ctx)
    config["system"] = str(ctx.template(p.get("sys_prompt") or ""))
    tools: list[str] = []
    for spec in as_list(p.get("tools")):
        if is_sub_agent(spec):
            continue  # a sub-agent (see the importer's _sub_agents)
        name = ctx.tool(c, spec)
        if name and name not in tools:
            tools.append(name)
    for server in as_list(p.get("mcp")):
        if not isinstance(server, dict) or not server.get("mcp_id"):
            continue
        sid = str(server["mcp_id"])
        listed = as_dict(server.get("tools"))
        enabled = [n for n, t in listed.items() if not isinstance(t, dict) or t.get("enabled", True)]
        tools.extend(f"mcp:{sid}/{n}" for n in enabled) if enabled else tools.append(f"mcp:{sid}")
        ctx.warn(
            f"{c.id}: MCP server {sid!r} is named by its RAGFlow id: add it to settings.mcp_servers "
            "(or PLAIT_MCP_CONFIG) under that name with its URL"
        )
    if tools:
        config["tools"] = tools
    rounds = _number(p.get("max_rounds"))
    if rounds is not None and rounds >= 0:
        config["max_steps"] = min(int(rounds) + 1, 100)
    return config


def _agent(c: Component, ctx: Context) -> Built:
    config = agent_settings(c, ctx)
    config["prompt"] = _prompt_text(c.params, ctx)
    return Built("agent", config, retry=retry_policy(c.params))


def _categorize(c: Component, ctx: Context) -> Built:
    p = c.params
    config = model_settings(p, ctx)
    if p.get("query"):
        query = p["query"]
        config["input"] = str(ctx.ref(query[0] if isinstance(query, list) and query else query))
    described = as_dict(p.get("category_description"))
    categories: list[dict[str, Any]] = []
    routes: list[tuple[str, str]] = []
    taken = {"else"}
    last: list[str] = []
    for name, spec in described.items():
        spec = spec if isinstance(spec, dict) else {}
        port = unique(safe_name(str(name), "category", _PORT_BAD), taken)
        desc = str(spec.get("description") or "")
        if port != name:
            desc = f"{name}: {desc}" if desc else str(name)
        examples = spec.get("examples")
        if isinstance(examples, str):
            examples = [e for e in examples.split("\n") if e.strip()]
        cat: dict[str, Any] = {"name": port, "description": desc}
        if str_list(examples):
            cat["examples"] = str_list(examples)
        categories.append(cat)
        last = str_list(spec.get("to"))
        routes.extend((port, t) for t in last)
    # RAGFlow sends an answer that names no category to the last category; a downstream no
    # category names (plait's export of an `else` branch) takes that place.
    named = {t for _, t in routes}
    unnamed = [t for t in c.downstream if t not in named]
    routes.extend(("else", t) for t in unnamed or last)
    if not categories:
        categories = [{"name": "other", "description": "anything"}]
    config["categories"] = categories
    return Built("categorize", config, routes=routes, retry=retry_policy(p))


def _categorize_path(c: Component, path: Path) -> Path:
    return ("category", *path[1:]) if path and path[0] == "category_name" else path


def _relevant(c: Component, ctx: Context) -> Built:
    p = c.params
    config = model_settings(p, ctx)
    config["input"] = "{{sys.query}}"
    config["instructions"] = "Answer yes when the content retrieved so far is relevant to the question."
    config["categories"] = [
        {"name": "yes", "description": "relevant"},
        {"name": "no", "description": "not relevant"},
    ]
    routes = [("yes", t) for t in str_list(p.get("yes"))]
    routes += [(port, t) for t in str_list(p.get("no")) for port in ("no", "else")]
    return Built("categorize", config, routes=routes, retry=retry_policy(p))


def _switch(c: Component, ctx: Context) -> Built:
    p = c.params
    cases: list[dict[str, Any]] = []
    routes: list[tuple[str, str]] = []
    for i, cond in enumerate(x for x in as_list(p.get("conditions")) if isinstance(x, dict)):
        items = [x for x in as_list(cond.get("items")) if isinstance(x, dict)]
        when = [_condition(x, ctx, "cpn_id") for x in items] or [{"ref": "{{sys.run_id}}", "op": "empty"}]
        logic = str(cond.get("logical_operator") or "and").lower()
        cases.append({"when": when, "logic": "or" if logic == "or" else "and"})
        routes.extend((f"case_{i + 1}", t) for t in str_list(cond.get("to")))
    if not cases:  # a switch with no case always takes its default branch
        cases = [{"when": [{"ref": "{{sys.run_id}}", "op": "empty"}]}]
    routes.extend(("else", t) for t in str_list(p.get("end_cpn_ids") or p.get("end_cpn_id")))
    return Built("switch", {"cases": cases}, routes=routes)


def _human(c: Component, ctx: Context) -> Built:
    p = c.params
    config: dict[str, Any] = {}
    if p.get("enable_tips", True) is not False and p.get("tips"):
        config["message"] = str(ctx.template(p["tips"]))
    fields: list[dict[str, Any]] = []
    taken: set[str] = set()
    raw = as_dict(p.get("inputs"))
    for key, spec in raw.items():
        spec = spec if isinstance(spec, dict) else {}
        kind = str(spec.get("type") or "line")
        f: dict[str, Any] = {"name": unique(safe_name(str(key), "field"), taken)}
        if spec.get("name") and spec["name"] != key:
            f["label"] = str(spec["name"])
        f["type"] = FIELD_TYPES.get(kind, "string")
        if kind not in FIELD_TYPES:
            ctx.warn(f"{c.id}: input {key!r} of type {kind!r} is asked as text")
        if kind == "file":
            ctx.warn(f"{c.id}: input {key!r} is a file upload: plait asks for text (a URL or the content)")
        if f["type"] == "select":
            f["options"] = [str(o) for o in as_list(spec.get("options"))]
            if not f["options"]:
                f["type"] = "string"
                del f["options"]
        if spec.get("optional"):
            f["required"] = False
        value = spec.get("value")
        if value not in (None, "", []) and kind != "file":
            f["default"] = ctx.template(value)
        fields.append(f)
    if fields:
        config["fields"] = fields
    return Built("human", config, port="submit")


def human_field_path(c: Component, path: Path) -> Path:
    """A UserFillUp input key, renamed as the field was (see _human)."""
    raw = as_dict(c.params.get("inputs"))
    if not path or path[0] not in raw:
        return path
    taken: set[str] = set()
    for key in raw:
        name = unique(safe_name(str(key), "field"), taken)
        if key == path[0]:
            return (name, *path[1:])
    return path


def _http(c: Component, ctx: Context) -> Built:
    p = c.params
    method = str(p.get("method") or "get").upper()
    config: dict[str, Any] = {
        "method": method if method in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD") else "GET"
    }
    config["url"] = str(ctx.template(p.get("url") or "")) or "http://invalid.example"
    if not p.get("url"):
        ctx.warn(f"{c.id}: the Invoke component has no URL")
    headers = p.get("headers")
    if isinstance(headers, str) and headers.strip():
        try:
            headers = json.loads(headers)
        except ValueError:
            ctx.warn(f"{c.id}: its headers are not JSON and were dropped")
            headers = {}
    if isinstance(headers, dict) and headers:
        config["headers"] = {str(k): str(ctx.template(str(v))) for k, v in headers.items()}
    args: dict[str, Any] = {}
    for var in as_list(p.get("variables")):
        if isinstance(var, dict) and var.get("key"):
            args[str(var["key"])] = ctx.ref(var["ref"]) if var.get("ref") else ctx.template(var.get("value"))
    if args:
        if config["method"] in ("GET", "DELETE", "HEAD"):
            config["query"] = args
        else:
            config["body"] = args
            config["body_type"] = "form" if p.get("datatype") == "formdata" else "json"
    if p.get("clean_html"):
        config["response"] = "html_text"
    timeout = _number(p.get("timeout"))
    if timeout and 0 < timeout <= 3600:
        config["timeout_s"] = timeout
    if p.get("proxy"):
        ctx.warn(f"{c.id}: the HTTP proxy setting is not imported")
    return Built("http", config, retry=retry_policy(p))


def _http_path(c: Component, path: Path) -> Path:
    return ("body", *path[1:]) if path and path[0] == "result" else path


def _code(c: Component, ctx: Context) -> Built:
    p = c.params
    lang = str(p.get("lang") or "python").lower()
    if lang not in ("python", "python3"):
        ctx.unsupported(c, f"code in {lang!r}: plait's code node runs Python only (rewrite it in Python)")
    config: dict[str, Any] = {"code": str(p.get("script") or "def main(**inputs):\n    return None\n")}
    args = p.get("arguments")
    if isinstance(args, dict) and args:
        config["arguments"] = {str(k): ctx.ref(v) for k, v in args.items()}
    outputs = p.get("outputs")
    declared: dict[str, str] = {}
    if isinstance(outputs, dict):
        for name, spec in outputs.items():
            if str(name).startswith("_"):
                continue
            kind = str((spec or {}).get("type") or "any").lower() if isinstance(spec, dict) else "any"
            declared[str(name)] = "array" if kind.startswith("array") else CODE_TYPES.get(kind, "any")
    if declared:
        config["outputs"] = declared
    return Built("code", config, retry=retry_policy(p))


def _string_transform(c: Component, ctx: Context) -> Built:
    p = c.params
    delimiters = str_list(p.get("delimiters")) or [","]
    if str(p.get("method") or "split") == "split":
        return Built(
            "text",
            {
                "operation": "split",
                "source": ctx.ref(p.get("split_ref") or ""),
                "delimiters": delimiters,
                "trim": False,
            },
        )
    script = str(p.get("script") or "")
    whole = script.strip()
    refs = re.fullmatch(r"\{+\s*[^{}]+\s*\}+", whole)
    if refs and "@" in whole:
        return Built(
            "text", {"operation": "merge", "source": ctx.template(whole), "separator": delimiters[0]}
        )
    if "{" in script:
        ctx.warn(f"{c.id}: lists in its template are written as JSON, not joined by {delimiters[0]!r}")
    return Built("text", {"operation": "template", "template": str(ctx.template(script))})


def _whole_result(c: Component, path: Path) -> Path:
    if path and path[0] == "result":
        return path[1:]
    if path and path[0] == "first":
        return (0, *path[1:])
    if path and path[0] == "last":
        return (-1, *path[1:])
    return path


def _retrieval_path(c: Component, path: Path) -> Path:
    """Retrieval's `formalized_content` is the node's `content`, its `json` the `chunks`."""
    renamed = {"formalized_content": "content", "json": "chunks"}
    return (renamed[str(path[0])], *path[1:]) if path and path[0] in renamed else path


def _tool_result(c: Component, path: Path) -> Path:
    """A v1 tool component's outputs are all the tool's result in plait."""
    return (
        path[1:]
        if path and path[0] in ("formalized_content", "content", "output", "result", "json")
        else path
    )


def _source(value: Any, ctx: Context) -> Any:
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else value
        if isinstance(value, dict):
            value = value.get("input") or value.get("value")
    return ctx.ref(value) if isinstance(value, str) else value


def _data_operations(c: Component, ctx: Context) -> Built:
    p = c.params
    op = str(p.get("operations") or "select_keys")
    query = p.get("query")
    if isinstance(query, list) and len(query) > 1:
        ctx.warn(f"{c.id}: only the first of its {len(query)} inputs is used")
        query = query[:1]
    config: dict[str, Any] = {"operation": op, "source": _source(query, ctx)}
    if op in ("select_keys", "remove"):
        config["keys"] = str_list(p.get("select_keys") if op == "select_keys" else p.get("remove_keys"))
    elif op == "append_or_update":
        config["updates"] = {
            str(u.get("key")): ctx.template(u.get("value"))
            for u in as_list(p.get("updates"))
            if isinstance(u, dict) and u.get("key")
        }
    elif op == "rename":
        config["renames"] = {
            str(r.get("old_key")): str(r.get("new_key"))
            for r in as_list(p.get("rename_keys"))
            if isinstance(r, dict) and r.get("old_key")
        }
    elif op == "filter":
        config["filter"] = {
            "when": [
                {
                    "key": str(f.get("key") or ""),
                    "op": OPERATORS.get(str(f.get("operator") or "=").lower(), "=="),
                    "value": f.get("value"),
                }
                for f in as_list(p.get("filter_values"))
                if isinstance(f, dict)
            ]
            or [{"key": "", "op": "not_empty"}],
            "logic": str(p.get("logical_operator") or "and"),
        }
    return Built("data_ops", config)


def _list_operations(c: Component, ctx: Context) -> Built:
    p = c.params
    op = str(p.get("operations") or "nth")
    config: dict[str, Any] = {"operation": op, "source": _source(p.get("query"), ctx)}
    n = _number(p.get("n"))
    if n is not None:
        config["n"] = int(n)
    if op in ("sort", "drop_duplicates") and p.get("sort_by"):
        config["key"] = str(p["sort_by"])
    if op == "sort":
        config["reverse"] = str(p.get("sort_method") or "asc").lower() == "desc"
    if op == "filter":
        f = as_dict(p.get("filter"))
        config["filter"] = {
            "when": [
                {
                    "key": "",
                    "op": OPERATORS.get(str(f.get("operator") or "=").lower(), "=="),
                    "value": f.get("value"),
                }
            ]
        }
    return Built("list_ops", config)


def _variable_assigner(c: Component, ctx: Context) -> Built:
    assignments: list[dict[str, Any]] = []
    for v in as_list(c.params.get("variables")):
        if not isinstance(v, dict) or not v.get("variable"):
            continue
        target = str(v["variable"])
        name = target[4:] if target.lower().startswith("env.") else target
        op = str(v.get("operator") or "overwrite")
        a: dict[str, Any] = {"variable": name, "op": op if op in ASSIGN_OPERATORS else "overwrite"}
        if op not in ("clear", "remove_first", "remove_last"):
            param = v.get("parameter")
            # overwrite / append / extend take a variable; set and arithmetic take a constant.
            a["value"] = ctx.ref(param) if op in ("overwrite", "append", "extend") else param
        assignments.append(a)
    if not assignments:
        ctx.unsupported(c, "a VariableAssigner without variables (add one or delete it)")
    return Built("assign", {"assignments": assignments})


def _variable_aggregator(c: Component, ctx: Context) -> Built:
    groups: list[dict[str, Any]] = []
    for g in as_list(c.params.get("groups")):
        if not isinstance(g, dict):
            continue
        refs = [ctx.ref(v.get("value") if isinstance(v, dict) else v) for v in as_list(g.get("variables"))]
        refs = [r for r in refs if isinstance(r, str) and r]
        if refs:
            groups.append({"name": str(g.get("group_name") or f"group_{len(groups) + 1}"), "refs": refs})
    return Built("merge", {"groups": groups} if groups else {})


def _tool_component(c: Component, ctx: Context, arg: str = "query") -> Built:
    """A canvas tool component (v1 DuckDuckGo, Wikipedia...): one `tool` node call of the plait
    tool `TOOLS` names (reported when the runs have none)."""
    p = c.params
    tool = ctx.tool(c, {"component_name": c.name}) or "web_search"
    query = p.get("query")
    if isinstance(query, list):
        query = query[0] if query else None
        if isinstance(query, dict):
            if query.get("component_id"):
                query = ctx.output_of(str(query["component_id"])) or query.get("value")
            else:
                query = query.get("value")
    config: dict[str, Any] = {"tool": tool}
    renamed = TOOL_ARGS.get(c.name.lower(), {})
    arg = renamed.get("query", arg)
    if query:
        config["args"] = {arg: ctx.ref(query)}
    elif c.name.lower() not in TOOL_ARGS or "query" in renamed:
        config["input_param"] = arg
    for src, dst in renamed.items():
        value = p.get(src)
        if src != "query" and value not in (None, "", []):
            config.setdefault("args", {})[dst] = ctx.ref(value) if isinstance(value, str) else value
    if c.name.lower() == "crawler" and p.get("extract_type"):
        kind = str(p["extract_type"])
        config.setdefault("args", {})["format"] = {"content": "text"}.get(kind, kind)
    top_n = _number(p.get("top_n"))
    if top_n:
        config.setdefault("args", {})["max_results"] = int(top_n)
    return Built("tool", config)


def _concentrator(c: Component, ctx: Context) -> Built:
    """v1 Concentrator: joins branches and passes on what reaches it."""
    return Built("merge", {})


def _template(c: Component, ctx: Context) -> Built:
    """v1 Template: `content` with `{key}` parameters, rendered."""
    return Built(
        "text",
        {
            "operation": "template",
            "template": str(ctx.template(v1_placeholders(c, str(c.params.get("content") or ""), ctx))),
        },
    )


# RAGFlow ExeSQL's db_type -> the URL scheme of the connection it needs (plait runs PostgreSQL and
# SQLite; other databases are named in the warning).
_SQL_SCHEMES = {"postgres": "postgresql", "postgresql": "postgresql"}


def _exesql(c: Component, ctx: Context) -> Built:
    """ExeSQL -> `sql`: the statement and row limit; the connection (host, user, password) is
    never imported: the node reads its URL from the stored variable SQL_URL."""
    p = c.params
    config: dict[str, Any] = {"connection": "SQL_URL"}
    sql = p.get("sql")
    if isinstance(sql, str) and sql.strip():
        config["query"] = ctx.template(sql)
    records = _number(p.get("max_records"))
    if records and records >= 1:
        config["max_rows"] = min(int(records), 10_000)
    db_type = str(p.get("db_type") or "mysql").lower()
    scheme = _SQL_SCHEMES.get(db_type)
    where = f"{p.get('host') or 'host'}:{p.get('port') or 5432}/{p.get('database') or 'database'}"
    user = str(p.get("username") or "user")
    if scheme:
        url = f"{scheme}://{user}:<password>@{where}"
        ctx.warn(f"{c.id}: the database connection is not imported; store {url} as the variable SQL_URL")
    else:
        ctx.warn(
            f"{c.id}: plait's sql node runs on PostgreSQL and SQLite, not {db_type}: store the URL "
            "of a PostgreSQL or SQLite copy of the data as the variable SQL_URL"
        )
    return Built("sql", config, retry=retry_policy(p))


def _sql_path(c: Component, path: Path) -> Path:
    """ExeSQL's `formalized_content` is the node's markdown table, its `json` the rows."""
    renamed = {"formalized_content": "markdown", "json": "rows"}
    return (renamed[str(path[0])], *path[1:]) if path and path[0] in renamed else path


def _docs_generator(c: Component, ctx: Context) -> Built:
    """DocsGenerator / DocGenerator -> `document`: content, output format, file name (headers,
    footers and watermarks are RAGFlow's PDF decorations, not imported)."""
    p = c.params
    config: dict[str, Any] = {}
    content = p.get("content")
    if isinstance(content, str) and content:
        config["content"] = ctx.template(content)
    fmt = str(p.get("output_format") or "pdf").lower()
    config["format"] = {"markdown": "md", "text": "txt"}.get(fmt, fmt)
    if p.get("filename"):
        config["filename"] = ctx.template(str(p["filename"]))
    if any(p.get(k) for k in ("header_text", "footer_text", "watermark_text")):
        ctx.warn(f"{c.id}: header, footer and watermark texts are not imported (plait numbers the pages)")
    return Built("document", config, retry=retry_policy(p))


def _excel_processor(c: Component, ctx: Context) -> Built:
    """ExcelProcessor -> `spreadsheet`: `read` of its first input file, or `output` (a file
    written from `transform_data`); `merge` and `transform` have no plait equivalent."""
    p = c.params
    op = str(p.get("operation") or "read").lower()
    if op == "output":
        config: dict[str, Any] = {"operation": "write", "file_format": str(p.get("output_format") or "xlsx")}
        if p.get("transform_data"):
            config["data"] = ctx.ref(p["transform_data"])
        config["filename"] = str(p.get("output_filename") or "output")
        return Built("spreadsheet", config)
    if op != "read":
        ctx.unsupported(
            c,
            f"ExcelProcessor operation {op!r}: plait reads and writes spreadsheets; join or reshape "
            "the rows with a code or data_ops node between a read and a write",
        )
        return Built("spreadsheet", {})
    files = [f for f in as_list(p.get("input_files")) if f]
    config = {"operation": "read"}
    if files:
        config["source"] = ctx.ref(files[0])
        if len(files) > 1:
            ctx.warn(f"{c.id}: only the first of its {len(files)} input files is read (add a node per file)")
    sheets = str(p.get("sheet_selection") or "all")
    if sheets not in ("all", "first"):
        config["sheet"] = sheets.split(",")[0].strip()
    elif sheets == "all":
        ctx.warn(f"{c.id}: plait reads one sheet per node (the first); set `sheet` to read another")
    return Built("spreadsheet", config)


def _excel_path(c: Component, path: Path) -> Path:
    """ExcelProcessor's `data` is the node's `sheets` ({name: rows}); `attachment` the written
    file (the node's whole output)."""
    if path and path[0] == "data":
        return ("sheets", *path[1:])
    if path and path[0] == "attachment":
        return path[1:]
    return path


def _download_path(c: Component, path: Path) -> Path:
    """DocsGenerator's `download` is the node's whole output (the file's reference)."""
    return path[1:] if path and path[0] == "download" else path


def passthrough(mapping: Mapping, plait_type: str) -> Build:
    """For node types added after this table: the mapped params the node's config declares."""

    def build(c: Component, ctx: Context) -> Built:
        declared = ctx.fields_of(plait_type)
        config: dict[str, Any] = {}
        for src, dst in (mapping.passthrough or {}).items():
            if (declared is None or dst in declared) and c.params.get(src) not in (None, "", []):
                value = c.params[src]
                config[dst] = ctx.template(value) if isinstance(value, str) else value
        return Built(plait_type, config, retry=retry_policy(c.params))

    return build


# ----------------------------------------------------------------------------- the tables

# Tools RAGFlow also places on the canvas as components (v1); TOOLS says what each becomes.
TOOL_COMPONENTS = (
    "DuckDuckGo",
    "TavilySearch",
    "TavilyExtract",
    "SearXNG",
    "Wikipedia",
    "ArXiv",
    "Google",
    "GoogleScholar",
    "Bing",
    "Baidu",
    "BaiduFanyi",
    "DeepL",
    "GitHub",
    "PubMed",
    "QWeather",
    "AkShare",
    "Jin10",
    "TuShare",
    "WenCai",
    "YahooFinance",
    "Email",
    "Crawler",
)
# RAGFlow's per-class default timeouts (seed 003, canvas/timeout.go): a component of these classes
# that sets no `timeout` of its own gets the node's `timeout_s` from here on import.
SEARCH_TIMEOUT_S = 12.0
CLASS_TIMEOUTS: dict[str, float] = {
    "exesql": 3.0,
    **{
        name: SEARCH_TIMEOUT_S
        for name in (
            "tavilysearch",
            "tavilyextract",
            "duckduckgo",
            "searxng",
            "google",
            "googlescholar",
            "bing",
            "baidu",
            "wikipedia",
            "arxiv",
            "pubmed",
        )
    },
}


def class_timeout(c: Component) -> float | None:
    """The node timeout of a component: its own `timeout` (seconds) when it sets one, else its
    class's default (CLASS_TIMEOUTS), else None (plait's precedence decides)."""
    default = CLASS_TIMEOUTS.get(c.name.lower())
    if default is None:
        return None
    own = _number(c.params.get("timeout"))
    return own if own is not None and 0 < own <= 3600 else default


LOOP_NAMES = frozenset({"loop"})
MAP_NAMES = frozenset({"iteration"})
BODY_START_NAMES = frozenset({"loopitem", "iterationitem"})
EXIT_LOOP_NAMES = frozenset({"exitloop"})
AGENT_TOOL_HOLDERS = frozenset({"tool"})
INGESTION = frozenset(
    {
        "file",
        "parser",
        "tokenizer",
        "splitter",
        "hierarchicalmerger",
        "titlechunker",
        "tokenchunker",
        "chunker",
        "extractor",
        "indexer",
    }
)
_NEEDS_NODE = (
    "plait has no {kind} node yet (issue 16): remove the component, or replace it with a {instead} node"
)

MAPPINGS: tuple[Mapping, ...] = (
    Mapping(("Begin",), ("start",), _begin),
    Mapping(("Message", "Answer"), ("message",), _message),
    Mapping(("LLM", "Generate"), ("llm",), _llm, output_path=_llm_path),
    Mapping(("Agent",), ("agent",), _agent),
    Mapping(("Categorize",), ("categorize",), _categorize, output_path=_categorize_path),
    Mapping(("Relevant",), ("categorize",), _relevant, output_path=_categorize_path),
    Mapping(
        ("RewriteQuestion",),
        ("llm",),
        _fixed_llm(
            "Rewrite the user's question so that it is complete and self-contained. Reply with the question only."
        ),
        output_path=_llm_path,
    ),
    Mapping(
        ("KeywordExtract",),
        ("llm",),
        _fixed_llm(
            "Extract the {top_n} most important keywords of the user's text. Reply with them, comma-separated."
        ),
        output_path=_llm_path,
    ),
    Mapping(("Switch",), ("switch",), _switch),
    Mapping(("UserFillUp", "Fillup"), ("human",), _human, output_path=human_field_path),
    Mapping(("Invoke",), ("http",), _http, output_path=_http_path),
    Mapping(("CodeExec", "Code"), ("code",), _code),
    Mapping(("StringTransform",), ("text",), _string_transform, output_path=_whole_result),
    Mapping(("DataOperations",), ("data_ops",), _data_operations, output_path=_whole_result),
    Mapping(("ListOperations",), ("list_ops",), _list_operations, output_path=_whole_result),
    Mapping(("VariableAssigner",), ("assign",), _variable_assigner),
    Mapping(("VariableAggregator",), ("merge",), _variable_aggregator),
    *(Mapping((name,), ("tool",), _tool_component, output_path=_tool_result) for name in TOOL_COMPONENTS),
    Mapping(("Concentrator",), ("merge",), _concentrator),
    Mapping(("Template",), ("text",), _template),
    # Node types issue 16 adds: mapped as soon as the node type exists.
    Mapping(
        ("Retrieval", "SearchMyDataset", "search_my_dataset", "search_my_dateset"),
        ("retrieval",),
        None,
        _NEEDS_NODE.format(kind="retrieval (knowledge base search)", instead="tool or http"),
        output_path=_retrieval_path,
        # The retrieval node's config uses RAGFlow's names (plait.nodes.builtin.retrieval).
        passthrough={
            "query": "query",
            "kb_ids": "kb_ids",
            "top_n": "top_n",
            "similarity_threshold": "similarity_threshold",
            "keywords_similarity_weight": "keywords_similarity_weight",
            "empty_response": "empty_response",
        },
    ),
    Mapping(
        ("ExeSQL",),
        ("sql",),
        _exesql,
        _NEEDS_NODE.format(kind="sql", instead="code or http"),
        output_path=_sql_path,
    ),
    Mapping(
        ("DocsGenerator", "DocGenerator"),
        ("document",),
        _docs_generator,
        _NEEDS_NODE.format(kind="document", instead="message or code"),
        output_path=_download_path,
    ),
    Mapping(
        ("ExcelProcessor",),
        ("spreadsheet",),
        _excel_processor,
        _NEEDS_NODE.format(kind="spreadsheet", instead="code"),
        output_path=_excel_path,
    ),
    Mapping(
        ("Browser",),
        (),
        None,
        "plait has no browser-driving node: replace it with an agent using the http_request tool, or an http node",
    ),
    Mapping(("Parallel",), (), None, "use a map node (plait runs a map's items in parallel)"),
)

# Canvas tool components whose RAGFlow params are not the plait tool's `query`: param -> argument.
TOOL_ARGS: dict[str, dict[str, str]] = {
    "crawler": {"query": "url"},
    "tavilyextract": {"urls": "urls", "extract_depth": "extract_depth", "format": "format"},
    "email": {"to_email": "to", "cc_email": "cc", "subject": "subject", "content": "content"},
}
# Tools whose RAGFlow params hold a connection or credentials: the variables plait reads instead.
TOOL_SETTINGS: dict[str, str] = {
    "exesql": "SQL_URL (postgresql://user:password@host:5432/db)",
    "email": "SMTP_HOST, SMTP_PORT, SMTP_USER, SMTP_PASSWORD, SMTP_FROM",
    "github": "GITHUB_TOKEN",
    "pubmed": "NCBI_API_KEY",
}
SECRET_PARAMS = ("api_key", "password", "smtp_server", "host", "email")
# Agent tools: RAGFlow component_name -> plait tool names, first available wins.
TOOLS: dict[str, tuple[str, ...]] = {
    "duckduckgo": ("web_search",),
    "tavilysearch": ("web_search",),
    "searxng": ("web_search",),
    "wikipedia": ("wikipedia",),
    "arxiv": ("arxiv",),
    "retrieval": ("retrieval",),
    "searchmydataset": ("retrieval",),
    "search_my_dataset": ("retrieval",),
    "search_my_dateset": ("retrieval",),
    "exesql": ("sql", "execute_sql"),
    "email": ("email",),
    "crawler": ("crawler",),
    "tavilyextract": ("tavily_extract",),
    "pubmed": ("pubmed",),
    "github": ("github",),
    "invoke": ("http_request",),
    "codeexec": ("code_exec",),
    "google": ("google",),
    "googlescholar": ("google_scholar",),
    "baidu": ("baidu",),
    "baidufanyi": ("baidu_fanyi",),
    "bing": ("bing",),
    "deepl": ("deepl",),
    "qweather": ("qweather",),
    "akshare": ("akshare",),
    "jin10": ("jin10",),
    "tushare": ("tushare",),
    "wencai": ("wencai",),
    "yahoofinance": ("yahoo_finance",),
}
TOOL_HINT = (
    "plait has no {tool!r} tool yet: remove it from the agent's tools, or give the agent an MCP "
    "server that offers it (mcp:<server>/<tool>)"
)

BY_NAME: dict[str, Mapping] = {name.lower(): m for m in MAPPINGS for name in m.names}
