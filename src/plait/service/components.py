"""Custom-component registry use cases: validate, register, list, get, delete (docs/components.md).

The store's `components` table holds each component under its owner (`owner_id`: the user of the
caller's API key; None: the deployment-wide owner, keys without a user) and class name (`name`)
with its source (`code`) and the introspected spec (display name, inputs, outputs). Every use case
is scoped to one owner: another owner's components are invisible and may share names.

The service is also the `ComponentSource` of the `component` node: the run launcher hands it to
every run of the server (`RunServices.component_source`). A run resolves the components of its
flow's owner (`flows.owner_id`, set from the creating key's user): `get_for_run(name, run_id)`
reads the run's flow and caches its owner per run; `get(name)` (no run) sees the deployment-wide
components. The palette is the catalog's (`CatalogService.node_types`: the caller's components,
read from the store), so the service keeps no palette cache.

Components the assistant generated live in the same table, tagged with the assistant session that
registered them (`session_id`; see `plait.service.assistant_components`): they resolve like any
other, and `create` of such a name makes the component the owner's own (`session_id` NULL), so a
reset of that session no longer deletes it.
"""

from __future__ import annotations

from typing import Any

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


async def catalog_entries(store: Store, owner_id: str | None) -> list[dict[str, Any]]:
    """The owner's components as the flow builder's catalog takes them (`{class_name, source,
    spec}`, plait.assistant.catalog), read in one query: the assistant and the MCP server both
    offer them as node types."""
    rows = await store.components.list_components(owner_id=owner_id, kind="node")
    return [{"class_name": r.name, "source": r.code, "spec": r.spec or {}} for r in rows]


RUN_OWNER_CACHE = 1024


class ComponentService:
    def __init__(self, store: Store, pool: SandboxPool | None = None) -> None:
        self.store = store
        self.pool = pool  # None: the sandbox's default pool
        self._run_owners: dict[str, str | None] = {}  # run id -> owner of its flow

    # ------------------------------------------------------------ ComponentSource (node layer)
    async def get_source(self, name: str, *, owner_id: str | None = None) -> tuple[str, str] | None:
        row = await self.store.components.get(name, owner_id=owner_id)
        if row is None or row.kind != "node":
            return None
        return row.code, (row.spec or {}).get("class_name") or row.name

    def get(self, name: str) -> Any:  # ComponentSource.get (awaitable): deployment-wide
        return self.get_source(name)

    async def get_for_run(self, name: str, run_id: str) -> tuple[str, str] | None:
        """The component `name` of the owner of the run's flow (see the module docstring)."""
        return await self.get_source(name, owner_id=await self.run_owner(run_id))

    async def run_owner(self, run_id: str) -> str | None:
        """The owner of the flow a stored run belongs to; None for runs outside the library (or
        flows without an owner). A flow's owner never changes, so it is cached per run."""
        if run_id in self._run_owners:
            return self._run_owners[run_id]
        owner = None
        run = await self.store.runs.get(run_id)
        if run is not None:
            flow = await self.store.flows.get(run.flow_id)
            owner = flow.owner_id if flow is not None else None
        while len(self._run_owners) >= RUN_OWNER_CACHE:
            self._run_owners.pop(next(iter(self._run_owners)))
        self._run_owners[run_id] = owner
        return owner

    # --------------------------------------------------------------------------- use cases
    # `owner_id`: the caller's owner (the API key's user; None: deployment-wide).
    async def validate(self, source: Any, class_name: str | None = None) -> dict[str, Any]:
        return (await self._validate(source, class_name)).to_dict()

    async def _validate(self, source: Any, class_name: str | None) -> ComponentValidation:
        return await validate_component(source, class_name, pool=self.pool)

    async def create(
        self, source: Any, class_name: str | None = None, *, owner_id: str | None = None
    ) -> dict[str, Any]:
        """Validate and store (or replace) the component; 422 with the validation result if invalid."""
        result = await self._validate(source, class_name)
        if not result.valid:
            raise Invalid(
                f"invalid component: {result.error}", details=result.to_dict(), code="invalid_component"
            )
        assert result.class_name is not None
        row = await self.store.components.save(
            result.class_name,
            source,
            owner_id=owner_id,
            spec=result.spec(),
            description=result.description,
            kind="node",
            session_id=None,  # saved by hand: the owner's own, even if the assistant made it
        )
        return component_view(row)

    async def list(self, *, owner_id: str | None = None) -> list[dict[str, Any]]:
        rows = await self.store.components.list_components(owner_id=owner_id, kind="node")
        return [component_view(r, source=False) for r in rows]

    async def get_view(self, name: str, *, owner_id: str | None = None) -> dict[str, Any]:
        row = await self._row(name, owner_id)
        return component_view(row)

    async def delete(self, name: str, *, owner_id: str | None = None) -> None:
        await self._row(name, owner_id)
        await self.store.components.delete(name, owner_id=owner_id)

    async def _row(self, name: str, owner_id: str | None) -> Component:
        row = None if check_class_name(name) else await self.store.components.get(name, owner_id=owner_id)
        if row is None or row.kind != "node":
            raise NotFound(f"no component {name!r}")
        return row
