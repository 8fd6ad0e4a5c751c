"""`RunServices`: everything a run needs from outside the flow, in one explicit object.

Model providers, the tool registry, the flow's MCP servers, the custom-component source, the
cancel source, the HTTP client and MCP connection pools, the sub-flow resolver and the node registry all travel in one
`RunServices` that the caller builds (`plait.run(..., services=...)`, or the service layer for its
runs) and the engine hands to every node (`ctx.services`) and to the runs nested in it (loop/map
bodies share it; a sub-flow gets a copy one level deeper). Nothing here is a module global: two
runs in one process can use different providers, tools, component sources or connection pools.
Pools are closed by whoever made them (the server at shutdown), never by a run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from plait.engine.cancel import CancelSource
from plait.engine.checkpoint import Checkpointer
from plait.engine.events import EventData
from plait.engine.limits import DEFAULT_LIMITS, ExecutionCount, RunLimits
from plait.knowledge import KnowledgeSource
from plait.llm.base import Provider
from plait.net.http import HttpClients
from plait.net.redact import SecretMask
from plait.nodes.artifacts import ArtifactStore, MemoryArtifacts
from plait.nodes.builtin.component import ComponentSource
from plait.nodes.registry import NodeRegistry
from plait.tools.base import ToolRegistry
from plait.tools.mcp import MCPConnections


class ProviderSource(Protocol):
    """Where nodes get model providers by name (`plait.llm` implements it; tests pass their own)."""

    def get(self, name: str) -> Provider: ...


@dataclass(slots=True)
class SubflowCall:
    """A subflow node asking for a child run: who asks, with what, and how the child reports."""

    run_id: str  # the parent run
    node_id: str  # the subflow node
    services: RunServices  # the parent run's services (the child's are one level deeper)
    forward: Callable[[EventData, str], None]  # put a child's node event into the parent's log
    resume: Any = None  # the answer for a child that waited for people (SubflowNode.accept_resume)
    # Where the child is a run of its own (plait.engine.children): the parent's checkpointer and the
    # node's key in the parent run; None: the child is kept in memory.
    checkpointer: Checkpointer | None = None
    key: str | None = None
    continuing: bool = False  # the node continues an execution cut short (a completed child stands)


class FlowResolver(Protocol):
    """Runs another flow (by path or id) as a child run and returns its outputs."""

    def __call__(self, ref: str, inputs: dict[str, Any], call: SubflowCall) -> Awaitable[dict[str, Any]]: ...


@dataclass(slots=True, kw_only=True)
class RunServices:
    """The services of one run; nested runs share it (bodies) or get a copy (sub-flows, `child`)."""

    providers: ProviderSource | None = None  # None: the default registry of plait.llm
    tools: ToolRegistry | None = None  # None: the built-in tools of plait.tools
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)  # the flow's settings.mcp_servers
    component_source: ComponentSource | None = None  # where `component` nodes find components
    cancels: CancelSource | None = None  # where a cancel request for the run comes from
    limits: RunLimits = DEFAULT_LIMITS  # output size, sub-flow depth, node executions (engine.limits)
    # The node executions of the run tree so far: the engine gives each top-level run its own,
    # and its bodies and sub-flow children share it.
    executions: ExecutionCount | None = None
    http: HttpClients | None = None  # HTTP client pool (http node, web tools); None: the engine's default
    mcp: MCPConnections | None = None  # MCP sessions (mcp: tools); None: the engine's default
    resolve_flow: FlowResolver | None = None  # for subflow nodes; None: sub-flows unavailable
    registry: NodeRegistry | None = None  # the node types the flow was compiled with
    depth: int = 0  # sub-flow nesting level (0: a top-level run)
    # The run's secret values: what leaves the run (events, checkpoints) is masked with it
    # (plait.engine.journal); None: nothing is masked.
    mask: SecretMask | None = None
    # Where the run's files go (document / spreadsheet nodes; plait.nodes.artifacts): the server
    # passes the store's; otherwise they stay in this object, one store per RunServices.
    artifacts: ArtifactStore = field(default_factory=MemoryArtifacts)
    # The knowledge bases of the run's owner (`retrieval` node and tool); None: no knowledge bases.
    knowledge: KnowledgeSource | None = None

    def child(self, **changes: Any) -> RunServices:
        """A copy with some fields changed (a sub-flow's services, a run's own resolver)."""
        return replace(self, **changes)


__all__ = ["FlowResolver", "ProviderSource", "RunServices", "SubflowCall"]
