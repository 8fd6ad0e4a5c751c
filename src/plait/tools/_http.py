"""One guarded HTTP exchange for tools: SSRF guard, redirects checked hop by hop, size limit.

Tools talk to public services (search engines, Wikipedia, arXiv) and to URLs a model chose, so
every request goes through `plait.net.guard` exactly like the `http` node's, with the same size
limit and body parsing (`plait.net.http`). Connections come from the caller's client pool
(`ctx.services.http`, the run's `HttpClients`); a context without one (a tool called outside a
run) gets a client for the request alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from plait.net.guard import ALLOW_ENV, BlockedURLError, allowlist_from_env, send_with_redirects
from plait.net.http import (
    HttpClients,
    ResponseTooLargeError,
    borrow_client,
    decode_text,
    display_url,
    parse_body,
    read_limited,
)
from plait.tools.base import ToolCallContext, ToolError

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_BYTES = 5_000_000


@dataclass(slots=True)
class Fetched:
    status: int
    headers: httpx.Headers
    raw: bytes
    response: httpx.Response
    url: str

    def text(self) -> str:
        return decode_text(self.raw, self.response)

    def json(self, what: str) -> Any:
        try:
            return json.loads(self.raw)
        except ValueError as exc:
            raise ToolError(f"{what} did not answer with JSON ({exc}): {self.text()[:200]!r}") from exc

    def body(self, mode: str = "auto") -> Any:
        return parse_body(self.raw, self.response, mode, self.url, lenient=True)


def http_clients(ctx: ToolCallContext | None) -> HttpClients | None:
    """The client pool of the caller's run (`ctx.services.http`), if its context has one."""
    return getattr(getattr(ctx, "services", None), "http", None)


async def fetch(
    ctx: ToolCallContext | None,
    method: str,
    url: str,
    *,
    what: str,
    params: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    json_body: Any = None,
    data: Mapping[str, Any] | None = None,
    content: bytes | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
    raise_for_status: bool = True,
) -> Fetched:
    """Send one request through the SSRF guard, with a client of `ctx`'s pool; `what` names the
    service in error messages."""
    try:
        allow = allowlist_from_env()
    except ValueError as exc:
        raise ToolError(str(exc), hint=f"fix {ALLOW_ENV}", fatal=True) from exc
    async with borrow_client(http_clients(ctx), allow) as client:
        try:
            request = client.build_request(
                method.upper(),
                url,
                params={k: v for k, v in (params or {}).items() if v is not None},
                headers=dict(headers or {}),
                json=json_body,
                data=data,
                content=content,
                timeout=httpx.Timeout(timeout_s),
            )
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise ToolError(f"{what}: invalid URL {url[:200]!r}: {exc}") from exc
        if request.url.scheme not in ("http", "https") or not request.url.host:
            raise ToolError(f"{what}: invalid URL {url[:200]!r}: only absolute http(s) URLs are supported")
        shown = display_url(request.url)
        try:
            async with asyncio.timeout(timeout_s):
                response = await send_with_redirects(client, request)
                try:
                    raw = await read_limited(response, max_bytes, shown)
                finally:
                    await response.aclose()
        except BlockedURLError as exc:
            raise ToolError(f"{what}: {exc.message}") from exc
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise ToolError(f"{what}: request to {shown} timed out after {timeout_s:g}s") from exc
        except httpx.HTTPError as exc:
            raise ToolError(f"{what}: request to {shown} failed: {type(exc).__name__}: {exc}") from exc
        except ResponseTooLargeError as exc:
            raise ToolError(f"{what}: {exc.message}") from exc
        fetched = Fetched(response.status_code, response.headers, raw, response, shown)
        if raise_for_status and response.status_code >= 400:
            detail = fetched.text()[:300].strip()
            raise ToolError(
                f"{what}: {method.upper()} {shown} returned HTTP {response.status_code}"
                + (f": {detail}" if detail else ""),
                hint="check the API key" if response.status_code in (401, 403) else None,
            )
        return fetched
