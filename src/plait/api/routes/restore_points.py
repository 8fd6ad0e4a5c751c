"""`/api/v1/flows/{flow_id}/restore-points`: drafts saved before the assistant changed a flow
(plait.service.restore_points). Listing needs view access, restoring needs edit access."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path

import plait.api.schemas as s
from plait.api.deps import ERRORS, READ, WRITE, Caller, EditFlow, Svc, ViewFlow, caller

router = APIRouter(
    prefix="/api/v1/flows/{flow_id}/restore-points",
    tags=["flows"],
    dependencies=[Depends(caller)],
    responses=ERRORS,
)
PointId = Annotated[int, Path(ge=1, le=2**62)]


@router.get("", response_model=list[s.RestorePointOut], dependencies=[READ])
async def list_restore_points(svc: Svc, flow: ViewFlow) -> Any:
    """The flow's restore points, newest first (without their documents)."""
    return await svc.restore_points.list(flow.id)


@router.get("/{point_id}", response_model=s.RestorePointOut, dependencies=[READ])
async def get_restore_point(svc: Svc, flow: ViewFlow, point_id: PointId) -> Any:
    return await svc.restore_points.get(flow.id, point_id)


@router.post("/{point_id}/restore", response_model=s.FlowOut, dependencies=[WRITE])
async def restore_point(svc: Svc, who: Caller, flow: EditFlow, point_id: PointId) -> Any:
    """Make the saved document the flow's draft again (the current draft is saved first)."""
    await svc.restore_points.restore(flow.id, point_id)
    return await svc.flows.get(flow.id, who=who)
