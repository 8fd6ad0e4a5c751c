"""Routes the canvas edits flows with: node types (palette, ports of a config), flow validation and
flow duplication. Thin: the logic is in `plait.service.catalog` and `plait.service.flows`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

import plait.api.schemas as s
from plait.api.deps import ERRORS, READ, WRITE, Caller, Svc, ViewFlow, caller, path_id

node_types = APIRouter(
    prefix="/api/v1/node-types",
    tags=["node types"],
    dependencies=[Depends(caller)],
    responses=ERRORS,
)


@node_types.get("", response_model=list[s.NodeTypeOut], response_model_exclude_none=True, dependencies=[READ])
async def list_node_types(svc: Svc, who: Caller) -> Any:
    """Every node type (built-ins, then the caller's components as `component:<Name>`): title,
    category, config JSON Schema and ports. `ports_from_config` types derive their output ports
    from the config: compute them with `POST /api/v1/node-types/{type}/ports`."""
    return await svc.catalog.node_types(owner_id=who.user_id)


@node_types.post("/{type_name}/ports", response_model=s.PortsOut, dependencies=[READ])
async def node_ports(svc: Svc, type_name: str, body: s.PortsBody) -> Any:
    """The ports of a node of this type with `config` (200 also when the config is invalid: then
    `valid` is false, `problems` say why and `output_ports` are the default ones)."""
    return svc.catalog.ports(path_id(type_name, "node type"), body.config)


flows = APIRouter(prefix="/api/v1/flows", tags=["flows"], dependencies=[Depends(caller)], responses=ERRORS)


@flows.post(
    "/validate", response_model=s.ValidationOut, response_model_exclude_none=True, dependencies=[READ]
)
async def validate_flow(svc: Svc, body: s.ValidateBody) -> Any:
    """Validate a document without storing it: `{valid, problems}` (200 also when invalid), each
    problem with `code`, `message`, `node_id`, `field` and a `hint`. The validator publishing and
    running use."""
    return svc.catalog.validate(body.document, body.content)


@flows.post("/{flow_id}/duplicate", status_code=201, response_model=s.FlowOut, dependencies=[WRITE])
async def duplicate_flow(svc: Svc, who: Caller, flow: ViewFlow, body: s.DuplicateBody | None = None) -> Any:
    """Copy the flow's draft into a new flow of the caller's (`id` default `<id>-copy`; versions,
    runs and shares are not copied)."""
    body = body or s.DuplicateBody()
    return await svc.flows.duplicate(flow.id, new_id=body.id, name=body.name, who=who)
