"""`/api/v1/flows`: flows, their versions and export, and starting a run of one."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

import plait.api.schemas as s
from plait.api.deps import ERRORS, MAX_VERSION, VERSION_RE, Owner, Svc, path_id, require_key
from plait.api.sse import SSE_HEADERS, run_stream
from plait.service import ServiceError

router = APIRouter(
    prefix="/api/v1/flows", tags=["flows"], dependencies=[Depends(require_key)], responses=ERRORS
)


@router.get("", response_model=list[s.FlowSummary])
async def list_flows(
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Any:
    return await svc.flows.list(limit=limit, offset=offset)


@router.post("", status_code=201, response_model=s.FlowOut)
async def create_flow(svc: Svc, owner: Owner, body: s.FlowCreate) -> Any:
    return await svc.flows.create(
        body.document, flow_id=body.id, name=body.name, description=body.description, owner_id=owner
    )


@router.post("/import", status_code=201, response_model=s.FlowOut)
async def import_flow(svc: Svc, owner: Owner, body: s.FlowImport) -> Any:
    source: Any = body.document if body.document is not None else body.content
    if source is None:
        raise ServiceError("give the flow as `content` (JSON/YAML text) or `document`", code="invalid")
    return await svc.flows.import_document(
        source, overwrite=body.overwrite, publish=body.publish, owner_id=owner
    )


@router.get("/{flow_id}", response_model=s.FlowOut)
async def get_flow(svc: Svc, flow_id: str) -> Any:
    return await svc.flows.get(path_id(flow_id, "flow"))


@router.put("/{flow_id}", response_model=s.FlowOut)
async def update_flow(svc: Svc, flow_id: str, body: s.FlowUpdate) -> Any:
    return await svc.flows.update(
        path_id(flow_id, "flow"), body.document, name=body.name, description=body.description
    )


@router.delete("/{flow_id}", status_code=204)
async def delete_flow(svc: Svc, flow_id: str) -> Response:
    await svc.flows.delete(path_id(flow_id, "flow"))
    return Response(status_code=204)


@router.get("/{flow_id}/export", response_class=PlainTextResponse)
async def export_flow(
    svc: Svc,
    flow_id: str,
    version: Annotated[str | None, Query(pattern=VERSION_RE)] = None,
    format: Literal["json", "yaml"] = "json",  # noqa: A002
) -> Response:
    text = await svc.flows.export(path_id(flow_id, "flow"), version, format)
    media = "application/json" if format == "json" else "application/yaml"
    return Response(text, media_type=media)


@router.post("/{flow_id}/versions", status_code=201, response_model=s.VersionOut)
async def publish_version(
    svc: Svc, flow_id: str, body: Annotated[s.PublishBody | None, Body()] = None
) -> Any:
    return await svc.flows.publish(path_id(flow_id, "flow"), note=body.note if body else "")


@router.get("/{flow_id}/versions", response_model=list[s.VersionOut])
async def list_versions(svc: Svc, flow_id: str) -> Any:
    return await svc.flows.list_versions(path_id(flow_id, "flow"))


@router.get("/{flow_id}/versions/{version}", response_model=s.VersionOut)
async def get_version(svc: Svc, flow_id: str, version: Annotated[int, Path(ge=1, le=MAX_VERSION)]) -> Any:
    return await svc.flows.get_version(path_id(flow_id, "flow"), version)


@router.delete("/{flow_id}/versions/{version}", status_code=204)
async def delete_version(
    svc: Svc, flow_id: str, version: Annotated[int, Path(ge=1, le=MAX_VERSION)]
) -> Response:
    await svc.flows.delete_version(path_id(flow_id, "flow"), version)
    return Response(status_code=204)


@router.post(
    "/{flow_id}/runs",
    response_model=s.RunResultOut,
    responses={202: {"model": s.RunStarted}, 200: {"content": {"text/event-stream": {}}}},
)
async def start_run(
    svc: Svc,
    flow_id: str,
    body: Annotated[s.RunBody | None, Body()] = None,
    mode: Literal["sync", "stream", "background"] = "sync",
    version: Annotated[str | None, Query(pattern=VERSION_RE, description="N, latest or draft")] = None,
) -> Any:
    """Start a run. sync: wait and return the result; background: 202 `{id}`; stream: SSE of its events
    (ends at its `run_finished`, also when the run pauses for input)."""
    inputs = body.inputs if body else {}
    run_id, _task = await svc.runs.start(path_id(flow_id, "flow"), inputs, version=version)
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
