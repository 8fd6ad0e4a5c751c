"""`/api/v1/variables`: the variables flows read as `{{env.NAME}}` (encrypted at rest). Each user
has their own; admins also set deployment-wide ones (`?scope=global`) that every run reads as
defaults."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Response

import plait.api.schemas as s
from plait.api.deps import ERRORS, READ, WRITE, Caller, Svc, caller, path_id
from plait.service.access import Scope

router = APIRouter(
    prefix="/api/v1/variables",
    tags=["variables"],
    dependencies=[Depends(caller)],
    responses=ERRORS,
)

ScopeParam = Literal["user", "global"]


def _owner(who: Caller, scope: ScopeParam) -> str | None:
    """The owner a write names: the caller's own, or (admins) the deployment-wide ones."""
    if scope == "global":
        who.require(Scope.ADMIN)
        return None
    return who.user_id


@router.get("", response_model=list[s.VariableOut], dependencies=[READ])
async def list_variables(svc: Svc, who: Caller) -> Any:
    """The caller's variables (`scope` "user"), then the deployment-wide ones (`scope`
    "global"); secret values read as `********`. A run reads both, the user's first."""
    return await svc.catalog.variables(who.user_id)


@router.put("/{name}", response_model=s.VariableOut, dependencies=[WRITE])
async def put_variable(
    svc: Svc, who: Caller, name: str, body: s.VariableBody, scope: ScopeParam = "user"
) -> Any:
    """Create or replace one of the caller's variables (`?scope=global`: a deployment-wide one,
    admins only). Values are encrypted at rest."""
    return await svc.catalog.set_variable(
        path_id(name, "variable"),
        body.value,
        owner_id=_owner(who, scope),
        is_secret=body.is_secret,
        description=body.description,
    )


@router.delete("/{name}", status_code=204, dependencies=[WRITE])
async def delete_variable(svc: Svc, who: Caller, name: str, scope: ScopeParam = "user") -> Response:
    await svc.catalog.delete_variable(path_id(name, "variable"), owner_id=_owner(who, scope))
    return Response(status_code=204)
