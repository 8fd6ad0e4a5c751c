"""`/api/v1/tools`: the tools agents and `tool` nodes can name (built-ins and MCP servers' tools)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

import plait.api.schemas as s
from plait.api.deps import ERRORS, READ, Caller, Svc, caller

router = APIRouter(prefix="/api/v1/tools", tags=["tools"], dependencies=[Depends(caller)], responses=ERRORS)


@router.get("", response_model=s.ToolsOut, dependencies=[READ])
async def list_tools(svc: Svc, who: Caller, mcp: bool = True) -> Any:
    """The tools agents and `tool` nodes can name (`ref`): the built-ins, then each server-side MCP
    server with its tools, listed by connecting to it now (`?mcp=false` skips that; a server that
    cannot be reached shows its `error`)."""
    return await svc.catalog.tools(mcp=mcp, owner_id=who.user_id)
