"""The `http` node: one HTTP request with templates, retries, size limits and the SSRF guard.

Output: ``{"status": int, "headers": {lower-cased name: value}, "body": parsed body,
"url": final URL (after redirects), "elapsed_ms": duration of the successful attempt}``.

Every request, and every redirect hop, goes through `plait.net.guard` with the allowlist in
``PLAIT_HTTP_ALLOW`` (read at each run). Connections come from the run's client pool
(`ctx.services.http`, a `plait.net.http.HttpClients`: one client per event loop and allowlist);
a context without one gets a client for the request alone. The size limit, URL display and body
parsing come from `plait.net.http` (shared with the agent tools).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlencode

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from plait.net.guard import (
    ALLOW_ENV,
    MAX_REDIRECTS,
    Allowlist,
    BlockedURLError,
    allowlist_from_env,
    send_with_redirects,
)
from plait.net.http import (
    BodyNotJSONError,
    ResponseTooLargeError,
    borrow_client,
    decode_text,
    display_url,
    parse_body,
    read_limited,
)
from plait.nodes.base import Node, NodeContext, NodeError

MAX_BACKOFF_S = 30.0
ERROR_BODY_CHARS = 500

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]


class HttpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: Method = Field("GET", title="Method", description="HTTP method.")
    url: str = Field(
        ...,
        min_length=1,
        title="URL",
        description="http(s) URL template, e.g. 'https://api.example.com/items/{{inputs.id}}'.",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        title="Headers",
        description="Request headers; values are templates, e.g. {'Authorization': 'Bearer {{env.API_TOKEN}}'}.",
    )
    query: dict[str, Any] = Field(
        default_factory=dict,
        title="Query parameters",
        description="Added to the URL's query string; values are templates, lists repeat the key, null omits it.",
    )
    body: Any = Field(
        None,
        title="Body",
        description=(
            "Request body (template). An object/list is encoded per body_type; a string is sent as is "
            "(e.g. a JSON text template). Null: no body."
        ),
    )
    body_type: Literal["json", "text", "form"] = Field(
        "json",
        title="Body type",
        description="json: application/json; text: text/plain; form: application/x-www-form-urlencoded.",
    )
    timeout_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        title="Timeout (s)",
        description="Time limit of each attempt, redirects included.",
    )
    retries: int = Field(
        0,
        ge=0,
        le=10,
        title="Retries",
        description="Extra attempts after a connection error, a timeout, HTTP 5xx or HTTP 429.",
    )
    backoff_s: float = Field(
        0.5,
        ge=0,
        le=MAX_BACKOFF_S,
        title="Backoff (s)",
        description="Wait before the first retry; doubles each retry (max 30 s). Retry-After is honoured.",
    )
    follow_redirects: bool = Field(
        True,
        title="Follow redirects",
        description=f"Follow up to {MAX_REDIRECTS} redirects (each one checked).",
    )
    response: Literal["auto", "json", "text", "html_text"] = Field(
        "auto",
        title="Response format",
        description=(
            "auto: JSON content types are parsed, HTML becomes readable text, anything else text; "
            "json: parse as JSON; text: raw text; html_text: visible text of an HTML page."
        ),
    )
    fail_on_status: bool = Field(
        True,
        title="Fail on HTTP error",
        description="Fail the node on HTTP 4xx/5xx (after retries); off: output the response anyway.",
    )
    max_response_bytes: int = Field(
        10_000_000,
        ge=1,
        le=1_000_000_000,
        title="Max response size (bytes)",
        description="Larger responses (after decompression) fail the node.",
    )

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


class HttpNode(Node[HttpConfig]):
    type_name = "http"
    title = "HTTP request"
    description = (
        "Calls an HTTP API or fetches a page (templated URL, headers, query and body; retries; "
        "JSON / HTML-to-text parsing). Internal addresses are blocked unless listed in PLAIT_HTTP_ALLOW."
    )
    category = "integrations"
    Config = HttpConfig

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        target, headers, content, allow = await self._prepare(ctx, cfg)
        async with borrow_client(getattr(ctx.services, "http", None), allow) as client:
            request = client.build_request(
                cfg.method, target, headers=headers, content=content, timeout=httpx.Timeout(cfg.timeout_s)
            )
            return await self._exchange(client, request, cfg)

    async def _exchange(self, client: httpx.AsyncClient, request: httpx.Request, cfg: HttpConfig) -> Any:
        """Send `request` with the config's retries; the node's output, or a NodeError."""
        shown = display_url(request.url)
        attempts = cfg.retries + 1
        for attempt in range(1, attempts + 1):
            delay = _backoff(cfg.backoff_s, attempt)
            t0 = time.perf_counter()
            try:
                response, raw = await self._attempt(client, request, cfg, shown)
            except BlockedURLError as exc:
                raise NodeError(exc.message, retryable=False) from exc  # the message says how to fix it
            except ResponseTooLargeError as exc:
                raise NodeError(exc.message, hint=exc.hint, retryable=False) from exc
            except httpx.TooManyRedirects as exc:
                raise NodeError(
                    f"request to {shown} was redirected more than {MAX_REDIRECTS} times", retryable=False
                ) from exc
            except (httpx.TimeoutException, TimeoutError) as exc:
                if attempt < attempts:
                    await asyncio.sleep(delay)
                    continue
                raise NodeError(f"request to {shown} timed out after {cfg.timeout_s:g}s") from exc
            except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                if attempt < attempts:
                    await asyncio.sleep(delay)
                    continue
                raise NodeError(f"request to {shown} failed: {_describe(exc)}") from exc
            except httpx.HTTPError as exc:  # invalid redirect target, bad encoding, local protocol error...
                raise NodeError(f"request to {shown} failed: {_describe(exc)}", retryable=False) from exc
            elapsed_ms = (time.perf_counter() - t0) * 1000
            status = response.status_code
            transient = status >= 500 or status == 429
            if transient and attempt < attempts:
                await asyncio.sleep(_retry_after(response) if "retry-after" in response.headers else delay)
                continue
            if status >= 400 and cfg.fail_on_status:
                text = decode_text(raw, response)[:ERROR_BODY_CHARS]
                message = f"{request.method} {display_url(response.url)} returned HTTP {status}"
                if response.reason_phrase:
                    message += f" {response.reason_phrase}"
                raise NodeError(
                    f"{message}: {text}" if text.strip() else message,
                    retryable=transient or status == 408,
                )
            try:
                body = parse_body(raw, response, cfg.response, shown, lenient=status >= 400)
            except BodyNotJSONError as exc:
                raise NodeError(
                    exc.message, hint="set response to 'text' or 'auto'", retryable=False
                ) from exc
            return {
                "status": status,
                "headers": dict(response.headers.items()),
                "body": body,
                "url": str(response.url.copy_with(userinfo=b"")),
                "elapsed_ms": round(elapsed_ms, 3),
            }
        raise AssertionError("unreachable")  # pragma: no cover

    async def _prepare(
        self, ctx: NodeContext, cfg: HttpConfig
    ) -> tuple[httpx.URL, dict[str, str], bytes | None, Allowlist]:
        """The rendered URL, headers and body, and the allowlist to send them under."""
        url = await ctx.arender(cfg.url)
        if not isinstance(url, str) or not url.strip():
            raise NodeError(
                f"url rendered to {_short(url)}, not a URL",
                hint="the url template must produce an http(s) URL string",
                retryable=False,
            )
        try:
            target = httpx.URL(url.strip())
            params = _query_params(await ctx.arender(cfg.query))
            if params:
                target = target.copy_merge_params(params)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise NodeError(f"invalid url {_short(url)}: {exc}", retryable=False) from exc
        if target.scheme not in ("http", "https") or not target.host:
            raise NodeError(
                f"invalid url {_short(url)}: only absolute http:// and https:// URLs are supported",
                retryable=False,
            )
        headers = _header_values(await ctx.arender(cfg.headers))
        body = await ctx.arender(cfg.body) if cfg.body is not None else None
        content, content_type = _encode_body(body, cfg.body_type)
        if content_type and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = content_type
        try:
            allow = allowlist_from_env()
        except ValueError as exc:
            raise NodeError(str(exc), hint=f"fix {ALLOW_ENV}", retryable=False) from exc
        return target, headers, content, allow

    async def _attempt(
        self, client: httpx.AsyncClient, request: httpx.Request, cfg: HttpConfig, shown: str
    ) -> tuple[httpx.Response, bytes]:
        async with asyncio.timeout(cfg.timeout_s):
            if cfg.follow_redirects:
                response = await send_with_redirects(client, request)
            else:
                response = await client.send(request, stream=True, follow_redirects=False)
            try:
                raw = await read_limited(response, cfg.max_response_bytes, shown)
            finally:
                await response.aclose()
        return response, raw


# --------------------------------------------------------------------------- helpers


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _header_values(headers: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if value is None:
            continue
        text = _as_text(value)
        if "\r" in text or "\n" in text or "\r" in name or "\n" in name:
            raise NodeError(f"header {name!r} contains a line break", retryable=False)
        out[name] = text
    return out


def _query_params(query: Any) -> dict[str, str | list[str]]:
    if not isinstance(query, Mapping):
        raise NodeError(f"query rendered to {_short(query)}, not an object", retryable=False)
    out: dict[str, str | list[str]] = {}
    for key, value in query.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            out[str(key)] = [_as_text(v) for v in value if v is not None]
        else:
            out[str(key)] = _as_text(value)
    return out


def _encode_body(body: Any, body_type: str) -> tuple[bytes | None, str | None]:
    if body is None:
        return None, None
    if body_type == "json":
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str)
        return text.encode(), "application/json"
    if body_type == "text":
        return _as_text(body).encode(), "text/plain; charset=utf-8"
    if isinstance(body, str):
        return body.encode(), "application/x-www-form-urlencoded"
    if isinstance(body, Mapping):
        pairs = [
            (str(k), _as_text(item))
            for k, v in body.items()
            for item in (v if isinstance(v, (list, tuple)) else [v])
            if item is not None
        ]
        return urlencode(pairs).encode(), "application/x-www-form-urlencoded"
    raise NodeError(
        f"a form body must be an object or a string, got {type(body).__name__}",
        hint="use body_type 'json' for lists",
        retryable=False,
    )


def _backoff(base: float, attempt: int) -> float:
    return min(base * 2.0 ** (attempt - 1), MAX_BACKOFF_S)


def _retry_after(response: httpx.Response) -> float:
    """Retry-After in seconds (delta-seconds or HTTP date), clamped to [0, MAX_BACKOFF_S]."""
    value = response.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 0.0
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds != seconds:  # NaN
        return 0.0
    return min(max(seconds, 0.0), MAX_BACKOFF_S)
