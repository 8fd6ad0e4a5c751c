"""`/api/v1/webhooks`: start the latest published version of a flow from an HTTP call (an API key);
`/api/v1/hooks/{trigger_id}`: a webhook trigger's delivery, authenticated by its own secret."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request

import plait.api.schemas as s
from plait.api.deps import ERRORS, RUN, Caller, EditFlow, Svc, caller, path_id

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


hooks = APIRouter(prefix="/api/v1/hooks", tags=["webhooks"], responses=ERRORS)


@hooks.post(
    "/{trigger_id}",
    status_code=202,
    response_model=s.RunStarted,
    openapi_extra={
        "requestBody": {
            "required": False,
            "content": {
                "application/json": {"schema": {"type": "object", "description": "The run's inputs."}}
            },
        }
    },
)
async def hook(svc: Svc, request: Request, trigger_id: str) -> Any:
    """Deliver to a webhook trigger: start a run of the flow's latest published version, the JSON
    body as inputs (checked against the flow's input schema: 422 naming the field). No API key:
    the trigger's own secret authenticates the call, as `Authorization: Bearer <secret>` (or
    `X-Plait-Secret`), or as an `X-Plait-Signature: t=<unix time>,v1=<hex HMAC-SHA256 of "<t>." +
    body>` within the trigger's tolerance (5 min). 401: no or bad secret or signature; 409
    (`replayed`): a signature (or `Idempotency-Key`) already delivered. The run acts as the
    flow's owner and records the trigger."""
    headers = {k.lower(): v for k, v in request.headers.items()}
    run_id = await svc.triggers.deliver(path_id(trigger_id, "trigger"), headers, await request.body())
    return {"id": run_id}
