"""The SSRF guard for the model SDKs: an `httpx2.AsyncClient` whose every connection is checked.

The `openai` and `anthropic` SDKs send their requests with `httpx2` (a fork of httpx with its own
`httpcore2`), so `plait.net.guard.guarded_client` (an `httpx` client) cannot be handed to them.
This is the same guard for that stack: the transport's connection pool uses
`guard.guarded_backend_class(httpcore2)`, which resolves the host, checks every address against
the allowlist and connects to the checked address (not resolving the name again), exactly as
`GuardedTransport` does for httpx. Proxies from the environment are ignored (through a proxy the
check could not be pinned), no cookies are kept, and redirects are not followed (a model API has
no business redirecting; a redirect would otherwise carry `x-api-key` to another origin).
"""

from __future__ import annotations

from collections.abc import Sequence

import httpcore2
import httpx2

from plait.net.guard import Allowlist, BlockedURLError, guarded_backend_class

_Backend = guarded_backend_class(httpcore2)
_LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=20)


class GuardedSDKTransport(httpx2.AsyncHTTPTransport):
    """An httpx2 transport whose connections pass the SSRF guard (pinned to the checked address)."""

    def __init__(self, allow: Allowlist) -> None:
        self.allowlist = allow
        ssl_context = httpx2.create_ssl_context()
        super().__init__(verify=ssl_context, limits=_LIMITS, trust_env=False)
        # Replace httpx2's pool by one using the guarded backend (as guard.GuardedTransport does).
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=_LIMITS.max_connections,
            max_keepalive_connections=_LIMITS.max_keepalive_connections,
            keepalive_expiry=_LIMITS.keepalive_expiry,
            http1=True,
            network_backend=_Backend(allow),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme not in ("http", "https"):
            raise BlockedURLError(
                f"blocked request to {request.url.scheme}://: only http:// and https:// URLs are allowed",
                reason="scheme",
            )
        return await super().handle_async_request(request)


def guarded_sdk_client(allow: Sequence[str] | None = None, *, timeout: float = 600.0) -> httpx2.AsyncClient:
    """An `httpx2.AsyncClient` for a model SDK's `http_client=`: guarded transport, no environment
    proxies, no automatic redirects. `allow`: allowlist entries; None reads ``PLAIT_HTTP_ALLOW``."""
    return httpx2.AsyncClient(
        transport=GuardedSDKTransport(Allowlist.coerce(allow)),
        follow_redirects=False,
        trust_env=False,
        timeout=timeout,
    )


__all__ = ["GuardedSDKTransport", "guarded_sdk_client"]
