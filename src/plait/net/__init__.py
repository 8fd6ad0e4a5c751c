"""Outbound network helpers shared by the `http` node and the agent tools.

`plait.net.guard` is the SSRF guard (re-exported here); `plait.net.http` holds the shared clients,
the size limit and body parsing (import it directly: it brings BeautifulSoup).
"""

from plait.net.guard import (
    ALLOW_ENV,
    MAX_REDIRECTS,
    Allowlist,
    BlockedURLError,
    GuardedNetworkBackend,
    GuardedTransport,
    InvalidAllowlistError,
    acheck_url,
    allowlist_from_env,
    blocked_reason,
    check_url,
    guarded_client,
    send_with_redirects,
)

__all__ = [
    "ALLOW_ENV",
    "MAX_REDIRECTS",
    "Allowlist",
    "BlockedURLError",
    "GuardedNetworkBackend",
    "GuardedTransport",
    "InvalidAllowlistError",
    "acheck_url",
    "allowlist_from_env",
    "blocked_reason",
    "check_url",
    "guarded_client",
    "send_with_redirects",
]
