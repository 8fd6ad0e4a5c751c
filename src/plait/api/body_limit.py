"""A cap on request bodies: a client cannot make the server read (and parse) more than
`max_bytes` (PLAIT_MAX_BODY_BYTES, default 16 MiB), whatever the route. Flow documents have their
own, smaller limits (plait.spec.loader); this one is the outer wall.

Plain ASGI, so it costs nothing per request but a header lookup: a declared `content-length` over
the cap is refused before any byte is read; a body without one (chunked) is counted as it streams
and answered 413 once it passes the cap (the app sees the client leave).
"""

from __future__ import annotations

import json
import os
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


def max_body_bytes() -> int:
    raw = os.environ.get("PLAIT_MAX_BODY_BYTES", "")
    return int(raw) if raw.strip().isdigit() else DEFAULT_MAX_BODY_BYTES


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int | None = None) -> None:
        self.app = app
        self.max_bytes = max_body_bytes() if max_bytes is None else max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_bytes <= 0:
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._refuse(send)
                return
        seen = 0
        started = refused = False

        async def counting_receive() -> Message:
            # Past the cap: answer 413 now and tell the app the client left (it stops reading;
            # whatever it answers then is dropped).
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes and not started:
                    refused = True
                    await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counting_receive, tracking_send)

    async def _refuse(self, send: Send) -> None:
        body: dict[str, Any] = {
            "error": {
                "code": "body_too_large",
                "message": f"the request body is over {self.max_bytes:,} bytes",
                "details": {"hint": "send less, or raise PLAIT_MAX_BODY_BYTES on the server"},
            }
        }
        payload = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})
