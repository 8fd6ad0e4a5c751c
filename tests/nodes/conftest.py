"""A small in-memory NodeContext for unit-testing pure (inline) node types without the engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from plait.expr import render
from plait.nodes import MultiInput, Node, default_registry


class FakeContext:
    """The NodeContext attributes inline nodes use: input(s), vars, set_var, lookup and render.

    `roots` maps reference roots (node ids, inputs, sys...) to values; `vars` is also the `vars`
    root, as in the engine. `delivered` simulates several edges into `in` (a MultiInput).
    """

    def __init__(
        self,
        input: Any = None,
        *,
        roots: Mapping[str, Any] | None = None,
        vars: Mapping[str, Any] | None = None,
        delivered: Mapping[str, Any] | None = None,
    ) -> None:
        self.run_id = "run-1"
        self.node_id = "node"
        self.attempt = 1
        self.input = MultiInput(delivered) if delivered is not None else input
        self.inputs = {} if self.input is None else {"in": self.input}
        self.vars: dict[str, Any] = dict(vars or {})
        self._roots = {name.lower(): value for name, value in (roots or {}).items()}

    def lookup(self, root: str) -> Any:
        if root == "vars":
            return self.vars
        return self._roots[root]  # KeyError for unknown roots, like the engine

    def render(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        if not extra:
            return render(value, self.lookup)
        aliases = {name.lower(): alias for name, alias in extra.items()}
        return render(value, lambda root: aliases[root] if root in aliases else self.lookup(root))

    async def arender(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        return self.render(value, extra)

    def set_var(self, name: str, value: Any) -> None:
        self.vars[name] = value


@pytest.fixture
def make_ctx() -> type[FakeContext]:
    return FakeContext


@pytest.fixture
def make_node() -> Callable[[str, dict[str, Any]], Node]:
    """Build a node of a registered type from a config dict, validated as the engine does."""

    def build(type_name: str, config: dict[str, Any]) -> Node:
        registry = default_registry()
        node_class = registry.get(type_name)
        assert node_class is not None, f"{type_name!r} is not registered"
        return node_class("n", registry.parse_config(type_name, config))

    return build
