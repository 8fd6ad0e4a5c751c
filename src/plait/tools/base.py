"""The tool contract shared by the `agent` and `tool` nodes, MCP servers and the assistant."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from plait.errors import PlaitError


class ToolError(PlaitError):
    """A tool call failed in a way the caller (an agent, a node) should see as a clear message.

    Unlike other plait errors, `str()` includes the hint: the text an agent hands back to the model.
    """

    code = "tool_error"

    def __init__(self, message: str, *, hint: str | None = None, fatal: bool = False) -> None:
        super().__init__(message, hint=hint)
        # fatal: the tool cannot work at all (its MCP server is gone, bad configuration); an agent
        # fails the node instead of handing the message back to the model.
        self.fatal = fatal

    def __str__(self) -> str:
        return self.with_hint()


class ToolCallContext(Protocol):
    """What a tool may use while it runs: secrets by name and the run it belongs to.

    Nodes pass their `NodeContext`, which also offers `run_flow(ref, inputs)` (used by flow tools)
    and the run's `services` (`mcp_servers`, `http`: its HTTP client pool); tools look those up
    with `getattr` so other callers may omit them.
    """

    run_id: str
    node_id: str

    def secret(self, name: str) -> str | None: ...


ToolFn = Callable[[dict[str, Any], ToolCallContext], Awaitable[Any]]


@dataclass(slots=True)
class Tool:
    """A named, JSON-Schema-typed async callable. `call(args, ctx)` returns JSON-serialisable data."""

    name: str
    description: str
    parameters: dict[str, Any]
    call: ToolFn
    source: str = "builtin"  # "builtin", "mcp:<server>", "flow", "agent"


class ToolRegistry:
    """Tools by name. Registries layer: a run's registry adds MCP and flow tools over the built-ins."""

    def __init__(self, tools: Iterable[Tool] = (), *, parent: ToolRegistry | None = None) -> None:
        self._tools: dict[str, Tool] = {t.name: t for t in tools}
        self._parent = parent

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None and self._parent is not None:
            return self._parent.get(name)
        if tool is None:
            raise ToolError(
                f"unknown tool {name!r}",
                hint=f"use one of: {', '.join(sorted(self.names())) or '(none registered)'}",
            )
        return tool

    def names(self) -> set[str]:
        names = set(self._tools)
        if self._parent is not None:
            names |= self._parent.names()
        return names

    def list(self) -> list[Tool]:
        return [self.get(n) for n in sorted(self.names())]
