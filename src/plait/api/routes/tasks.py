"""`/api/v1/human-tasks`: a person's task by its token (the token is the credential)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

import plait.api.schemas as s
from plait.api.deps import ERRORS, Svc, path_id

router = APIRouter(prefix="/api/v1/human-tasks", tags=["human tasks"], responses=ERRORS)


@router.get("/{token}", response_model=s.TaskOut)
async def get_task(svc: Svc, token: str) -> Any:
    """The form of a human task (no API key: the token is the credential)."""
    return await svc.runs.get_task(path_id(token, "task"))


@router.post("/{token}/submit", response_model=s.TaskOut)
async def submit_task(svc: Svc, token: str, data: Annotated[dict[str, Any], Body()]) -> Any:
    """Answer the task: `{"action": a, "values": {...}}` or a flat object of field values.
    422 with the field problems when invalid, 409 when already answered, 410 when expired."""
    return await svc.runs.submit_task(path_id(token, "task"), data)
