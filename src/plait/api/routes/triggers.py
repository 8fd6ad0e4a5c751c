"""`/api/v1/flows/{flow_id}/triggers`: the schedules and webhooks that start runs of a flow
(plait.service.triggers). Listing needs view access and `read`; creating, changing and deleting
need edit access and `write`. A webhook's secret is in the creation's answer only."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from plait.api.deps import ERRORS, READ, WRITE, EditFlow, Svc, ViewFlow, caller, path_id

router = APIRouter(
    prefix="/api/v1/flows/{flow_id}/triggers",
    tags=["triggers"],
    dependencies=[Depends(caller)],
    responses=ERRORS,
)


class TriggerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["schedule", "webhook"]
    config: dict[str, Any] = Field(
        default_factory=dict,
        description='schedule: {"cron", "timezone", "missed": skip|run_once, "overlap": skip|allow, '
        '"grace_s", "inputs"}; webhook: {"require_signature", "tolerance_s"}',
    )
    enabled: bool = True


class TriggerPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] | None = Field(None, description="A whole new config (validated as on creation).")
    enabled: bool | None = None


class TriggerFireOut(BaseModel):
    fire_at: float
    status: str = Field(description="started, skipped (overlap or missed-run policy) or failed.")
    run_id: str | None
    error: str | None


class TriggerOut(BaseModel):
    id: str
    flow_id: str
    kind: str
    config: dict[str, Any]
    enabled: bool
    last_fired_at: float | None
    next_fire_at: float | None
    created_at: float
    updated_at: float
    url: str | None = Field(None, description="A webhook's delivery path (POST, no API key).")
    secret: str | None = Field(None, description="A webhook's secret: in the creation's answer only.")
    fires: list[TriggerFireOut] | None = Field(None, description="The latest firings (one trigger).")


@router.get("", response_model=list[TriggerOut], response_model_exclude_none=True, dependencies=[READ])
async def list_triggers(svc: Svc, flow: ViewFlow) -> Any:
    return await svc.triggers.list_for_flow(flow.id)


@router.post(
    "", status_code=201, response_model=TriggerOut, response_model_exclude_none=True, dependencies=[WRITE]
)
async def create_trigger(svc: Svc, flow: EditFlow, body: TriggerBody) -> Any:
    """A schedule or a webhook. Runs it starts act as the flow's owner and record the trigger
    (`trigger_id`). A webhook's `secret` is shown here once (stored hashed and encrypted)."""
    return await svc.triggers.create(flow.id, body.kind, body.config, enabled=body.enabled)


@router.get("/{trigger_id}", response_model=TriggerOut, response_model_exclude_none=True, dependencies=[READ])
async def get_trigger(svc: Svc, flow: ViewFlow, trigger_id: str) -> Any:
    """The trigger with its latest firings."""
    return await svc.triggers.get(flow.id, path_id(trigger_id, "trigger"))


@router.patch(
    "/{trigger_id}", response_model=TriggerOut, response_model_exclude_none=True, dependencies=[WRITE]
)
async def update_trigger(svc: Svc, flow: EditFlow, trigger_id: str, body: TriggerPatch) -> Any:
    return await svc.triggers.update(
        flow.id, path_id(trigger_id, "trigger"), config=body.config, enabled=body.enabled
    )


@router.delete("/{trigger_id}", status_code=204, dependencies=[WRITE])
async def delete_trigger(svc: Svc, flow: EditFlow, trigger_id: str) -> Response:
    await svc.triggers.delete(flow.id, path_id(trigger_id, "trigger"))
    return Response(status_code=204)
