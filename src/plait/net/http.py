"""Guarded HTTP plumbing shared by the `http` node and the agent tools.

Both send requests a flow or a model chose, so both need the same things around
`plait.net.guard`: pooled clients (`HttpClients`), a size limit enforced while the body streams in,
URLs shown without credentials or query strings, and bodies decoded and parsed the same way (JSON,
text, visible text of HTML). They live here, below `nodes/` and `tools/`, so neither imports the
other; each turns the errors below into its own (`NodeError`, `ToolError`).

Connection pools have an owner, never a module: an `HttpClients` travels with a run
(`RunServices.http`, read as `ctx.services.http`). The server makes one and closes it at shutdown;
`plait.run` uses the engine's documented default unless the caller passes one. A guarded client
costs tens of milliseconds to build (its TLS context), so it is made once per (event loop,
allowlist) and kept; clients and their connections are bound to the loop they were created on, so
a client is never used from another loop, and clients of closed loops are dropped. A caller whose
context has no pool (a tool called outside a run) gets a client for its one exchange
(`borrow_client`), closed after it.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from bs4 import BeautifulSoup
from bs4.element import NavigableString

from plait.errors import PlaitError
from plait.net.guard import Allowlist, guarded_client


class ResponseTooLargeError(PlaitError):
    """A response body over the caller's byte limit (declared or streamed)."""

    code = "response_too_large"


class BodyNotJSONError(PlaitError):
    """A body that was asked for as JSON and is not JSON."""

    code = "body_not_json"


# --------------------------------------------------------------------------- client pools


class HttpClients:
    """Guarded HTTP clients, one per (event loop, allowlist), made on first use; closed by the owner
    (`aclose`, on the loop that used them)."""

    __slots__ = ("_clients",)

    def __init__(self) -> None:
        self._clients: dict[asyncio.AbstractEventLoop, dict[tuple[str, ...], httpx.AsyncClient]] = {}

    def get(self, allow: Allowlist) -> httpx.AsyncClient:
        """The running loop's guarded client for this allowlist (created on first use)."""
        loop = asyncio.get_running_loop()
        per_loop = self._clients.get(loop)
        if per_loop is None:
            for old in [lp for lp in self._clients if lp.is_closed()]:
                del self._clients[old]  # their connections cannot be used (or closed) any more
            per_loop = self._clients[loop] = {}
        client = per_loop.get(allow.key)
        if client is None or client.is_closed:
            client = per_loop[allow.key] = guarded_client(allow)
        return client

    def __len__(self) -> int:
        """How many clients the running loop has (one per allowlist); 0 outside a loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return 0
        return len(self._clients.get(loop, {}))

    async def aclose(self) -> None:
        """Close the clients of the running event loop (e.g. at server shutdown)."""
        for client in self._clients.pop(asyncio.get_running_loop(), {}).values():
            await client.aclose()


@asynccontextmanager
async def borrow_client(pool: HttpClients | None, allow: Allowlist) -> AsyncIterator[httpx.AsyncClient]:
    """The pool's client for `allow`; without a pool, a client for this one exchange, closed after."""
    if pool is not None:
        yield pool.get(allow)
        return
    client = guarded_client(allow)
    try:
        yield client
    finally:
        await client.aclose()


# --------------------------------------------------------------------------- requests and bodies


def display_url(url: httpx.URL) -> str:
    """The URL for messages: no credentials, no query string (it may carry API keys)."""
    text = f"{url.scheme}://{url.netloc.decode('ascii')}{url.path}"
    return text if len(text) <= 200 else text[:200] + "..."


async def read_limited(response: httpx.Response, limit: int, shown: str) -> bytes:
    """The body of a streamed response; ResponseTooLargeError past `limit` bytes."""
    too_big = ResponseTooLargeError(
        f"response from {shown} is larger than max_response_bytes ({limit} bytes)",
        hint="raise max_response_bytes or request less data",
    )
    declared = response.headers.get("content-length")
    if response.request.method != "HEAD" and declared and declared.isdigit() and int(declared) > limit:
        raise too_big
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _charset(response: httpx.Response) -> str | None:
    name = response.charset_encoding
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_text(raw: bytes, response: httpx.Response) -> str:
    """The body as text, in the response's charset (UTF-8 if none or unknown)."""
    return raw.decode(_charset(response) or "utf-8", errors="replace")


def _mime(response: httpx.Response) -> str:
    content_type: str = response.headers.get("content-type", "")
    return content_type.split(";", 1)[0].strip().lower()


def _is_json_type(mime: str) -> bool:
    return mime in ("application/json", "text/json") or mime.endswith("+json")


def parse_body(raw: bytes, response: httpx.Response, mode: str, shown: str, *, lenient: bool) -> Any:
    """The body per `mode`: `auto` (by content type), `json`, `text` or `html_text`.

    Invalid JSON is returned as text when `lenient` (always for `auto` with a JSON content type),
    else raises BodyNotJSONError.
    """
    if mode == "auto":
        mime = _mime(response)
        if _is_json_type(mime):
            mode, lenient = "json", True
        elif mime in ("text/html", "application/xhtml+xml"):
            mode = "html_text"
        else:
            mode = "text"
    if mode == "json":
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            if lenient:
                return decode_text(raw, response)
            raise BodyNotJSONError(f"response from {shown} is not valid JSON ({exc})") from exc
    if mode == "html_text":
        return html_to_text(raw, _charset(response))
    return decode_text(raw, response)


_SPACES = re.compile(r"\s+")
_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "object")
_BLOCK_TAGS = (
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "title", "tr", "ul",
)  # fmt: skip


def html_to_text(html: bytes | str, encoding: str | None = None) -> str:
    """Visible text of an HTML document: scripts/styles dropped, whitespace collapsed, one line per block."""
    if isinstance(html, bytes):
        soup = BeautifulSoup(html, "html.parser", from_encoding=encoding)
    else:
        soup = BeautifulSoup(html, "html.parser")
    for tag in soup(_DROP_TAGS):
        tag.decompose()
    for string in soup.find_all(string=True):
        if type(string) is NavigableString and string.find_parent("pre") is None:
            string.replace_with(_SPACES.sub(" ", string))
    for tag in soup(_BLOCK_TAGS):
        tag.insert_before("\n")
        tag.insert_after("\n")
    for tag in soup(("td", "th")):
        tag.insert_after(" ")
    lines = (" ".join(line.split()) for line in soup.get_text().splitlines())
    return "\n".join(line for line in lines if line)
