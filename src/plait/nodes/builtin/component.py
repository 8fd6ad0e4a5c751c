"""The `component` node: runs a registered custom component (plait.sdk.Component) in the sandbox.

    - id: shout
      type: component
      config:
        component: Shout                     # the registered class name
        inputs: {text: "{{start.text}}"}     # templates/references, rendered per run
        timeout_s: 10
        memory_mb: 256
        network: false

The node layer cannot import the store: components are found through a `ComponentSource`
(`get(name) -> (source, class_name) | None`, sync or async; optional `specs()` for the palette)
that travels with the run (`RunServices.component_source`, read as `ctx.services.component_source`):
the service passes itself for its runs, embedders pass `StaticComponentSource` (in memory) to
`plait.run(..., services=RunServices(component_source=...))`. There is no process-wide source, so
two runs in one process may see different components. `component_palette(source)` is a registry
describer listing every component of a source as a `component:<Name>` palette entry.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from plait.nodes.base import Node, NodeContext, NodeError
from plait.nodes.builtin._sandboxed import (
    MemoryMB,
    NetworkAccess,
    TimeoutSeconds,
    check_identifiers,
    sandbox_node_error,
)
from plait.sandbox import Limits, SandboxPool, default_pool
from plait.sandbox.components import CLASS_NAME_RE, MAX_CLASS_NAME, run_component

_HINTS = {
    "timeout": "make the component faster or raise timeout_s",
    "cpu": "make the component faster or raise timeout_s",
    "memory": "use less memory or raise memory_mb",
    "serialization": "return JSON values only: dict, list, str, int, float, bool or None",
    "arguments": "inputs must render to JSON values",
    "exit": "return a dict from run() instead of calling sys.exit()",
    "too_large": "return a smaller value",
}


@runtime_checkable
class ComponentSource(Protocol):
    """Where the component node finds registered components (`RunServices.component_source`)."""

    def get(self, name: str) -> tuple[str, str] | None | Awaitable[tuple[str, str] | None]:
        """(source, class_name) of the component `name`, or None."""


# A source may also define `get_for_run(name, run_id)` (sync or async): the component node then
# asks it with the run's id, so that a run resolves the components of its own owner (the service
# does this: the owner of the run's flow). Sources without it are asked `get(name)`.


class StaticComponentSource:
    """An in-memory ComponentSource: {name: source} or {name: (source, class_name)}; `specs` optional
    ({name: validation spec}, as returned by validate_component(...).spec())."""

    def __init__(
        self,
        components: Mapping[str, str | tuple[str, str]] | None = None,
        specs: Mapping[str, dict[str, Any]] | None = None,
    ) -> None:
        self._components = {
            name: value if isinstance(value, tuple) else (value, name)
            for name, value in (components or {}).items()
        }
        self._specs = dict(specs or {})

    def add(self, name: str, source: str, spec: dict[str, Any] | None = None) -> None:
        self._components[name] = (source, name)
        if spec is not None:
            self._specs[name] = spec

    def get(self, name: str) -> tuple[str, str] | None:
        return self._components.get(name)

    def specs(self) -> list[dict[str, Any]]:
        return [self._specs[n] for n in sorted(self._specs)]


class ComponentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    component: str = Field(
        ...,
        min_length=1,
        max_length=MAX_CLASS_NAME,
        pattern=CLASS_NAME_RE.pattern,
        description="The registered component (its class name).",
    )
    inputs: dict[str, Any] = Field(
        default_factory=dict,
        description="The component's inputs; values are templates/references, e.g. '{{start.text}}'.",
    )
    timeout_s: TimeoutSeconds = 10.0
    memory_mb: MemoryMB = 256
    network: NetworkAccess = False

    @field_validator("inputs")
    @classmethod
    def _identifiers(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_identifiers(value, "input")
        return value


class ComponentNode(Node[ComponentConfig]):
    type_name = "component"
    title = "Component"
    description = "Runs a registered custom component (plait.sdk.Component) in the sandbox."
    category = "logic"
    Config = ComponentConfig
    pool: ClassVar[SandboxPool | None] = None  # None: the default pool

    @classmethod
    def reference_texts(cls, config: ComponentConfig) -> list[tuple[str, Any]]:
        return [("inputs", config.inputs)]

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        source = getattr(ctx.services, "component_source", None)
        if source is None:
            raise NodeError(
                "custom components are not available in this run (it has no component source)",
                hint="run the flow on the plait server, or pass services=RunServices(component_source="
                "StaticComponentSource({...})) to plait.run",
                retryable=False,
            )
        found = await lookup(cfg.component, run_id=ctx.run_id, source=source)
        if found is None:
            raise NodeError(
                f"no component named {cfg.component!r} is registered",
                hint="register it with POST /api/v1/components (or check the name)",
                retryable=False,
            )
        source, class_name = found
        inputs = {name: await ctx.arender(value) for name, value in cfg.inputs.items()}
        outcome = await run_component(
            source,
            class_name,
            inputs,
            pool=type(self).pool or default_pool(),
            limits=Limits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb),
            network=cfg.network,
        )
        if outcome.ok:
            return outcome.outputs
        raise sandbox_node_error(
            f"component {class_name}: {outcome.error}",
            error_kind=outcome.error_kind,
            traceback_lines=outcome.traceback_lines,
            stderr=outcome.stderr,
            hints=_HINTS,
        )


async def lookup(name: str, *, source: ComponentSource, run_id: str | None = None) -> tuple[str, str] | None:
    """`name` in a component source (the run's `RunServices.component_source`); asked with the
    run's id when the source resolves per run (`get_for_run`)."""
    for_run = getattr(source, "get_for_run", None)
    found = for_run(name, run_id) if run_id is not None and for_run is not None else source.get(name)
    if inspect.isawaitable(found):
        found = await found
    return found


def palette_entries(source: ComponentSource | None) -> list[dict[str, Any]]:
    """`component:<Name>` palette entries: one per component of `source` (none without `specs()`)."""
    specs = getattr(source, "specs", None)
    if specs is None:
        return []
    try:
        known = specs()
    except Exception:  # noqa: BLE001 - the palette must not break on a failing source
        return []
    return [describe_component(spec) for spec in known if spec.get("class_name")]


def component_palette(source: ComponentSource) -> Callable[[], list[dict[str, Any]]]:
    """A registry describer (`NodeRegistry(..., describers=[...])`, `add_describer`) listing the
    components of `source` in `describe_all()`, read again at each call."""

    def describe() -> list[dict[str, Any]]:
        return palette_entries(source)

    return describe


def describe_component(spec: dict[str, Any]) -> dict[str, Any]:
    """A palette entry for one component spec (class_name, display_name, inputs, outputs...)."""
    name = spec["class_name"]
    props: dict[str, Any] = {}
    required = []
    for item in spec.get("inputs", []):
        prop: dict[str, Any] = {"description": item.get("description", "")}
        if item.get("type", "any") != "any":
            prop["type"] = item["type"]
        if not item.get("required", True):
            prop["default"] = item.get("default")
        else:
            required.append(item["name"])
        props[item["name"]] = prop
    schema = ComponentConfig.model_json_schema()
    schema["title"] = f"{name}Config"
    schema["properties"]["component"] = {
        "const": name,
        "default": name,
        "title": "Component",
        "type": "string",
    }
    schema["properties"]["inputs"] = {
        "type": "object",
        "title": "Inputs",
        "description": "Values are templates/references, e.g. '{{start.text}}'.",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }
    return {
        "name": f"component:{name}",
        "title": spec.get("display_name") or name,
        "description": spec.get("description", ""),
        "category": "components",
        "config_schema": schema,
        "input_ports": list(ComponentNode.input_ports),
        "output_ports": ["out"],
        "node_type": "component",  # a canvas node of this entry is {"type": "component", "config": ...}
        "config_defaults": {"component": name},
        "outputs": spec.get("outputs", []),
    }
