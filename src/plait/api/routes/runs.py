"""`/api/v1/runs`: runs, their event stream, cancel, resume, retry and edge-LLM decisions."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse

import plait.api.schemas as s
from plait.api.deps import ERRORS, Svc, path_id, require_key
from plait.api.sse import SSE_HEADERS, resume_after, run_stream

router = APIRouter(
    prefix="/api/v1/runs", tags=["runs"], dependencies=[Depends(require_key)], responses=ERRORS
)


@router.get("", response_model=list[s.RunSummary])
async def list_runs(
    svc: Svc,
    flow_id: str | None = None,
    status: Literal["queued", "running", "waiting", "completed", "failed", "cancelled"] | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Any:
    if flow_id is not None and "\x00" in flow_id:
        return []
    return await svc.runs.list(flow_id=flow_id, status=status, limit=limit, offset=offset)


@router.get("/{run_id}", response_model=s.RunDetail)
async def get_run(svc: Svc, run_id: str) -> Any:
    return await svc.runs.get(path_id(run_id, "run"))


@router.get(
    "/{run_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def run_events(
    svc: Svc,
    run_id: str,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Replay events after this seq")] = None,
) -> StreamingResponse:
    """SSE: `id:` = event seq, `event:` = type, `data:` = JSON. Replays stored events, then tails the
    live run; re-attach with `Last-Event-ID`. Heartbeat comments keep idle connections open. Ends after
    the `run_finished` of a completed, failed or cancelled run."""
    await svc.runs.require(path_id(run_id, "run"))
    start = resume_after(last_event_id, after)
    return StreamingResponse(
        run_stream(svc, run_id, start, "terminal"), media_type="text/event-stream", headers=SSE_HEADERS
    )


@router.post("/{run_id}/cancel", response_model=s.RunSummary)
async def cancel_run(svc: Svc, run_id: str) -> Any:
    return await svc.runs.cancel(path_id(run_id, "run"))


@router.post("/{run_id}/resume", status_code=202, response_model=s.TaskOut)
async def resume_run(svc: Svc, run_id: str, body: s.ResumeBody) -> Any:
    return await svc.runs.resume(path_id(run_id, "run"), body.node_id, body.data)


@router.post("/{run_id}/retry", status_code=202, response_model=s.RunStarted)
async def retry_run(svc: Svc, run_id: str, body: s.RetryBody) -> Any:
    return {"id": await svc.runs.retry(path_id(run_id, "run"), body.from_node)}


@router.get("/{run_id}/decisions", response_model=list[s.DecisionOut])
async def run_decisions(svc: Svc, run_id: str) -> Any:
    return await svc.runs.decisions(path_id(run_id, "run"))
