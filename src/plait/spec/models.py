"""Pydantic models of the `plait/flow@1` document: the single source of truth for its shape."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from plait.spec.model_settings import ModelSettings

SCHEMA_ID: Final = "plait/flow@1"
DEFAULT_PORT_OUT = "out"
DEFAULT_PORT_IN = "in"
# Roots of references that are not node ids; a node may not use them as its id.
RESERVED_IDS = frozenset({"inputs", "vars", "sys", "env", "item", "index", "result", "loop"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RetryPolicy(_Model):
    """`max_attempts` is the absolute number of calls, the first one included."""

    max_attempts: int = Field(1, ge=1, le=100)
    delay_s: float = Field(0.0, ge=0, le=3600)
    backoff: float = Field(2.0, ge=1, le=10, description="Multiplier applied to delay_s after each failure.")


ERROR_PORT = "error"


class OnError(_Model):
    """What a node's failure (after its retries) does: `fail` the run (the default), continue
    with `default` as the node's output, or `route` to the node's `error` output port with
    `{"error": message}` (the normal ports are pruned). As Dify's and RAGFlow's error handling."""

    mode: Literal["fail", "default", "route"] = "fail"
    default: Any = Field(None, description="The node's output after a failure, with mode `default`.")


class Position(_Model):
    x: float = 0
    y: float = 0


class NodeSpec(_Model):
    id: str = Field(min_length=1, max_length=128, pattern=r"^[^\s{}@.]+$")
    type: str = Field(min_length=1)
    label: str | None = None
    description: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    requires: list[str] = Field(default_factory=list, description="Control dependencies without data.")
    position: Position | None = None
    retry: RetryPolicy | None = None
    timeout_s: float | None = Field(None, gt=0)
    on_error: OnError | None = None


class EdgeSpec(_Model):
    id: str | None = None
    source: str
    source_port: str = DEFAULT_PORT_OUT
    target: str
    target_port: str = DEFAULT_PORT_IN


class GraphSpec(_Model):
    """A set of nodes and edges: a flow's body, or the body of a loop or map node."""

    nodes: list[NodeSpec] = Field(default_factory=list)
    edges: list[EdgeSpec] = Field(default_factory=list)


class DeciderSettings(ModelSettings):
    """The model that schedules an `edge_llm` flow (docs/edge-llm.md): a model node's settings
    (provider, model, fallbacks, script...) plus `instructions`."""

    instructions: str | None = Field(
        None, description="Extra guidance appended to the decider's system prompt."
    )


class Settings(_Model):
    policy: Literal["dataflow", "edge_llm"] = "dataflow"
    max_concurrency: int = Field(8, ge=1, le=4096)
    timeout_s: float | None = Field(None, gt=0, description="Wall-clock limit for the whole run.")
    decider: DeciderSettings | None = Field(
        None, description="The edge-LLM decider; required with policy edge_llm."
    )
    mcp_servers: dict[str, dict[str, Any]] | None = Field(
        None,
        description="MCP servers whose tools this flow's agent/tool nodes may use, by name (see docs/tools.md).",
    )


class FlowDocument(GraphSpec):
    schema_: Literal["plait/flow@1"] = Field(SCHEMA_ID, alias="schema")
    id: str = Field("flow", min_length=1, max_length=128)
    name: str = ""
    description: str = ""
    inputs: dict[str, Any] | None = Field(None, description="JSON Schema of the run inputs.")
    settings: Settings = Field(default_factory=Settings)
    variables: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)
