"""`/api/v1/assistant`: talk to the assistant (streamed or not), its model configuration, session
reset. The logic is `plait.service.assistant`; see docs/assistant.md.

Every route needs a caller. A message names a flow the caller can view (404 otherwise) and needs
the `write` scope: a turn may register a component for the caller.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

import plait.api.schemas as s
from plait.api.deps import ERRORS, READ, WRITE, Caller, Svc, caller
from plait.api.sse import SSE_HEADERS
from plait.assistant.events import encode_sse
from plait.service.assistant import TurnInput

router = APIRouter(
    prefix="/api/v1/assistant", tags=["assistant"], dependencies=[Depends(caller)], responses=ERRORS
)


def _turn(body: s.AssistantBody) -> TurnInput:
    return TurnInput(
        flow_id=body.flow_id,
        input_value=body.input_value,
        session_id=body.session_id,
        provider=body.provider,
        model_name=body.model_name,
        max_retries=body.max_retries,
    )


@router.post(
    "/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
    dependencies=[WRITE],
)
async def assistant_stream(svc: Svc, who: Caller, body: s.AssistantBody) -> StreamingResponse:
    """SSE: `event:` = progress | token | flow_update | flow_preview | file_written | run_started |
    complete | error | cancelled, `data:` = JSON with the same `event` field. Ends after complete, error or
    cancelled. Closing the connection cancels the turn."""
    events = await svc.assistant.stream(who, _turn(body))

    async def body_iter() -> Any:
        async with aclosing(events):  # a closed connection cancels the turn at once
            async for event in events:
                yield encode_sse(event)

    return StreamingResponse(body_iter(), media_type="text/event-stream", headers=SSE_HEADERS)


@router.post("", response_model=s.AssistantReply, dependencies=[WRITE])
async def assistant_reply(svc: Svc, who: Caller, body: s.AssistantBody) -> Any:
    """The same turn without streaming: the `complete` data (502 with the message on an error)."""
    return await svc.assistant.reply(who, _turn(body))


@router.get("/config", response_model=s.AssistantConfig, dependencies=[READ])
async def assistant_config(svc: Svc, who: Caller) -> Any:
    """The model providers the caller can use (keys in their variables or the deployment's), with
    models and the default choice."""
    return await svc.assistant.config(who)


@router.post("/sessions/reset", response_model=s.AssistantReset, dependencies=[WRITE])
async def reset_session(
    svc: Svc,
    who: Caller,
    session_id: Annotated[str | None, Query(max_length=128)] = None,
) -> Any:
    """Forget a session: its conversation memory and the components the assistant registered in
    it (every session's, without `session_id`). Only the caller's own; idempotent."""
    return await svc.assistant.reset(who, session_id)
