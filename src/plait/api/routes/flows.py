"""`/api/v1/flows`: flows, their versions and export, and starting a run of one."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

import plait.api.schemas as s
from plait.api.deps import (
    ERRORS,
    MAX_VERSION,
    READ,
    RUN,
    VERSION_RE,
    WRITE,
    Caller,
    EditFlow,
    OwnFlow,
    Svc,
    ViewFlow,
    caller,
    path_id,
)
from plait.api.sse import SSE_HEADERS, run_stream
from plait.service import ServiceError

router = APIRouter(prefix="/api/v1/flows", tags=["flows"], dependencies=[Depends(caller)], responses=ERRORS)


@router.get("", response_model=list[s.FlowSummary], dependencies=[READ])
async def list_flows(
    svc: Svc,
    who: Caller,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Any:
    """The flows the caller owns or that are shared with them (an admin: every flow)."""
    return await svc.flows.list(who, limit=limit, offset=offset)


@router.post("", status_code=201, response_model=s.FlowOut, dependencies=[WRITE])
async def create_flow(svc: Svc, who: Caller, body: s.FlowCreate) -> Any:
    return await svc.flows.create(
        body.document, flow_id=body.id, name=body.name, description=body.description, who=who
    )


@router.post("/import", status_code=201, response_model=s.FlowImportOut, dependencies=[WRITE])
async def import_flow(svc: Svc, who: Caller, body: s.FlowImport) -> Any:
    """Import a plait flow or a RAGFlow agent (format detected, or `format`)."""
    source: Any = body.document if body.document is not None else body.content
    if source is None:
        raise ServiceError("give the flow as `content` (JSON/YAML text) or `document`", code="invalid")
    return await svc.flows.import_document(
        source,
        overwrite=body.overwrite,
        publish=body.publish,
        who=who,
        fmt=body.format,
        flow_id=body.id,
    )


@router.get("/{flow_id}", response_model=s.FlowOut, dependencies=[READ])
async def get_flow(svc: Svc, who: Caller, flow: ViewFlow) -> Any:
    return await svc.flows.get(flow.id, who=who)


@router.put("/{flow_id}", response_model=s.FlowOut, dependencies=[WRITE])
async def update_flow(svc: Svc, who: Caller, flow: EditFlow, body: s.FlowUpdate) -> Any:
    await svc.flows.update(flow.id, body.document, name=body.name, description=body.description)
    return await svc.flows.get(flow.id, who=who)


@router.delete("/{flow_id}", status_code=204, dependencies=[WRITE])
async def delete_flow(svc: Svc, flow: OwnFlow) -> Response:
    await svc.flows.delete(flow.id)
    return Response(status_code=204)


@router.get("/{flow_id}/shares", response_model=list[s.ShareOut], dependencies=[READ])
async def list_shares(svc: Svc, flow: ViewFlow) -> Any:
    """Who the flow is shared with, and as what."""
    return await svc.flows.shares(flow.id)


@router.put("/{flow_id}/shares/{user_id}", response_model=s.ShareOut, dependencies=[WRITE])
async def share_flow(svc: Svc, flow: OwnFlow, user_id: str, body: s.ShareBody) -> Any:
    """Share the flow with a user (by id, or by email) as `viewer` or `editor` (the owner or an
    admin)."""
    return await svc.flows.share(flow, path_id(user_id, "user"), body.role)


@router.delete("/{flow_id}/shares/{user_id}", status_code=204, dependencies=[WRITE])
async def unshare_flow(svc: Svc, flow: OwnFlow, user_id: str) -> Response:
    await svc.flows.unshare(flow.id, path_id(user_id, "user"))
    return Response(status_code=204)


@router.get("/{flow_id}/export", response_class=PlainTextResponse, dependencies=[READ])
async def export_flow(
    svc: Svc,
    flow: ViewFlow,
    version: Annotated[str | None, Query(pattern=VERSION_RE)] = None,
    format: Literal["json", "yaml", "ragflow"] = "json",  # noqa: A002
) -> Response:
    """The flow as plait JSON / YAML, or as a RAGFlow agent document (`format=ragflow`)."""
    text = await svc.flows.export(flow.id, version, format)
    media = "application/yaml" if format == "yaml" else "application/json"
    return Response(text, media_type=media)


@router.post("/{flow_id}/versions", status_code=201, response_model=s.VersionOut, dependencies=[WRITE])
async def publish_version(
    svc: Svc, flow: EditFlow, body: Annotated[s.PublishBody | None, Body()] = None
) -> Any:
    return await svc.flows.publish(flow.id, note=body.note if body else "")


@router.get("/{flow_id}/versions", response_model=list[s.VersionOut], dependencies=[READ])
async def list_versions(svc: Svc, flow: ViewFlow) -> Any:
    return await svc.flows.list_versions(flow.id)


@router.get("/{flow_id}/versions/{version}", response_model=s.VersionOut, dependencies=[READ])
async def get_version(svc: Svc, flow: ViewFlow, version: Annotated[int, Path(ge=1, le=MAX_VERSION)]) -> Any:
    return await svc.flows.get_version(flow.id, version)


@router.delete("/{flow_id}/versions/{version}", status_code=204, dependencies=[WRITE])
async def delete_version(
    svc: Svc, flow: EditFlow, version: Annotated[int, Path(ge=1, le=MAX_VERSION)]
) -> Response:
    await svc.flows.delete_version(flow.id, version)
    return Response(status_code=204)


@router.post(
    "/{flow_id}/runs",
    response_model=s.RunResultOut,
    responses={202: {"model": s.RunStarted}, 200: {"content": {"text/event-stream": {}}}},
    dependencies=[RUN],
)
async def start_run(
    svc: Svc,
    who: Caller,
    flow: EditFlow,
    body: Annotated[s.RunBody | None, Body()] = None,
    mode: Literal["sync", "stream", "background"] = "sync",
    version: Annotated[str | None, Query(pattern=VERSION_RE, description="N, latest or draft")] = None,
) -> Any:
    """Start a run. sync: wait and return the result; background: 202 `{id}`; stream: SSE of its events
    (ends at its `run_finished`, also when the run pauses for input)."""
    inputs = body.inputs if body else {}
    run_id, _task = await svc.runs.start(flow.id, inputs, version=version, owner_id=who.user_id)
    if mode == "background":
        return JSONResponse({"id": run_id}, status_code=202)
    if mode == "stream":
        return StreamingResponse(
            run_stream(svc, run_id, 0, "finished"),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, "X-Run-Id": run_id},
        )
    await svc.runs.wait(run_id)
    return await svc.runs.result_view(run_id)
