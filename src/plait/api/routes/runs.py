"""`/api/v1/runs`: runs, their event stream, cancel, resume, retry and edge-LLM decisions. A run
is visible to the user it acts as and to whoever can view its flow (`plait.service.access`); a
sub-flow's child run to whoever can see its parent (listed with `?parent_run_id=`, named in the
parent's detail as `children`), and it is controlled through its parent."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse

import plait.api.schemas as s
from plait.api.deps import ERRORS, READ, RUN, Caller, ControlRun, Svc, ViewRun, caller, path_id
from plait.api.sse import SSE_HEADERS, resume_after, run_stream

router = APIRouter(prefix="/api/v1/runs", tags=["runs"], dependencies=[Depends(caller)], responses=ERRORS)


@router.get("", response_model=list[s.RunSummary], dependencies=[READ])
async def list_runs(
    svc: Svc,
    who: Caller,
    flow_id: str | None = None,
    status: Literal["queued", "running", "waiting", "completed", "failed", "cancelled"] | None = None,
    parent_run_id: Annotated[
        str | None, Query(description="List the sub-flow child runs of this run instead.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Any:
    """The top-level runs the caller may see, newest first; with `parent_run_id`, the sub-flow
    child runs of that run (404 when the caller cannot see it: children are seen with it)."""
    if flow_id is not None and "\x00" in flow_id:
        return []
    if parent_run_id is not None:
        await svc.access.run(who, path_id(parent_run_id, "run"))
    visible_to = None if who.is_admin else who.user_id
    return await svc.runs.list(
        flow_id=flow_id,
        status=status,
        visible_to=visible_to,
        parent_run_id=parent_run_id,
        limit=limit,
        offset=offset,
    )


@router.get("/{run_id}", response_model=s.RunDetail, dependencies=[READ])
async def get_run(svc: Svc, run: ViewRun) -> Any:
    return await svc.runs.get(run.id)


@router.get(
    "/{run_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
    dependencies=[READ],
)
async def run_events(
    svc: Svc,
    run: ViewRun,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Replay events after this seq")] = None,
) -> StreamingResponse:
    """SSE: `id:` = event seq, `event:` = type, `data:` = JSON. Replays stored events, then tails the
    live run; re-attach with `Last-Event-ID`. Heartbeat comments keep idle connections open. Ends after
    the `run_finished` of a completed, failed or cancelled run."""
    start = resume_after(last_event_id, after)
    return StreamingResponse(
        run_stream(svc, run.id, start, "terminal"), media_type="text/event-stream", headers=SSE_HEADERS
    )


@router.post("/{run_id}/cancel", response_model=s.RunSummary, dependencies=[RUN])
async def cancel_run(svc: Svc, run: ControlRun) -> Any:
    return await svc.runs.cancel(run.id)


@router.post("/{run_id}/resume", status_code=202, response_model=s.TaskOut, dependencies=[RUN])
async def resume_run(svc: Svc, run: ControlRun, body: s.ResumeBody) -> Any:
    return await svc.runs.resume(run.id, body.node_id, body.data)


@router.post("/{run_id}/retry", status_code=202, response_model=s.RunStarted, dependencies=[RUN])
async def retry_run(svc: Svc, who: Caller, run: ControlRun, body: s.RetryBody) -> Any:
    return {"id": await svc.runs.retry(run.id, body.from_node, owner_id=who.user_id)}


@router.get("/{run_id}/decisions", response_model=list[s.DecisionOut], dependencies=[READ])
async def run_decisions(svc: Svc, run: ViewRun) -> Any:
    return await svc.runs.decisions(run.id)
