"""One registry of node types, read by validation, the engine, the CLI, the API and the canvas.

The default registry starts with the built-in types that `plait.nodes.builtin` lists; `register`
adds a custom type to it (embedding code, tests). Any other registry is built explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from plait.nodes.base import Node
from plait.nodes.builtin import BUILTIN_NODE_TYPES

Describer = Callable[[], list[dict[str, Any]]]


class NodeRegistry:
    def __init__(self, types: Iterable[type[Node[Any]]] = (), describers: Iterable[Describer] = ()) -> None:
        self._types: dict[str, type[Node[Any]]] = {}
        # Extra palette entries computed on demand (a component source's components, see
        # `component_palette` in nodes/builtin/component.py); listed by describe_all() only.
        self._describers: list[Describer] = []
        for cls in types:
            self.register(cls)
        for describer in describers:
            self.add_describer(describer)

    def register(self, cls: type[Node[Any]]) -> type[Node[Any]]:
        name = cls.type_name
        if name in self._types and self._types[name] is not cls:
            raise ValueError(f"node type {name!r} is already registered by {self._types[name].__name__}")
        self._types[name] = cls
        return cls

    def get(self, name: str) -> type[Node[Any]] | None:
        return self._types.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._types

    def names(self) -> list[str]:
        return sorted(self._types)

    def parse_config(self, name: str, config: dict[str, Any]) -> BaseModel:
        """Validate a node config; raises KeyError (unknown type) or pydantic ValidationError."""
        return self._types[name].Config.model_validate(config)

    def describe(self, name: str) -> dict[str, Any]:
        cls = self._types[name]
        try:  # ports that do not depend on config; branching nodes derive theirs from it
            default_ports: list[str] | str = cls.output_ports(cls.Config.model_construct())
        except (AttributeError, TypeError, ValidationError):
            default_ports = "dynamic"
        return {
            "name": name,
            "title": cls.title or name,
            "description": cls.description,
            "category": cls.category,
            "config_schema": cls.Config.model_json_schema(),
            "input_ports": list(cls.input_ports),
            "output_ports": default_ports,
        }

    def add_describer(self, describer: Describer) -> None:
        if describer not in self._describers:
            self._describers.append(describer)

    def describe_all(self) -> list[dict[str, Any]]:
        out = [self.describe(n) for n in self.names()]
        for describer in self._describers:
            out.extend(describer())
        return out


def builtin_registry() -> NodeRegistry:
    """A new registry holding the built-in node types only."""
    return NodeRegistry(BUILTIN_NODE_TYPES)


registry = builtin_registry()


def register(cls: type[Node[Any]]) -> type[Node[Any]]:
    """Class decorator adding a node type to the default registry."""
    return registry.register(cls)


def default_registry() -> NodeRegistry:
    """The process' default registry: the built-in node types plus those added with `register`."""
    return registry
