"""Custom-component registry use cases: validate, register, list, get, delete (docs/components.md).

The store's `components` table holds each component under its class name (`name`) with its
source (`code`) and the introspected spec (display name, inputs, outputs). The service is also the
`ComponentSource` of the `component` node: `get` reads the store (authoritative), `specs` serves
the palette from a cache refreshed at start-up and after every change.
"""

from __future__ import annotations

from typing import Any

from plait.nodes.builtin.component import component_source, set_component_source
from plait.sandbox import SandboxPool
from plait.sandbox.components import ComponentValidation, check_class_name, validate_component
from plait.service.errors import Invalid, NotFound
from plait.store import Store
from plait.store.models import Component


def component_view(row: Component, *, source: bool = True) -> dict[str, Any]:
    spec = row.spec or {}
    out: dict[str, Any] = {
        "name": row.name,
        "class_name": spec.get("class_name") or row.name,
        "display_name": spec.get("display_name") or row.name,
        "description": row.description,
        "inputs": spec.get("inputs", []),
        "outputs": spec.get("outputs", []),
        "builtin": bool(spec.get("builtin", False)),
        "version": row.version,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if source:
        out["source"] = row.code
    return out


class ComponentService:
    def __init__(self, store: Store, pool: SandboxPool | None = None) -> None:
        self.store = store
        self.pool = pool  # None: the sandbox's default pool
        self._specs: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------ ComponentSource (node layer)
    async def get_source(self, name: str) -> tuple[str, str] | None:
        row = await self.store.components.get(name)
        if row is None or row.kind != "node":
            return None
        return row.code, (row.spec or {}).get("class_name") or row.name

    def get(self, name: str) -> Any:  # ComponentSource.get (awaitable)
        return self.get_source(name)

    def specs(self) -> list[dict[str, Any]]:
        return [self._specs[n] for n in sorted(self._specs)]

    async def refresh(self) -> None:
        rows = await self.store.components.list(kind="node")
        self._specs = {r.name: {**(r.spec or {}), "class_name": r.name} for r in rows}

    async def start(self) -> None:
        """Load the palette cache and become the component node's source."""
        await self.refresh()
        set_component_source(self)

    def close(self) -> None:
        if component_source() is self:
            set_component_source(None)

    # --------------------------------------------------------------------------- use cases
    async def validate(self, source: Any, class_name: str | None = None) -> dict[str, Any]:
        return (await self._validate(source, class_name)).to_dict()

    async def _validate(self, source: Any, class_name: str | None) -> ComponentValidation:
        return await validate_component(source, class_name, pool=self.pool)

    async def create(self, source: Any, class_name: str | None = None) -> dict[str, Any]:
        """Validate and store (or replace) the component; 422 with the validation result if invalid."""
        result = await self._validate(source, class_name)
        if not result.valid:
            raise Invalid(
                f"invalid component: {result.error}", details=result.to_dict(), code="invalid_component"
            )
        assert result.class_name is not None
        row = await self.store.components.save(
            result.class_name, source, spec=result.spec(), description=result.description, kind="node"
        )
        self._specs[row.name] = {**result.spec(), "class_name": row.name}
        return component_view(row)

    async def list(self) -> list[dict[str, Any]]:
        return [component_view(r, source=False) for r in await self.store.components.list(kind="node")]

    async def get_view(self, name: str) -> dict[str, Any]:
        row = await self._row(name)
        return component_view(row)

    async def delete(self, name: str) -> None:
        await self._row(name)
        await self.store.components.delete(name)
        self._specs.pop(name, None)

    async def _row(self, name: str) -> Component:
        row = None if check_class_name(name) else await self.store.components.get(name)
        if row is None or row.kind != "node":
            raise NotFound(f"no component {name!r}")
        return row
