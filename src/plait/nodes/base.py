"""The contract between the engine and node types.

A node type is a `Node` subclass with a pydantic `Config`, declared ports and a `run`
method. The engine builds one instance per flow node at compile time (config parsed once)
and calls `run(ctx)` for every execution, giving it a `NodeContext`.

`Node` is generic over its config model (`class HttpNode(Node[HttpConfig])`), so `self.config`
and the config passed to the classmethods are typed as the node's own config, with no casts.
Code that handles node types of any kind (the registry, the engine's plan) says `Node[Any]`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from plait.errors import PlaitError
from plait.spec.models import GraphSpec

ConfigT = TypeVar("ConfigT", bound=BaseModel)


class NodeError(PlaitError):
    """A clean, user-facing failure of a node (what the run shows); `hint` says how to fix it.

    `retryable` False stops the engine's retries (the same input would fail the same way).
    """

    code = "node_error"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        retryable: bool = True,
        code: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, code=code)
        self.retryable = retryable


class InterruptRequest(Exception):
    """Raised (via `ctx.interrupt`) to pause the run until `resume` delivers data to this node.

    Control flow, not an error: it unwinds the node's `run` to the engine, which records a waiting
    node (a human task, a timer) instead of a failure. So it is not a `PlaitError`, and code that
    catches `PlaitError` (or maps errors to HTTP statuses) never swallows a pause by mistake.
    """

    def __init__(
        self,
        payload: dict[str, Any],
        *,
        kind: str = "human",
        blocking: bool = True,
        timeout_s: float | None = None,
    ) -> None:
        super().__init__(f"interrupt: {kind}")
        self.payload = payload
        self.kind = kind
        self.blocking = blocking
        self.timeout_s = timeout_s


class MultiInput(dict[str, Any]):
    """The value of a port that several edges delivered to: {source_node_id: value}, in edge order."""


@dataclass(slots=True)
class NodeResult:
    """What a node run produced. `ports` names the fired output ports (None: all of them)."""

    output: Any = None
    ports: tuple[str, ...] | None = None
    usage: dict[str, int] | None = None
    model: dict[str, str] | None = None  # {provider, model} that answered its (last) model call


class NodeContext(Protocol):
    """What a running node may see and do; implemented by the engine (`NodeRunContext`).

    The values a node reads are read-only properties: a node never assigns them (an
    implementation may hold them as plain attributes). `run_id` and `node_id` are declared as
    attributes because nodes hand their context to tools, and `tools.base.ToolCallContext`
    declares them so.
    """

    run_id: str
    node_id: str

    @property
    def attempt(self) -> int:
        """1 for the first attempt, then 2, 3... on retries."""

    @property
    def input(self) -> Any:
        """The value on `in` (a `MultiInput` {source: value} if several edges delivered)."""

    @property
    def inputs(self) -> Mapping[str, Any]:
        """Port -> value, for nodes with several input ports."""

    @property
    def vars(self) -> Mapping[str, Any]:
        """Flow variables (read); change them with `set_var`."""

    def render(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        """Resolve references/templates in `value` (deeply), with optional extra roots (loop aliases).
        Synchronous, for `execute`: a template with loops or calls gets a short time budget."""

    async def arender(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        """`render` for `run`: templates with loops or calls render off the event loop, within
        their time budget and the node's timeout."""

    def lookup(self, root: str) -> Any:
        """The value of a reference root: a node id, inputs, vars, sys, env or an alias."""

    def set_var(self, name: str, value: Any) -> None: ...

    def interrupt(
        self,
        payload: dict[str, Any],
        *,
        kind: str = "human",
        blocking: bool = True,
        timeout_s: float | None = None,
    ) -> Any:
        """Return the resume data if this node is being resumed, else raise InterruptRequest."""

    def emit_token(self, delta: str) -> None: ...

    def emit_tool_call(self, name: str, args: Any) -> None: ...

    @property
    def services(self) -> Any:
        """The run's shared services: `providers` (model providers by name) and `tools`."""

    def secret(self, name: str) -> str | None:
        """A secret (API key...) by name: the run's stored variables first, then, for the
        operator's provider and tool settings only (`OPENAI_API_KEY`...), the process environment
        (see plait.engine.context.lookup_secret and docs/secrets.md)."""

    async def run_body(self, body: str, *, aliases: Mapping[str, Any], inputs: Any = None) -> dict[str, Any]:
        """Run one of this node's bodies (by the name `subgraphs` gives it) with alias roots;
        returns its outputs."""

    async def run_flow(self, ref: str, inputs: Mapping[str, Any], *, resume: Any = None) -> dict[str, Any]:
        """Run another flow (by path or id) as a child run; returns its outputs. A child that waits
        for people raises `InterruptRequest` with its task (and its state); `resume` is the answer
        as the subflow node accepted it, to continue that child."""


class EmptyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Node(Generic[ConfigT]):
    """Base class of node types. Subclasses name their config model twice, as the type argument
    (for the type checker) and as `Config` (for parsing at run time), set the other class
    attributes and implement run/execute."""

    type_name: ClassVar[str]
    title: ClassVar[str] = ""
    description: ClassVar[str] = ""
    category: ClassVar[str] = "core"
    Config: ClassVar[type[BaseModel]] = EmptyConfig
    input_ports: ClassVar[tuple[str, ...]] = ("in",)
    # True when execute() is synchronous and pure in-memory: the engine runs it inline, no task.
    inline: ClassVar[bool] = False
    default_timeout_s: ClassVar[float | None] = None
    # Output nodes contribute `flow_output(output)` to the run's outputs, under `config.name` or the id.
    is_output: ClassVar[bool] = False
    # Config fields that hold templates rendered by the node itself at run time (per item, etc.);
    # validation does not require their references to be upstream nodes.
    late_bound_fields: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, node_id: str, config: ConfigT) -> None:
        self.id = node_id
        self.config: ConfigT = config

    @classmethod
    def output_ports(cls, config: ConfigT) -> list[str]:
        """Output ports for this config; branching nodes return one port per branch."""
        return ["out"]

    @classmethod
    def subgraphs(cls, config: ConfigT) -> dict[str, GraphSpec]:
        """Nested bodies (loop/map) to validate and compile with the flow."""
        return {}

    @classmethod
    def body_aliases(cls, config: ConfigT) -> frozenset[str]:
        """Extra reference roots available inside this node's bodies (item, index...)."""
        return frozenset()

    @classmethod
    def reference_texts(cls, config: ConfigT) -> list[tuple[str, Any]]:
        """(field, value) pairs whose templates validation checks; bodies are validated on their own."""
        bodies = cls.subgraphs(config)
        return [(k, v) for k, v in config.model_dump(mode="json").items() if k not in bodies]

    def flow_output(self, output: Any) -> Any:
        return output

    def validate_resume(self, data: Any) -> Any:
        """Check data delivered by `resume` before the run accepts it; raise NodeError to refuse."""
        return data

    @classmethod
    def task_hint_problems(cls, hints: Any) -> list[str] | None:
        """Problems with an edge-LLM decider's `human` hints for a node of this type ([] when they
        can be used); None: this type asks no one, so it takes no hints."""
        return None

    def apply_task_hints(
        self, payload: dict[str, Any], hints: Mapping[str, Any] | None, decided: Any
    ) -> None:
        """Word this node's task from the decider's `human` hints and its `decided` input (in place)."""

    def accept_resume(self, data: Any, interrupt: Mapping[str, Any]) -> Any:
        """What the re-run node receives from `ctx.interrupt`: by default `validate_resume(data)`.

        `interrupt` is the pending interrupt being answered (its `payload` included), so a node that
        pauses several times (an agent asking for approvals) can keep its state in the payload and
        get it back with the answer; the returned value is checkpointed with the resume.
        """
        return self.validate_resume(data)

    async def run(self, ctx: NodeContext) -> NodeResult | Any:
        return self.execute(ctx)

    def execute(self, ctx: NodeContext) -> NodeResult | Any:
        raise NotImplementedError(f"{type(self).__name__} implements neither run nor execute")


NodeFactory = Callable[[str, Any], Node[Any]]
AsyncRunner = Callable[..., Awaitable[Any]]
