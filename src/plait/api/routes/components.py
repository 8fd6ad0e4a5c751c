"""`/api/v1/components`: custom components (validated in the sandbox, registered by class name)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import Response

import plait.api.schemas as s
from plait.api.deps import ERRORS, Owner, Svc, path_id, require_key

router = APIRouter(
    prefix="/api/v1/components", tags=["components"], dependencies=[Depends(require_key)], responses=ERRORS
)


@router.get("", response_model=list[s.ComponentSummary])
async def list_components(svc: Svc, owner: Owner) -> Any:
    return await svc.components.list(owner_id=owner)


@router.post("", status_code=201, response_model=s.ComponentOut)
async def create_component(svc: Svc, owner: Owner, body: s.ComponentBody) -> Any:
    """Validate (AST scan + load in the sandbox) and register the component under its class name,
    replacing an existing one (its version goes up). 422 `invalid_component` with the validation
    result as `details` when invalid."""
    return await svc.components.create(body.source, body.class_name, owner_id=owner)


@router.post("/validate", response_model=s.ComponentValidationOut)
async def validate_component(svc: Svc, body: s.ComponentBody) -> Any:
    """Validate only: `{valid, class_name, inputs, outputs, error, ...}` (200 also when invalid)."""
    return await svc.components.validate(body.source, body.class_name)


@router.get("/{name}", response_model=s.ComponentOut)
async def get_component(svc: Svc, owner: Owner, name: str) -> Any:
    return await svc.components.get_view(path_id(name, "component"), owner_id=owner)


@router.delete("/{name}", status_code=204)
async def delete_component(svc: Svc, owner: Owner, name: str) -> Response:
    await svc.components.delete(path_id(name, "component"), owner_id=owner)
    return Response(status_code=204)
