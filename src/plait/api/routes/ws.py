"""`/ws`: the flow channel over a WebSocket (protocol: `plait.service.channel`).

The web UI's own pages are signed in by their session cookie (when the socket's Origin is this
server). Browsers cannot set headers on a WebSocket, so an API key comes as `?api_key=KEY` in the
URL (masked in the logs: `plait.api.log_redaction`) or as a first message `{"type": "auth",
"api_key": KEY}` (the `x-api-key` / bearer headers work too, for other clients). A connection that fails to authenticate gets an `error` message and is closed
with code 4401.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from plait.api.deps import SESSION_COOKIE
from plait.service.channel import FlowChannel

AUTH_TIMEOUT_S = 10.0
CLOSE_UNAUTHORIZED = 4401

router = APIRouter()


def _header_key(ws: WebSocket) -> str | None:
    key = ws.headers.get("x-api-key")
    if key:
        return key
    auth = ws.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return None


def _same_site_session(ws: WebSocket) -> str | None:
    """The session cookie, when the page that opened the socket is this server's own (its Origin
    is this host): browsers send cookies on cross-site WebSocket handshakes too."""
    origin = ws.headers.get("origin")
    host = ws.headers.get("host")
    if not origin or not host or urlsplit(origin).netloc != host:
        return None
    return ws.cookies.get(SESSION_COOKIE)


@router.websocket("/ws")
async def flow_channel(ws: WebSocket) -> None:
    services = ws.app.state.services
    await ws.accept()

    async def send(message: dict[str, Any]) -> None:
        await ws.send_text(json.dumps(message, ensure_ascii=False, default=str, separators=(",", ":")))

    channel = FlowChannel(services, send)
    try:
        await channel.open(session=_same_site_session(ws))
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
