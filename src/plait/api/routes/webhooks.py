"""`/api/v1/webhooks`: start the latest published version of a flow from an HTTP call."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends

import plait.api.schemas as s
from plait.api.deps import ERRORS, RUN, Caller, EditFlow, Svc, caller

router = APIRouter(
    prefix="/api/v1/webhooks", tags=["webhooks"], dependencies=[Depends(caller)], responses=ERRORS
)


@router.post("/{flow_id}", status_code=202, response_model=s.RunStarted, dependencies=[RUN])
async def webhook(
    svc: Svc, who: Caller, flow: EditFlow, payload: Annotated[dict[str, Any] | None, Body()] = None
) -> Any:
    """Start the latest published version of the flow in the background, the JSON body as inputs
    (a key with `run` and edit access to the flow; the run acts as the key's user)."""
    run_id, _ = await svc.runs.start(flow.id, payload or {}, version="latest", owner_id=who.user_id)
    return {"id": run_id}
