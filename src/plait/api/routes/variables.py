"""`/api/v1/variables`: the global variables flows read as `{{env.NAME}}` (secrets encrypted at rest)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Response

import plait.api.schemas as s
from plait.api.deps import ERRORS, Svc, path_id, require_key

router = APIRouter(
    prefix="/api/v1/variables",
    tags=["variables"],
    dependencies=[Depends(require_key)],
    responses=ERRORS,
)


@router.get("", response_model=list[s.VariableOut])
async def list_variables(svc: Svc) -> Any:
    """Global variables (`{{env.NAME}}` in flows); secret values read as `********`."""
    return await svc.catalog.variables()


@router.put("/{name}", response_model=s.VariableOut)
async def put_variable(svc: Svc, name: str, body: s.VariableBody) -> Any:
    """Create or replace a variable (values are encrypted at rest)."""
    return await svc.catalog.set_variable(
        path_id(name, "variable"), body.value, is_secret=body.is_secret, description=body.description
    )


@router.delete("/{name}", status_code=204)
async def delete_variable(svc: Svc, name: str) -> Response:
    await svc.catalog.delete_variable(path_id(name, "variable"))
    return Response(status_code=204)
