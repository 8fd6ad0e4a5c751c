"""`/api/v1/webhooks`: start the latest published version of a flow from an HTTP call."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends

import plait.api.schemas as s
from plait.api.deps import ERRORS, Svc, path_id, require_key

router = APIRouter(
    prefix="/api/v1/webhooks", tags=["webhooks"], dependencies=[Depends(require_key)], responses=ERRORS
)


@router.post("/{flow_id}", status_code=202, response_model=s.RunStarted)
async def webhook(svc: Svc, flow_id: str, payload: Annotated[dict[str, Any] | None, Body()] = None) -> Any:
    """Start the latest published version of the flow in the background, the JSON body as inputs."""
    run_id, _ = await svc.runs.start(path_id(flow_id, "flow"), payload or {}, version="latest")
    return {"id": run_id}
