"""What the SDK-backed providers (`openai_compat`, `anthropic_provider`) share: that an SDK never
retries on its own, and the server's own words dug out of an SDK error chain, so both report
failures the same way without one provider module importing the other's internals.

Retries belong to the node: `retry.max_attempts` is the absolute number of calls to the model
server, the first one included. The SDKs retry 429s, 5xx and connection errors by themselves
(twice, by default), which made a node with `max_attempts: 2` call a failing server six times; so
the providers build their clients with `SDK_MAX_RETRIES` (none), and a node that wants more calls
says so in its retry policy.
"""

from __future__ import annotations

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
