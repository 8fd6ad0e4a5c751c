"""Restore points: "Undo the assistant's changes".

Before the assistant's first change to a flow in a turn, the flow's draft is saved as a restore
point. The turn's `complete` names it (`restore_version_id`), and the user can put that draft
back. Restore points are not published versions: runs never use them, and the version list does
not show them. Each flow keeps its newest 20. They are read and restored with the same rights as
the flow itself: view to list them, edit to restore one.
"""

from __future__ import annotations

from typing import Any

from plait.service.errors import NotFound
from plait.service.flows import FlowService
from plait.store import Store
from plait.store.models import FlowRestorePoint


def point_view(row: FlowRestorePoint, *, document: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.id,
        "flow_id": row.flow_id,
        "note": row.note,
        "created_by": row.created_by,
        "created_at": row.created_at,
        "node_count": len(row.document.get("nodes") or []),
    }
    if document:
        out["document"] = row.document
    return out


class RestorePointService:
    def __init__(self, store: Store, flows: FlowService) -> None:
        self.store = store
        self.flows = flows

    async def save(self, flow_id: str, document: dict[str, Any], *, note: str, created_by: str | None) -> int:
        row = await self.store.restore_points.add(flow_id, document, note=note, created_by=created_by)
        return int(row.id)

    async def list(self, flow_id: str) -> list[dict[str, Any]]:
        return [point_view(r) for r in await self.store.restore_points.list_points(flow_id)]

    async def get(self, flow_id: str, point_id: int) -> dict[str, Any]:
        return point_view(await self._row(flow_id, point_id), document=True)

    async def restore(self, flow_id: str, point_id: int) -> dict[str, Any]:
        """Put the saved draft back; the draft it replaces becomes a restore point in turn, so a
        restore can be undone too."""
        row = await self._row(flow_id, point_id)
        current = await self.flows.get_row(flow_id)
        await self.store.restore_points.add(
            flow_id, current.draft, note=f"before restoring point {point_id}", created_by=row.created_by
        )
        return await self.flows.update(flow_id, row.document)

    async def _row(self, flow_id: str, point_id: int) -> FlowRestorePoint:
        row = await self.store.restore_points.get(flow_id, point_id)
        if row is None:
            raise NotFound(f"flow {flow_id!r} has no restore point {point_id}")
        return row
