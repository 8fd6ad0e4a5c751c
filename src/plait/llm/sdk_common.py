"""What the SDK-backed providers (`openai_compat`, `anthropic_provider`) share: that an SDK never
retries on its own, and the server's own words dug out of an SDK error chain, so both report
failures the same way without one provider module importing the other's internals.

An endpoint the SSRF guard refuses (a base URL from a user's variables pointing at an internal
address, see plait.llm.registry) ends in `BlockedEndpointError`, whose message names the variable
that chose the endpoint and `PLAIT_HTTP_ALLOW`, whichever SDK wrapped the guard's refusal.

Retries belong to the node: `retry.max_attempts` is the absolute number of calls to the model
server, the first one included. The SDKs retry 429s, 5xx and connection errors by themselves
(twice, by default), which made a node with `max_attempts: 2` call a failing server six times; so
the providers build their clients with `SDK_MAX_RETRIES` (none), and a node that wants more calls
says so in its retry policy.
"""

from __future__ import annotations

from plait.llm.base import ProviderError
from plait.net.guard import ALLOW_ENV, BlockedURLError

SDK_MAX_RETRIES = 0


_MAX_MESSAGE = 1000


def deepest_message(exc: BaseException) -> str:
    """The innermost meaningful text of an exception chain (the server's message, the socket error),
    without a server-side traceback some servers append (llama.cpp's does), at most 1000 chars."""
    text = _deepest(exc).strip()
    cut = text.find("\n\n  File ")
    if cut > 0:
        text = text[:cut].rstrip()
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def _deepest(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str) and inner:
            return inner
        if isinstance(message := body.get("message"), str):
            return message
        if isinstance(detail := body.get("detail"), str):
            return detail
    elif isinstance(body, str) and body.strip():
        return body.strip()
    seen = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    deepest = None
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if str(cause):
            deepest = str(cause)
        cause = cause.__cause__ or cause.__context__
    return deepest or getattr(exc, "message", None) or str(exc) or type(exc).__name__


class BlockedEndpointError(ProviderError):
    """The SSRF guard refused the model endpoint: the message names the variable and the fix."""

    code = "endpoint_blocked"


def blocked_cause(exc: BaseException) -> BlockedURLError | None:
    """The guard's refusal somewhere in an SDK error's chain (the SDKs wrap it in a connection error)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, BlockedURLError):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def blocked_endpoint(
    blocked: BlockedURLError, *, provider: str, model: str, variable: str | None
) -> BlockedEndpointError:
    """The provider error for a refused endpoint, naming the variable that chose it."""
    where = f"the endpoint in {variable}" if variable else "the model endpoint"
    fix = (
        f" ({ALLOW_ENV} is the server's setting: ask an administrator)"
        if ALLOW_ENV in blocked.message
        else f"; an administrator can allow the host in {ALLOW_ENV}"
    )
    return BlockedEndpointError(
        f"plait does not connect to {where}: {blocked.message}{fix}", provider=provider, model=model
    )
