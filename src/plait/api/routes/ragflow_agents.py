"""`/api/v1/agents`: RAGFlow's agent API (seed 003 section 11), so a RAGFlow client pointed at
plait works. The use cases are in `plait.service.ragflow_api`; this module speaks RAGFlow's wire.

Answers are RAGFlow's envelope, `{"code": 0, "data": ..., "message": "success"}`; a refusal of
the request itself (no DSL, a title taken, a session of another agent, a draft with problems...)
is, as in RAGFlow, an HTTP 200 whose `code` says what went wrong (101 argument, 102 data, 103
operation, 108 permission). What plait's access rules decide before that (no credential, an agent
the caller cannot see or may not change) keeps plait's 401 / 403 / 404 and error body, as every
plait route. Authentication: a plait API key, as `Authorization: Bearer <key>` (RAGFlow's way) or
`x-api-key`. Agent ids are plait flow ids; session ids are run ids.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Path, Query
from fastapi.responses import JSONResponse, Response, StreamingResponse

from plait.api.deps import ERRORS, READ, RUN, WRITE, Caller, EditFlow, OwnFlow, Svc, ViewFlow, caller
from plait.api.sse import SSE_HEADERS, resume_after
from plait.service import ServiceError
from plait.service.ragflow_api import SUCCESS, RagflowAgents, Session, ragflow_code

router = APIRouter(
    prefix="/api/v1/agents", tags=["ragflow"], dependencies=[Depends(caller)], responses=ERRORS
)

Payload = Annotated[dict[str, Any] | None, Body()]
VersionQuery = Annotated[
    str | None, Query(max_length=32, description="A version id (N or v_N), latest or draft")
]


def success(data: Any = True) -> JSONResponse:
    return JSONResponse({"code": SUCCESS, "data": data, "message": "success"})


def refusal(exc: ServiceError) -> JSONResponse:
    """RAGFlow's error envelope (HTTP 200): the code, and the message with what it lists."""
    message = exc.message
    details = exc.details if isinstance(exc.details, dict) else {}
    listed = [
        f"{p.get('node_id') or p.get('id') or ''}: {p.get('message') or p.get('reason') or ''}".strip(": ")
        for key in ("problems", "components", "nodes")
        for p in details.get(key) or []
        if isinstance(p, dict)
    ]
    if listed:
        message = f"{message}: " + "; ".join(listed)
    return JSONResponse({"code": ragflow_code(exc), "data": False, "message": message})


async def envelope(work: Awaitable[Any]) -> JSONResponse:
    try:
        return success(await work)
    except ServiceError as exc:
        return refusal(exc)


@router.get("", dependencies=[READ])
async def list_agents(
    svc: Svc,
    who: Caller,
    page: Annotated[int, Query(ge=1, le=10**6)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 30,
    orderby: Annotated[str, Query(max_length=32)] = "update_time",
    desc: Annotated[str, Query(max_length=8)] = "true",
    id: Annotated[str | None, Query(max_length=255)] = None,  # noqa: A002 - RAGFlow's name
    title: Annotated[str | None, Query(max_length=255)] = None,
) -> JSONResponse:
    """The agents (flows) the caller may see, newest update first (`orderby`, `desc`), by page."""
    return await envelope(
        RagflowAgents(svc).list(
            who,
            page=page,
            page_size=page_size,
            orderby=orderby,
            desc=desc.lower() != "false",
            agent_id=id,
            title=title,
        )
    )


@router.post("", dependencies=[WRITE])
async def create_agent(svc: Svc, who: Caller, body: Payload = None) -> JSONResponse:
    """`{title, description, dsl}`: the DSL imported as a plait flow and published. `data` is
    true, as RAGFlow's; find the agent's id with `GET /api/v1/agents?title=`."""
    try:
        await RagflowAgents(svc).create(who, body)
    except ServiceError as exc:
        return refusal(exc)
    return success(True)


@router.get("/{flow_id}", dependencies=[READ])
async def get_agent(svc: Svc, who: Caller, flow: ViewFlow) -> JSONResponse:
    """The agent, with its draft exported as RAGFlow DSL (`dsl`)."""
    return await envelope(RagflowAgents(svc).get(who, flow))


async def _update(svc: Svc, who: Caller, flow: EditFlow, body: Payload = None) -> JSONResponse:
    try:
        await RagflowAgents(svc).update(who, flow, body)
    except ServiceError as exc:
        return refusal(exc)
    return success(True)


@router.put("/{flow_id}", dependencies=[WRITE])
async def update_agent(svc: Svc, who: Caller, flow: EditFlow, body: Payload = None) -> JSONResponse:
    """`{title?, description?, dsl?}`: a new DSL replaces the draft and is published."""
    return await _update(svc, who, flow, body)


@router.patch("/{flow_id}", dependencies=[WRITE])
async def patch_agent(svc: Svc, who: Caller, flow: EditFlow, body: Payload = None) -> JSONResponse:
    """The same as PUT (RAGFlow's Go API updates with PATCH)."""
    return await _update(svc, who, flow, body)


@router.delete("/{flow_id}", dependencies=[WRITE])
async def delete_agent(svc: Svc, flow: OwnFlow) -> JSONResponse:
    """Delete the agent and all its versions (and runs)."""
    try:
        await RagflowAgents(svc).delete(flow)
    except ServiceError as exc:
        return refusal(exc)
    return success(True)


@router.post("/{flow_id}/run", dependencies=[RUN])
async def run_agent(
    svc: Svc, who: Caller, flow: EditFlow, body: Payload = None, version: VersionQuery = None
) -> JSONResponse:
    """A synchronous turn: `{question?, inputs?}` starts a session (a run), `{session_id, inputs}`
    answers its waiting UserFillUp. `data`: `session_id`, `status`, `answer` (the messages),
    `waiting_for_user` (what the paused run asks), `error`."""
    return await envelope(RagflowAgents(svc).run(who, flow, body, version))


@router.post(
    "/{flow_id}/stream",
    dependencies=[RUN],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream_agent(
    svc: Svc,
    who: Caller,
    flow: EditFlow,
    body: Payload = None,
    version: VersionQuery = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Re-attach after this event id")] = None,
) -> Response:
    """SSE: `message {answer, reference}`, `waiting_for_user {cpn_id}`, `error {error}`, `done
    [DONE]`, from the run's own events (`id:` is the run event's seq). `{question?, inputs?}`
    starts a session; `{session_id, inputs}` answers its waiting UserFillUp and streams what
    follows; `{session_id}` with `Last-Event-ID` re-attaches. The stream ends when the run
    pauses (`waiting_for_user`) or ends (`done`)."""
    agents = RagflowAgents(svc)
    try:
        session = await agents.open_session(who, flow, body, version, resume_after(last_event_id, after))
    except ServiceError as exc:
        return refusal(exc)
    return StreamingResponse(
        _sse(agents, session),
        media_type="text/event-stream",
        headers={**SSE_HEADERS, "X-Session-Id": session.run_id},
    )


async def _sse(agents: RagflowAgents, session: Session) -> AsyncIterator[str]:
    yield ": stream opened\n\n"
    async for item in agents.events(session):
        yield ": heartbeat\n\n" if item is None else item.sse()


@router.post("/{flow_id}/cancel", dependencies=[RUN])
async def cancel_agent(svc: Svc, who: Caller, flow: EditFlow, body: Payload = None) -> JSONResponse:
    """`{session_id}`: cancel that session's run."""
    try:
        await RagflowAgents(svc).cancel(who, flow, body)
    except ServiceError as exc:
        return refusal(exc)
    return success(True)


@router.get("/{flow_id}/versions", dependencies=[READ])
async def list_agent_versions(svc: Svc, flow: ViewFlow) -> JSONResponse:
    """The agent's published versions, newest first."""
    return await envelope(RagflowAgents(svc).versions(flow))


@router.post("/{flow_id}/versions", dependencies=[WRITE])
async def publish_agent_version(svc: Svc, flow: EditFlow, body: Payload = None) -> JSONResponse:
    """Publish the current draft as a new version (`{title?}` names it)."""
    return await envelope(RagflowAgents(svc).publish(flow, body))


@router.get("/{flow_id}/versions/{version_id}", dependencies=[READ])
async def get_agent_version(
    svc: Svc, flow: ViewFlow, version_id: Annotated[str, Path(max_length=32)]
) -> JSONResponse:
    """One version, with its DSL."""
    return await envelope(RagflowAgents(svc).version(flow, version_id))


@router.delete("/{flow_id}/versions/{version_id}", dependencies=[WRITE])
async def delete_agent_version(
    svc: Svc, flow: EditFlow, version_id: Annotated[str, Path(max_length=32)]
) -> JSONResponse:
    try:
        await RagflowAgents(svc).delete_version(flow, version_id)
    except ServiceError as exc:
        return refusal(exc)
    return success(True)


# RAGFlow's sessions and completions (the HTTP API and ragflow-sdk's Agent/Session): a session
# is a run; a completion is one turn of it. Answers and their reference come from the run's log.


@router.post("/{flow_id}/sessions", dependencies=[RUN])
async def create_agent_session(svc: Svc, who: Caller, flow: EditFlow, body: Payload = None) -> JSONResponse:
    """A session: `{id, agent_id, message: [{role: assistant, content: <prologue>}], ...}`. Begin
    inputs in the body start its run now; else the first completion does."""
    return await envelope(RagflowAgents(svc).create_session(who, flow, body))


@router.get("/{flow_id}/sessions", dependencies=[READ])
async def list_agent_sessions(
    svc: Svc,
    who: Caller,
    flow: ViewFlow,
    page: Annotated[int, Query(ge=1, le=10**6)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 30,
    orderby: Annotated[str, Query(max_length=32)] = "update_time",
    desc: Annotated[str, Query(max_length=8)] = "true",
    id: Annotated[str | None, Query(max_length=255)] = None,  # noqa: A002 - RAGFlow's name
) -> JSONResponse:
    """The agent's sessions (runs) the caller may see, with their messages, newest first."""
    del orderby  # runs are listed by creation, newest first
    return await envelope(
        RagflowAgents(svc).list_sessions(
            who, flow, page=page, page_size=page_size, session_id=id, desc=desc.lower() != "false"
        )
    )


@router.delete("/{flow_id}/sessions", dependencies=[RUN])
async def delete_agent_sessions(svc: Svc, who: Caller, flow: EditFlow, body: Payload = None) -> JSONResponse:
    """`{ids: [...]}`: delete those sessions (their runs)."""
    try:
        await RagflowAgents(svc).delete_sessions(who, flow, body)
    except ServiceError as exc:
        return refusal(exc)
    return success(True)


@router.post(
    "/{flow_id}/completions",
    dependencies=[RUN],
    responses={200: {"content": {"application/json": {}, "text/event-stream": {}}}},
)
async def agent_completion(svc: Svc, who: Caller, flow: EditFlow, body: Payload = None) -> Response:
    """`{question, stream, session_id?, inputs?}`: one turn. Not streaming: `data: {answer,
    reference, id, session_id}`. Streaming: SSE lines `data: {"code": 0, "message": "", "data":
    {answer, reference, id, session_id}}`, then `data: {"code": 0, "message": "", "data": true}`."""
    agents = RagflowAgents(svc)
    stream = isinstance(body, dict) and body.get("stream") is True
    if not stream:
        return await envelope(agents.completion(who, flow, body))
    try:
        session = await agents.completion_session(who, flow, body)
    except ServiceError as exc:
        return refusal(exc)
    return StreamingResponse(
        _completion_sse(agents, session),
        media_type="text/event-stream",
        headers={**SSE_HEADERS, "X-Session-Id": session.run_id},
    )


async def _completion_sse(agents: RagflowAgents, session: Session) -> AsyncIterator[str]:
    async for payload in agents.completion_stream(session):
        yield ": heartbeat\n\n" if payload is None else f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"
