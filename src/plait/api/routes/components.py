"""`/api/v1/components`: custom components (validated in the sandbox, registered by class name)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import Response

import plait.api.schemas as s
from plait.api.deps import ERRORS, READ, WRITE, Caller, Svc, caller, path_id

router = APIRouter(
    prefix="/api/v1/components", tags=["components"], dependencies=[Depends(caller)], responses=ERRORS
)


@router.get("", response_model=list[s.ComponentSummary], dependencies=[READ])
async def list_components(svc: Svc, who: Caller) -> Any:
    """The caller's components (each user has their own)."""
    return await svc.components.list(owner_id=who.user_id)


@router.post("", status_code=201, response_model=s.ComponentOut, dependencies=[WRITE])
async def create_component(svc: Svc, who: Caller, body: s.ComponentBody) -> Any:
    """Validate (AST scan + load in the sandbox) and register the component under its class name,
    replacing an existing one (its version goes up). 422 `invalid_component` with the validation
    result as `details` when invalid."""
    return await svc.components.create(body.source, body.class_name, owner_id=who.user_id)


@router.post("/validate", response_model=s.ComponentValidationOut, dependencies=[WRITE])
async def validate_component(svc: Svc, body: s.ComponentBody) -> Any:
    """Validate only: `{valid, class_name, inputs, outputs, error, ...}` (200 also when invalid)."""
    return await svc.components.validate(body.source, body.class_name)


@router.get("/{name}", response_model=s.ComponentOut, dependencies=[READ])
async def get_component(svc: Svc, who: Caller, name: str) -> Any:
    return await svc.components.get_view(path_id(name, "component"), owner_id=who.user_id)


@router.delete("/{name}", status_code=204, dependencies=[WRITE])
async def delete_component(svc: Svc, who: Caller, name: str) -> Response:
    await svc.components.delete(path_id(name, "component"), owner_id=who.user_id)
    return Response(status_code=204)
