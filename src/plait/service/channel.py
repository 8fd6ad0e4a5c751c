"""The flow channel: one client connection (the canvas' WebSocket) that starts, stops and watches
runs. Transport-agnostic: `api/routes/ws.py` feeds it text frames and gives it a `send` coroutine.

Client messages (JSON objects; `id` is optional and echoed in the replies to that message):

    {"type": "auth", "api_key": K}                               when the key was not in the URL
    {"type": "run", "flow_id": F, "version"?: "draft"|"latest"|N, "inputs"?: {...}}
    {"type": "stop", "run_id": R}
    {"type": "subscribe", "run_id": R, "after"?: seq}             attach to a run (replay, then live)
    {"type": "unsubscribe", "run_id": R}
    {"type": "ping"}

Server messages: replies (`authenticated`, `run_accepted`, `subscribed`, `unsubscribed`,
`stopped`, `pong`), protocol errors `{"type": "error", "code", "message", "request"?, "id"?,
"details"?}` (no `seq`), and the events of every subscribed run exactly as the SSE stream has them
(`{"seq", "type", "run_id", "ts", "node_id"?, ...data}`: `run_started`, `node_started`,
`node_skipped`, `node_token`, `node_tool_call`, `node_retrying`, `edge_fired`, `node_finished`,
`waiting`, `decision`, `decision_rejected`, `error`, `run_finished`), fed from the same event log (stored events, then
the live bus). A run's subscription ends after its terminal `run_finished` (a run waiting for
people stays subscribed until it is answered and finishes).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from plait.errors import PlaitError
from plait.service.access import Access, Principal, Scope
from plait.service.errors import Unauthorized, reply_for

log = logging.getLogger("plait.service")

Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_MESSAGE_BYTES = 1 << 20
MAX_SUBSCRIPTIONS = 64
MESSAGE_TYPES = ("auth", "run", "stop", "subscribe", "unsubscribe", "ping")
ALIASES = {"flowId": "flow_id", "runId": "run_id", "input": "inputs", "apiKey": "api_key"}


class ChannelError(PlaitError):
    """A message the channel refuses, sent back as `{"type": "error", "code", "message", "details"}`."""

    def __init__(self, code: str, message: str, details: Any = None) -> None:
        super().__init__(message, code=code)
        self.details = details


def _error_of(exc: Exception) -> ChannelError:
    """The same codes and details the HTTP API gives for the same failure (`reply_for`)."""
    if isinstance(exc, ChannelError):
        return exc
    reply = reply_for(exc) if isinstance(exc, PlaitError) else None
    if reply is None:
        raise exc
    return ChannelError(reply.code, reply.message, reply.details)


def _str_field(msg: dict[str, Any], name: str) -> str:
    value = msg.get(name)
    if not isinstance(value, str) or not value or len(value) > 255 or "\x00" in value:
        raise ChannelError(
            "invalid_message",
            f"`{msg['type']}` needs `{name}` (a non-empty string)",
            {"hint": f'e.g. {{"type": "{msg["type"]}", "{name}": "..."}}'},
        )
    return value


class FlowChannel:
    """The state of one connection: authentication and its run subscriptions."""

    def __init__(self, services: Any, send: Send, *, who: Principal | None = None) -> None:
        self.services = services
        self._send = send
        self.who = who  # the caller, once authenticated (auth off: set by `open`)
        self.closing: str | None = None  # set when the connection must be closed (auth failed)
        self._subs: dict[str, asyncio.Task[None]] = {}
        self._send_lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        async with self._send_lock:
            await self._send(message)

    @property
    def authenticated(self) -> bool:
        return self.who is not None

    async def open(self, *, session: str | None = None) -> None:
        """Authenticate what the connection brought: nothing needed (auth off), or a browser
        session cookie (the caller checked it came from this site)."""
        if not self.services.settings.require_auth:
            self.who = await self.services.users.local_admin()
        elif session:
            self.who = await self.services.users.check_session(session)

    async def authenticate(self, key: str | None) -> bool:
        try:
            self.who = await self.services.users.check_key(key)
        except Unauthorized as exc:
            await self.send({"type": "error", "code": "unauthorized", "message": exc.message})
            self.closing = "unauthorized"
            return False
        return True

    # ------------------------------------------------------------------ messages
    async def handle(self, raw: str | bytes) -> None:
        """Handle one client frame; every failure is answered with an `error` message."""
        msg: dict[str, Any] | None = None
        try:
            msg = self._parse(raw)
            await self._dispatch(msg)
        except Exception as exc:  # noqa: BLE001 - any failure is reported to the client
            try:
                err = _error_of(exc)
            except Exception:  # noqa: BLE001
                log.exception("flow channel: %s failed", (msg or {}).get("type"))
                err = ChannelError("internal", f"{type(exc).__name__}: {exc}")
            reply: dict[str, Any] = {"type": "error", "code": err.code, "message": err.message}
            if msg is not None:
                reply["request"] = msg.get("type")
                if "id" in msg:
                    reply["id"] = msg["id"]
                if isinstance(msg.get("run_id"), str):
                    reply["run_id"] = msg["run_id"]
            if err.details is not None:
                reply["details"] = err.details
            await self.send(reply)

    def _parse(self, raw: str | bytes) -> dict[str, Any]:
        if len(raw) > MAX_MESSAGE_BYTES:
            raise ChannelError("invalid_message", f"message too large (over {MAX_MESSAGE_BYTES} bytes)")
        try:
            msg = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ChannelError(
                "invalid_json",
                f"messages must be JSON objects: {exc}",
                {"hint": 'e.g. {"type": "run", "flow_id": "my-flow", "inputs": {}}'},
            ) from exc
        if not isinstance(msg, dict):
            raise ChannelError("invalid_message", "messages must be JSON objects with a `type`")
        for alias, name in ALIASES.items():
            if alias in msg and name not in msg:
                msg[name] = msg.pop(alias)
        kind = msg.get("type")
        if kind not in MESSAGE_TYPES:
            raise ChannelError(
                "unknown_type",
                f"unknown message type {kind!r}; expected one of {', '.join(MESSAGE_TYPES)}",
            )
        return msg

    async def _dispatch(self, msg: dict[str, Any]) -> None:
        kind = msg["type"]
        reply: dict[str, Any] = {}
        if "id" in msg:
            reply["id"] = msg["id"]
        if kind == "auth":
            if await self.authenticate(msg.get("api_key") if isinstance(msg.get("api_key"), str) else None):
                await self.send({"type": "authenticated", **reply})
            return
        who = self.who
        if who is None:
            self.closing = "unauthorized"
            raise ChannelError(
                "unauthorized",
                "authenticate first: ?api_key=KEY in the URL or a first message "
                '{"type": "auth", "api_key": KEY}',
            )
        if kind == "ping":
            await self.send({"type": "pong", **reply})
        elif kind == "run":
            await self._run(who, msg, reply)
        elif kind == "stop":
            run_id = _str_field(msg, "run_id")
            who.require(Scope.RUN)
            await self.services.access.run(who, run_id, control=True)
            summary = await self.services.runs.cancel(run_id)
            await self.send({"type": "stopped", "run_id": run_id, "status": summary["status"], **reply})
        elif kind == "subscribe":
            run_id = _str_field(msg, "run_id")
            after = msg.get("after", 0)
            if not isinstance(after, int) or isinstance(after, bool) or after < 0:
                raise ChannelError("invalid_message", "`after` must be a non-negative integer (an event seq)")
            who.require(Scope.READ)
            await self.services.access.run(who, run_id)  # 404 before subscribing
            await self.send({"type": "subscribed", "run_id": run_id, **reply})
            self._subscribe(run_id, after)
        elif kind == "unsubscribe":
            run_id = _str_field(msg, "run_id")
            task = self._subs.pop(run_id, None)
            if task is not None:
                task.cancel()
            await self.send({"type": "unsubscribed", "run_id": run_id, **reply})

    async def _run(self, who: Principal, msg: dict[str, Any], reply: dict[str, Any]) -> None:
        flow_id = _str_field(msg, "flow_id")
        who.require(Scope.RUN)
        await self.services.access.flow(who, flow_id, Access.EDIT)
        inputs = msg.get("inputs", {})
        if inputs is None:
            inputs = {}
        if not isinstance(inputs, dict):
            raise ChannelError("invalid_input", "`inputs` must be a JSON object")
        version = msg.get("version")
        if version is not None:
            version = str(version).strip().lower()
            if version not in ("latest", "draft") and not (version.isdigit() and 0 < int(version) < 2**31):
                raise ChannelError("invalid_message", "`version` must be a number, 'latest' or 'draft'")
        run_id, _task = await self.services.runs.start(flow_id, inputs, version=version, owner_id=who.user_id)
        # Accepted before any event of the run: the client learns the id, then the events follow.
        await self.send({"type": "run_accepted", "run_id": run_id, "flow_id": flow_id, **reply})
        self._subscribe(run_id, 0)

    # ------------------------------------------------------------------ subscriptions
    def _subscribe(self, run_id: str, after: int) -> None:
        old = self._subs.pop(run_id, None)
        if old is not None:
            old.cancel()
        if len(self._subs) >= MAX_SUBSCRIPTIONS:
            raise ChannelError(
                "too_many_subscriptions",
                f"at most {MAX_SUBSCRIPTIONS} runs per connection; unsubscribe from finished ones",
            )
        task = asyncio.get_running_loop().create_task(self._forward(run_id, after))
        self._subs[run_id] = task

    async def _forward(self, run_id: str, after: int) -> None:
        try:
            async for event in self.services.runs.stream(run_id, after, until="terminal"):
                if event is not None:  # None: a heartbeat (the WebSocket pings on its own)
                    await self.send(event.to_dict())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the client hears why its events stopped
            log.warning("flow channel: stream of run %s failed: %s", run_id, exc)
            try:
                await self.send(
                    {"type": "error", "code": "stream_failed", "message": str(exc), "run_id": run_id}
                )
            except Exception:  # noqa: BLE001 - the connection is gone
                pass
        finally:
            if self._subs.get(run_id) is asyncio.current_task():
                self._subs.pop(run_id, None)

    @property
    def subscriptions(self) -> list[str]:
        return list(self._subs)

    async def close(self) -> None:
        tasks = list(self._subs.values())
        self._subs.clear()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
