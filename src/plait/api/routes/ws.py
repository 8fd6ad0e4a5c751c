"""`/ws`: the flow channel over a WebSocket (protocol: `plait.service.channel`).

Browsers cannot set headers on a WebSocket, so the API key comes as `?api_key=KEY` in the URL or
as a first message `{"type": "auth", "api_key": KEY}` (the `x-api-key` / bearer headers work too,
for other clients). A connection that fails to authenticate gets an `error` message and is closed
with code 4401.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from plait.service.channel import FlowChannel

AUTH_TIMEOUT_S = 10.0
CLOSE_UNAUTHORIZED = 4401

router = APIRouter()

_KEY_IN_URL = re.compile(r"((?:api_key|apiKey)=)[^&\s\"]+")


class RedactKeyInUrl(logging.Filter):
    """uvicorn logs a WebSocket's path with its query (`"WebSocket /ws?api_key=..." [accepted]`):
    mask the key, so secrets never reach the logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, str) and "=" in a for a in record.args):
            record.args = tuple(
                _KEY_IN_URL.sub(r"\1********", a) if isinstance(a, str) else a for a in record.args
            )
        elif isinstance(record.msg, str) and "=" in record.msg:
            record.msg = _KEY_IN_URL.sub(r"\1********", record.msg)
        return True


def install_log_redaction() -> None:
    for name in ("uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactKeyInUrl) for f in logger.filters):
            logger.addFilter(RedactKeyInUrl())


install_log_redaction()


def _header_key(ws: WebSocket) -> str | None:
    key = ws.headers.get("x-api-key")
    if key:
        return key
    auth = ws.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return None


@router.websocket("/ws")
async def flow_channel(ws: WebSocket) -> None:
    services = ws.app.state.services
    await ws.accept()

    async def send(message: dict[str, Any]) -> None:
        await ws.send_text(json.dumps(message, ensure_ascii=False, default=str, separators=(",", ":")))

    channel = FlowChannel(services, send)
    try:
        key = ws.query_params.get("api_key") or _header_key(ws)
        if not channel.authenticated and key is not None:
            await channel.authenticate(key)
        elif not channel.authenticated:
            # The first message must authenticate; a silent client is dropped.
            try:
                first = await asyncio.wait_for(ws.receive_text(), AUTH_TIMEOUT_S)
            except TimeoutError:
                await send({"type": "error", "code": "unauthorized", "message": "no auth message in time"})
                channel.closing = "unauthorized"
            else:
                await channel.handle(first)
        while channel.closing is None:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            await channel.handle(data)
        await ws.close(code=CLOSE_UNAUTHORIZED, reason=channel.closing)
    except WebSocketDisconnect:
        pass
    finally:
        await channel.close()
