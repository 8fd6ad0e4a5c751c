"""What the flow-builder agent may put in a flow: plait's node types plus the user's components.

The toolkit never reads the node registry or the component store itself; it asks a
`ComponentCatalog`. `RegistryCatalog` is the one plait uses: the node registry (the built-in types,
their config JSON Schemas and ports) overlaid with the user's components, which the service passes
as plain dicts (a component is used in a flow as a `component` node whose `config.component` names
it, exactly as the canvas palette's `component:<Name>` entries do).

    catalog = RegistryCatalog(user_components=[{"class_name": "SumNumbers", "source": "...",
                                                 "spec": validation.spec()}])
    catalog.search("sum")          # [{"name": "SumNumbers", "node_type": "component", ...}, ...]
    catalog.get("llm")             # ComponentInfo: node type, config schema, ports

A user component is named by its class name in the agent's tools and in the compact spec;
`component:<Name>` is accepted too. A user class named like a built-in type is ignored (the
built-in wins), so a user cannot shadow `start` or `llm`.

The built-in entries (config JSON Schemas take pydantic milliseconds each) are computed once per
registry and set of types, and shared by every request.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from plait.nodes.base import Node
from plait.nodes.builtin.component import describe_component
from plait.nodes.registry import NodeRegistry, default_registry

COMPONENT_TYPE = "component"
COMPONENT_PREFIX = "component:"
MAX_SEARCH_RESULTS = 50
# Words a search query carries that say nothing about which entry is meant.
STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "to",
        "of",
        "and",
        "or",
        "for",
        "with",
        "that",
        "node",
        "nodes",
        "component",
        "components",
    }
)


@dataclass(slots=True, frozen=True)
class ComponentInfo:
    """One thing the agent can add: a built-in node type or a user component.

    `name` is what the agent writes (`llm`, `SumNumbers`); `node_type` the plait node type of the
    node it becomes (`llm`, `component`); `config_defaults` the config such a node starts with
    (`{"component": "SumNumbers"}`). `output_ports` is `None` when the ports come from the config
    (switch cases, categorize categories, human actions)."""

    name: str
    node_type: str
    title: str
    description: str
    category: str
    config_schema: dict[str, Any]
    input_ports: tuple[str, ...]
    output_ports: tuple[str, ...] | None
    config_defaults: dict[str, Any] = field(default_factory=dict)
    source: str | None = None  # a user component's Python source
    outputs: tuple[dict[str, Any], ...] = ()  # a user component's declared (typed) outputs
    inputs: tuple[dict[str, Any], ...] = ()  # a user component's declared (typed) inputs
    user: bool = False

    def summary(self) -> dict[str, Any]:
        """The short form `search_components` lists."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "category": self.category,
            "user_component": self.user,
        }

    def describe(self) -> dict[str, Any]:
        """The full form `describe_component` returns: fields (from the config schema) and ports."""
        schema = self.config_schema
        required = set(schema.get("required") or ())
        fields: list[dict[str, Any]] = []
        for name, prop in (schema.get("properties") or {}).items():
            entry: dict[str, Any] = {"name": name, "required": name in required}
            for key in ("type", "description", "default", "enum", "const"):
                if isinstance(prop, dict) and key in prop:
                    entry[key] = prop[key]
            if isinstance(prop, dict) and "anyOf" in prop and "type" not in entry:
                entry["type"] = [p.get("type", "object") for p in prop["anyOf"] if isinstance(p, dict)]
            if isinstance(prop, dict) and "$ref" in prop:
                entry["type"] = "object"
            if isinstance(prop, dict) and prop.get("type") == "object" and "properties" in prop:
                entry["properties"] = prop["properties"]
                if prop.get("required"):
                    entry["required_properties"] = prop["required"]
            fields.append(entry)
        out: dict[str, Any] = {
            "name": self.name,
            "node_type": self.node_type,
            "title": self.title,
            "description": self.description,
            "category": self.category,
            "input_ports": list(self.input_ports),
            "output_ports": list(self.output_ports)
            if self.output_ports is not None
            else "from config (one port per case/category/action)",
            "fields": fields,
        }
        if self.config_defaults:
            out["config_defaults"] = dict(self.config_defaults)
        if self.user:
            out["user_component"] = True
            out["component_inputs"] = [dict(i) for i in self.inputs]
            out["component_outputs"] = [dict(o) for o in self.outputs]
        return out


class ComponentCatalog(Protocol):
    """The node types and user components the toolkit may use (see `RegistryCatalog`)."""

    @property
    def registry(self) -> NodeRegistry:
        """The node registry flows are validated against."""
        ...

    def get(self, name: str) -> ComponentInfo | None:
        """The entry for a built-in type name, a user component class name or `component:<Name>`."""
        ...

    def search(self, query: str | None = None) -> list[ComponentInfo]:
        """Entries matching `query` (any of its words, in name, title, description or category),
        best first; everything with no query, the user's components first."""
        ...

    def user_component(self, class_name: str) -> ComponentInfo | None:
        """The user component with that class name (its source included), or None."""
        ...

    def add_user_component(self, component: Mapping[str, Any]) -> ComponentInfo:
        """Register a component for the rest of the request (one `generate_component` made)."""
        ...


def _default_ports(cls: type[Node[Any]]) -> tuple[str, ...] | None:
    """Output ports that do not depend on the config; None for types that derive them from it."""
    overridden = getattr(cls.output_ports, "__func__", None) is not getattr(
        Node.output_ports, "__func__", None
    )
    if not overridden:
        return ("out",)
    try:
        return tuple(cls.output_ports(cls.Config.model_construct()))
    except (AttributeError, TypeError, ValueError, ValidationError):
        return None


_BUILTIN_LOCK = threading.Lock()
_BUILTIN_CACHE: dict[tuple[int, tuple[str, ...]], dict[str, ComponentInfo]] = {}


def builtin_entries(registry: NodeRegistry) -> dict[str, ComponentInfo]:
    """The registry's node types as catalog entries, computed once per registry and set of types."""
    names = tuple(registry.names())
    key = (id(registry), names)
    with _BUILTIN_LOCK:
        found = _BUILTIN_CACHE.get(key)
    if found is not None:
        return found
    entries: dict[str, ComponentInfo] = {}
    for name in names:
        cls = registry.get(name)
        if cls is None:  # pragma: no cover - names() lists registered types only
            continue
        ports = _default_ports(cls)
        entries[name] = ComponentInfo(
            name=name,
            node_type=name,
            title=cls.title or name,
            description=cls.description,
            category=cls.category,
            config_schema=cls.Config.model_json_schema(),
            input_ports=tuple(cls.input_ports),
            output_ports=ports,
        )
    with _BUILTIN_LOCK:
        if len(_BUILTIN_CACHE) > 8:  # registries of tests come and go
            _BUILTIN_CACHE.clear()
        _BUILTIN_CACHE[key] = entries
    return entries


def user_entry(component: Mapping[str, Any]) -> ComponentInfo:
    """A catalog entry for a user component given as a dict: `class_name` (or `name`), `source`,
    and its validation spec under `spec` (inputs, outputs, display_name, description), or those
    keys at the top level. Raises ValueError without a class name.

    Entries are remembered by content (a config JSON Schema costs pydantic a fraction of a
    millisecond, and every request builds the user's catalog again)."""
    try:
        key = json.dumps(component, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return _user_entry(component)
    return _cached_user_entry(key)


@functools.lru_cache(maxsize=1024)
def _cached_user_entry(key: str) -> ComponentInfo:
    return _user_entry(json.loads(key))


def _user_entry(component: Mapping[str, Any]) -> ComponentInfo:
    spec = dict(component.get("spec") or {})
    for key in ("inputs", "outputs", "display_name", "description"):
        if key not in spec and key in component:
            spec[key] = component[key]
    class_name = spec.get("class_name") or component.get("class_name") or component.get("name")
    if not isinstance(class_name, str) or not class_name:
        raise ValueError("a user component needs a class_name")
    if class_name.startswith(COMPONENT_PREFIX):
        class_name = class_name[len(COMPONENT_PREFIX) :]
    spec["class_name"] = class_name
    described = describe_component(spec)
    source = component.get("source") or component.get("code")
    return ComponentInfo(
        name=class_name,
        node_type=COMPONENT_TYPE,
        title=str(described.get("title") or class_name),
        description=str(described.get("description") or component.get("description") or ""),
        category="components",
        config_schema=described["config_schema"],
        input_ports=tuple(described["input_ports"]),
        output_ports=tuple(described["output_ports"]),
        config_defaults={"component": class_name},
        source=source if isinstance(source, str) else None,
        outputs=tuple(dict(o) for o in spec.get("outputs") or () if isinstance(o, Mapping)),
        inputs=tuple(dict(i) for i in spec.get("inputs") or () if isinstance(i, Mapping)),
        user=True,
    )


def _score(info: ComponentInfo, words: list[str]) -> int:
    """How well an entry matches the query's words (0: none of them): a word in the name counts
    most, then in the title, then anywhere in the description or category."""
    name, title = info.name.lower(), info.title.lower()
    text = f"{name} {title} {info.description.lower()} {info.category.lower()}"
    score = 0
    for word in words:
        if word == name:
            score += 16
        elif word in name:
            score += 8
        elif word in title:
            score += 4
        elif word in text:
            score += 2
    return score


class RegistryCatalog:
    """The node registry plus the user's components (a `ComponentCatalog`)."""

    def __init__(
        self,
        registry: NodeRegistry | None = None,
        user_components: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self._registry = registry or default_registry()
        self._builtin = builtin_entries(self._registry)
        self._user: dict[str, ComponentInfo] = {}
        for component in user_components:
            try:
                self.add_user_component(component)
            except ValueError:
                continue  # a malformed row must not hide the others

    @property
    def registry(self) -> NodeRegistry:
        return self._registry

    def add_user_component(self, component: Mapping[str, Any]) -> ComponentInfo:
        info = user_entry(component)
        if info.name not in self._builtin:  # a built-in type name is never shadowed
            self._user[info.name] = info
        return info

    def get(self, name: str) -> ComponentInfo | None:
        if not isinstance(name, str):
            return None
        if name.startswith(COMPONENT_PREFIX):
            return self._user.get(name[len(COMPONENT_PREFIX) :])
        return self._builtin.get(name) or self._user.get(name)

    def user_component(self, class_name: str) -> ComponentInfo | None:
        return self._user.get(class_name)

    def search(self, query: str | None = None) -> list[ComponentInfo]:
        # The user's own components first: they are what the user most likely means.
        entries = [*self._user.values(), *self._builtin.values()]
        words = [w for w in (query or "").lower().split() if w]
        meaningful = [w for w in words if w not in STOP_WORDS]
        words = meaningful or words
        if not words:
            return entries
        scored = [(score, i, info) for i, info in enumerate(entries) if (score := _score(info, words))]
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [info for _, _, info in scored]

    def names(self) -> list[str]:
        return [*self._builtin, *self._user]


def config_model(catalog: ComponentCatalog, node_type: str) -> type[BaseModel] | None:
    """The pydantic config model of a node type, or None for an unknown type."""
    cls = catalog.registry.get(node_type)
    return cls.Config if cls is not None else None


def deep_copy_defaults(info: ComponentInfo) -> dict[str, Any]:
    return copy.deepcopy(info.config_defaults)


__all__ = [
    "COMPONENT_PREFIX",
    "COMPONENT_TYPE",
    "MAX_SEARCH_RESULTS",
    "ComponentCatalog",
    "ComponentInfo",
    "RegistryCatalog",
    "builtin_entries",
    "config_model",
    "deep_copy_defaults",
    "user_entry",
]
