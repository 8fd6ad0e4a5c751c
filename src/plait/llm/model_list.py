"""Which models an endpoint serves: `GET {base}/models`, as the Models page's "Test connection"
and the node forms' model dropdowns ask it.

The request goes through plait's SSRF guard (`plait.net.guard.guarded_client`) with the allowlist
the caller passes: the base URL is typed by a person, so it gets the same scrutiny as an `http`
node's URL, and the service decides which extra destinations (a local llama.cpp on 127.0.0.1) a
caller may reach. Every way it can go wrong ends in one `ModelListError` whose `reason` the page
can act on (`unreachable`, `unauthorized`, `not_compatible`, `blocked`) and whose message says what
to change; the key never appears in a message.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from plait.errors import PlaitError
from plait.net.guard import BlockedURLError, guarded_client
from plait.net.http import display_url

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
MAX_BODY_BYTES = 2 * 1024 * 1024


class ModelListError(PlaitError):
    """The endpoint did not give a model list; `reason` says which kind of failure."""

    code = "model_list_failed"

    def __init__(self, reason: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint, code=self.code)
        self.reason = reason


def models_url(kind: str, base_url: str | None) -> str:
    """The model-list URL of an endpoint: `{base}/models` (OpenAI-compatible: the base ends in
    `/v1`), `{base}/v1/models` for Anthropic (whose SDK base has no `/v1`)."""
    if kind == "anthropic":
        return (base_url or ANTHROPIC_BASE_URL).rstrip("/") + "/v1/models"
    return (base_url or OPENAI_BASE_URL).rstrip("/") + "/models"


def _headers(kind: str, key: str | None) -> dict[str, str]:
    if kind == "anthropic":
        return {"x-api-key": key or "", "anthropic-version": ANTHROPIC_VERSION}
    return {"authorization": f"Bearer {key}"} if key else {}


def parse_model_ids(payload: Any) -> list[str]:
    """Model ids from a model-list answer: OpenAI's `{"data": [{"id"}]}` (also Anthropic's, Groq's,
    vLLM's), llama.cpp's extra `{"models": [{"name"|"model"}]}`, or Ollama's `{"models": [...]}`.
    Raises ValueError when the answer is none of these."""
    if not isinstance(payload, dict):
        raise ValueError("the answer is not a JSON object")
    ids: list[str] = []
    for key, fields in (("data", ("id",)), ("models", ("id", "model", "name"))):
        entries = payload.get(key)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            name = next((entry.get(f) for f in fields if isinstance(entry, dict) and entry.get(f)), None)
            if isinstance(entry, str):
                name = entry
            if isinstance(name, str) and name not in ids:
                ids.append(name)
        if ids:
            return ids
    if isinstance(payload.get("data"), list) or isinstance(payload.get("models"), list):
        return ids  # a valid, empty list
    raise ValueError("the answer has no `data` list of models")


async def list_models(
    kind: str,
    base_url: str | None,
    key: str | None,
    *,
    allow: Sequence[str] = (),
    timeout_s: float = 5.0,
) -> list[str]:
    """The model ids the endpoint reports. Raises ModelListError (see the module docstring)."""
    url = models_url(kind, base_url)
    try:
        shown = display_url(httpx.URL(url))
    except httpx.InvalidURL as exc:
        raise ModelListError("invalid", f"{url!r} is not a URL: {exc}") from exc
    client = guarded_client(allow, timeout=timeout_s, headers=_headers(kind, key))
    try:
        async with client:
            response = await client.get(url)
            body = response.content[:MAX_BODY_BYTES]
    except BlockedURLError as exc:
        raise ModelListError(
            "blocked",
            f"plait does not connect to {shown}: {exc.message}",
            hint="an administrator can allow this host with PLAIT_HTTP_ALLOW",
        ) from exc
    except httpx.TimeoutException as exc:
        raise ModelListError("unreachable", f"{shown} did not answer within {timeout_s:g} s") from exc
    except httpx.HTTPError as exc:
        raise ModelListError(
            "unreachable",
            f"cannot reach {shown}: {exc or type(exc).__name__}",
            hint="check the base URL and that the server is running",
        ) from exc
    status = response.status_code
    if status in (401, 403):
        raise ModelListError(
            "unauthorized",
            f"{shown} refused the key (HTTP {status})",
            hint="check the API key (a local server may need none)",
        )
    if status == 404:
        raise ModelListError(
            "not_compatible",
            f"{shown} answered 404: this is not an OpenAI-compatible API at that base URL",
            hint="the base URL usually ends in /v1, e.g. http://127.0.0.1:8080/v1",
        )
    if status >= 400:
        raise ModelListError("unreachable", f"{shown} answered HTTP {status}")
    try:
        return parse_model_ids(json.loads(body))
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise ModelListError(
            "not_compatible",
            f"{shown} is not an OpenAI-compatible model list: {exc}",
            hint="the base URL usually ends in /v1",
        ) from exc
