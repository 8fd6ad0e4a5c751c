"""Pydantic models at the edges of the HTTP API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlowCreate(_In):
    document: dict[str, Any] = Field(..., description="The plait/flow@1 document (the draft).")
    id: str | None = Field(None, description="Flow id; default: the document's id.")
    name: str | None = None
    description: str | None = None


class FlowUpdate(_In):
    document: dict[str, Any] | None = None
    name: str | None = None
    description: str | None = None


class FlowImport(_In):
    content: str | None = Field(None, description="A plait flow or RAGFlow agent as JSON or YAML text.")
    document: dict[str, Any] | None = Field(
        None, description="A plait flow or RAGFlow agent as a JSON object."
    )
    format: Literal["plait", "ragflow"] | None = Field(
        None, description="The document's format; default: detected (see docs/ragflow.md)."
    )
    id: str | None = Field(None, description="The flow id to import as (default: the document's own).")
    overwrite: bool = False
    publish: bool = False


class PublishBody(_In):
    note: str = ""


class RunBody(_In):
    inputs: dict[str, Any] = Field(default_factory=dict)


class ResumeBody(_In):
    node_id: str | None = Field(
        None, description="The waiting node (interrupt id); optional if only one waits."
    )
    data: Any = None


class RetryBody(_In):
    from_node: str


class ErrorInfo(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorBody(BaseModel):
    error: ErrorInfo


class FlowSummary(BaseModel):
    id: str
    name: str
    description: str
    latest_version: int
    owner_id: str | None = None
    access: Literal["owner", "admin", "editor", "viewer"] | None = Field(
        None, description="What the caller may do with the flow."
    )
    created_at: float
    updated_at: float


class FlowOut(FlowSummary):
    draft: dict[str, Any]
    problems: list[dict[str, Any]]


class FlowImportOut(FlowOut):
    format: str | None = Field(None, description="Set when the document was not a plait flow.")
    warnings: list[str] = Field(default_factory=list, description="What the import approximated.")


class VersionOut(BaseModel):
    flow_id: str
    version: int
    note: str
    created_at: float
    document: dict[str, Any] | None = None


class RunStarted(BaseModel):
    id: str


class RunResultOut(BaseModel):
    id: str
    status: str
    outputs: dict[str, Any]
    usage: dict[str, Any]
    error: str | None = None
    tasks: list[dict[str, Any]] | None = None


class RunSummary(BaseModel):
    id: str
    flow_id: str
    version: int | None
    status: str
    outputs: dict[str, Any] | None
    error: str | None
    usage: dict[str, Any] | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    cancel_requested: bool
    trigger_id: str | None = Field(None, description="The trigger (schedule, webhook) that started the run.")
    duration_ms: float | None = Field(None, description="finished_at - started_at, once the run stopped.")
    tokens: int | None = Field(None, description="Total LLM tokens (usage.total_tokens).")
    parent_run_id: str | None = Field(
        None, description="For a sub-flow's child run: the run whose subflow node started it."
    )


class RunDetail(RunSummary):
    inputs: dict[str, Any]
    vars: dict[str, Any]
    nodes: dict[str, dict[str, Any]]
    tasks: list[dict[str, Any]]
    last_seq: int
    executing_here: bool
    children: list[RunSummary] = Field(
        default_factory=list, description="The runs its subflow nodes started, newest first."
    )


class TaskOut(BaseModel):
    token: str
    run_id: str
    node_id: str
    kind: str
    status: str
    message: str
    fields: list[Any]
    prefill: dict[str, Any]
    actions: list[Any]
    assignees: list[Any]
    blocking: bool
    expires_at: float | None
    created_at: float
    resolved_at: float | None
    result: dict[str, Any] | None


class DecisionOut(BaseModel):
    step: int
    node_id: str | None
    data: dict[str, Any]
    created_at: float


class ComponentBody(_In):
    source: str = Field(..., description="Python source defining a plait.sdk.Component subclass (<= 1 MiB).")
    class_name: str | None = Field(
        None, description="The component class; optional when the source defines exactly one."
    )


class ComponentOutput(BaseModel):
    name: str
    type: str = "any"
    description: str = ""


class ComponentInput(ComponentOutput):
    required: bool = True
    default: Any = None


class ComponentValidationOut(BaseModel):
    valid: bool
    class_name: str | None = None
    display_name: str = ""
    description: str = ""
    inputs: list[ComponentInput] = Field(default_factory=list)
    outputs: list[ComponentOutput] = Field(default_factory=list)
    error: str | None = Field(
        None, description="One line, e.g. 'line 3: `open` is not allowed in components'."
    )
    problems: list[str] = Field(default_factory=list)
    builtin: bool = Field(False, description="Identical to a built-in template: the AST scan was skipped.")
    stage: str | None = Field(None, description="Where validation failed: limits, scan or sandbox.")


class ComponentSummary(BaseModel):
    name: str
    class_name: str
    display_name: str
    description: str = ""
    inputs: list[ComponentInput] = Field(default_factory=list)
    outputs: list[ComponentOutput] = Field(default_factory=list)
    builtin: bool = False
    version: int
    created_at: float
    updated_at: float


class ComponentOut(ComponentSummary):
    source: str


# ------------------------------------------------------------------------ editor (the canvas)
class NodeTypeOut(BaseModel):
    name: str = Field(..., description="The type (`component:<Name>` for a custom component).")
    title: str
    description: str
    category: str
    config_schema: dict[str, Any] = Field(..., description="JSON Schema of the node's `config`.")
    input_ports: list[str]
    output_ports: list[str] | str = Field(
        ..., description="The ports of a default config, or 'dynamic' when they need a config."
    )
    ports_from_config: bool = Field(
        False,
        description="The ports depend on the config (switch cases, human actions): ask "
        "POST /api/v1/node-types/{type}/ports when it changes.",
    )
    node_type: str | None = Field(None, description="For palette entries of components: the node's `type`.")
    config_defaults: dict[str, Any] | None = None
    outputs: list[dict[str, Any]] | None = None


class PortsBody(_In):
    config: dict[str, Any] = Field(default_factory=dict)


class PortsOut(BaseModel):
    type: str
    input_ports: list[str]
    output_ports: list[str]
    valid: bool
    problems: list[dict[str, Any]]


class ValidateBody(_In):
    document: Any = Field(None, description="A plait flow as a JSON object.")
    content: str | None = Field(None, description="A plait flow as JSON or YAML text.")


class ProblemOut(BaseModel):
    code: str
    message: str
    node_id: str | None = None
    field: str | None = None
    hint: str | None = None


class ValidationOut(BaseModel):
    valid: bool
    problems: list[ProblemOut]


class DuplicateBody(_In):
    id: str | None = Field(None, description="The new flow's id; default `<id>-copy`.")
    name: str | None = None


class VariableBody(_In):
    value: Any
    is_secret: bool = False
    description: str | None = None


class ToolOut(BaseModel):
    name: str
    ref: str = Field(..., description="What an agent's `tools` or a `tool` node names it by.")
    description: str
    parameters: dict[str, Any] = Field(..., description="JSON Schema of the arguments.")
    source: str = Field(..., description="'builtin', 'flow' or 'mcp:<server>'.")


class MCPServerOut(BaseModel):
    name: str
    ref: str = Field(..., description="`mcp:<server>`: all of its tools.")
    transport: str = Field(..., description="'stdio' or 'http'.")
    tools: list[ToolOut]
    error: str | None = Field(None, description="Why the server could not be listed (then no tools).")


class ToolsOut(BaseModel):
    tools: list[ToolOut] = Field(..., description="The built-in tools.")
    mcp_servers: list[MCPServerOut] = Field(
        ..., description="The server-side MCP servers (PLAIT_MCP_CONFIG)."
    )
    mcp_config_error: str | None = Field(None, description="Why the PLAIT_MCP_CONFIG file could not be read.")


class VariableOut(BaseModel):
    name: str
    value: Any = Field(..., description="'********' for secrets.")
    is_secret: bool
    description: str
    scope: Literal["user", "global"] = Field("user", description="The caller's own, or deployment-wide.")
    updated_at: float


# ---------------------------------------------------------------- users, keys, sharing, sign-in
RoleName = Literal["admin", "editor", "viewer"]
ScopeName = Literal["read", "write", "run", "admin"]


class UserOut(BaseModel):
    id: str
    email: str | None
    name: str
    role: RoleName
    disabled: bool
    created_at: float


class MeOut(UserOut):
    scopes: list[ScopeName]
    auth: Literal["key", "session", "deployment"]


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: str = Field(..., max_length=320)
    name: str = Field("", max_length=200)
    role: RoleName = "editor"
    password: str | None = Field(None, max_length=1024)


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(None, max_length=200)
    role: RoleName | None = None
    disabled: bool | None = None
    password: str | None = Field(None, max_length=1024)


def _default_scopes() -> list[ScopeName]:
    return ["read", "write", "run"]


class ApiKeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field("", max_length=200)
    scopes: list[ScopeName] = Field(default_factory=_default_scopes, min_length=1)


class ApiKeyOut(BaseModel):
    id: str
    name: str
    prefix: str = Field(..., description="The key's first characters, to tell keys apart.")
    scopes: list[ScopeName]
    user_id: str | None
    created_at: float
    last_used_at: float | None


class ApiKeyCreated(ApiKeyOut):
    key: str = Field(..., description="The key itself: shown this once, never again.")


class LoginBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: str = Field(..., max_length=320)
    password: str = Field(..., max_length=1024)


class LoginOut(BaseModel):
    user: UserOut


class ShareBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["viewer", "editor"]


class ShareOut(BaseModel):
    user_id: str
    email: str | None
    name: str
    role: Literal["viewer", "editor"]


# --------------------------------------------------------------------------- the assistant
class AssistantBody(_In):
    flow_id: str = Field(..., max_length=200, description="The flow the message is about (the canvas).")
    input_value: str = Field(..., description="The user's message (<= 50,000 characters).")
    session_id: str | None = Field(
        None,
        max_length=128,
        description="The conversation (the panel sends `agentic_<uuid>`); one is made when missing.",
    )
    provider: str | None = Field(None, max_length=64, description="Model provider; default: yours.")
    model_name: str | None = Field(None, max_length=200, description="Model; default: the provider's.")
    max_retries: int | None = Field(
        None, ge=1, le=10, description="Total attempts to get a valid component (default 3)."
    )


class AssistantUsage(BaseModel):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class AssistantReply(BaseModel):
    model_config = ConfigDict(extra="allow")

    result: str
    validated: bool
    class_name: str | None
    component_code: str | None
    validation_attempts: int
    usage: AssistantUsage
    duration_seconds: float
    intent: str
    provider: str
    model: str | None


class AssistantModel(BaseModel):
    name: str
    display_name: str


class AssistantProvider(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    configured: bool
    default_model: str | None
    models: list[AssistantModel]


class AssistantConfig(BaseModel):
    configured: bool
    configured_providers: list[str]
    providers: list[AssistantProvider]
    default_provider: str | None
    default_model: str | None


class AssistantReset(BaseModel):
    status: Literal["ok"]
    components_cleared: int
    session_id: str | None


class RestorePointOut(BaseModel):
    id: int
    flow_id: str
    note: str
    created_by: str | None
    created_at: float
    node_count: int
    document: dict[str, Any] | None = None
