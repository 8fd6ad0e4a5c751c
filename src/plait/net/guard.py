"""SSRF guard for every outbound HTTP request plait makes on behalf of a flow.

Policy
------
- Only ``http`` and ``https`` URLs (``file://``, ``gopher://``, ``ftp://``... are refused).
- A host is refused when *any* address it resolves to is loopback, private (RFC 1918, ULA
  ``fc00::/7``...), link-local (``169.254.0.0/16`` incl. cloud metadata, ``fe80::/10``), multicast,
  reserved, unspecified (``0.0.0.0``, ``::``), carrier-grade NAT (``100.64.0.0/10``), site-local,
  or otherwise not globally routable. IPv4 addresses embedded in IPv6 (IPv4-mapped ``::ffff:a.b.c.d``,
  6to4 ``2002::/16``, NAT64 ``64:ff9b::/96``) are judged by their IPv4 address.
- ``PLAIT_HTTP_ALLOW`` (comma-separated) opts trusted destinations back in. Entries are hostnames
  (``api.internal``, ``*.corp.example`` for sub-domains), ``host:port``, IP addresses
  (``127.0.0.1``, ``[::1]:8080``) or networks (``10.0.0.0/8``). A hostname entry trusts that host
  whatever it resolves to; an address/network entry trusts the matching resolved addresses only.
  Entries with a port only match that port (default ports: 80 for http, 443 for https).

Enforcement
-----------
`check_url` / `acheck_url` validate a URL up front (they only resolve names, they never connect).
Real requests must go through `guarded_client()` (or any client using `GuardedTransport`):

- the transport refuses non-http(s) URLs before anything happens;
- its network backend resolves the host itself, checks *all* addresses and then connects to the
  checked address, so the address that was checked is the address that is used (the name is not
  resolved a second time: DNS rebinding between check and connect is not possible). TLS still
  uses the hostname for SNI and certificate verification;
- the client never follows redirects by itself: `send_with_redirects` follows at most
  `MAX_REDIRECTS` hops, and every hop is a new request through the same transport, so each
  redirect target is checked like the first URL (redirect bodies are not read);
- proxies from the environment and ``.netrc`` are ignored (``trust_env=False``) -- through a proxy
  the proxy would resolve the name and the check could not be pinned; no cookie jar is kept.

Residual risks
--------------
- `check_url` / `acheck_url` on their own are a time-of-check test: a name may resolve
  differently when some other client connects later. Use them for early, friendly errors and send
  the request through `GuardedTransport`, which pins the checked address.
- An allowed *hostname* is trusted for any address, including one an attacker controlling its DNS
  points at an internal service; allow addresses/networks rather than names when possible.
- Kept-alive connections are reused per origin (scheme, host, port) for the lifetime of the pool;
  they were checked when opened, and the pool belongs to one allowlist.
- Reachable public addresses are not restricted (egress filtering is the network's job).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import re
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from types import ModuleType
from typing import Any, overload

import anyio
import httpcore
import httpx

from plait.errors import PlaitError
from plait.net.redact import strip_cross_origin_credentials

ALLOW_ENV = "PLAIT_HTTP_ALLOW"
MAX_REDIRECTS = 5
ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_FIX = f"if this destination is trusted, add it to {ALLOW_ENV}"


class BlockedURLError(PlaitError, ValueError):
    """A URL the SSRF guard refuses; the message names the host, the address, why, and the fix."""

    code = "blocked_url"

    def __init__(
        self,
        message: str,
        *,
        host: str | None = None,
        address: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.host = host
        self.address = address
        self.reason = reason


class InvalidAllowlistError(PlaitError, ValueError):
    """A ``PLAIT_HTTP_ALLOW`` entry that is not a hostname, host:port, IP address or CIDR network."""

    code = "invalid_allowlist"


# --------------------------------------------------------------------------- address policy


def blocked_reason(address: IPAddress | str) -> str | None:
    """Why `address` must not be contacted (e.g. ``"loopback address"``), or None if it is public."""
    addr = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(addr, ipaddress.IPv6Address):
        embedded, kind = _embedded_ipv4(addr)
        if embedded is not None:
            inner = blocked_reason(embedded)
            return f"{kind} {inner} ({embedded})" if inner else None
    if addr.is_unspecified:
        return "unspecified address"
    if addr.is_loopback:
        return "loopback address"
    if addr.is_link_local:
        return "link-local address"
    if addr.is_multicast:
        return "multicast address"
    if addr in _CGNAT:
        return "carrier-grade NAT address (100.64.0.0/10)"
    if isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local:
        return "site-local address"
    if addr.is_reserved:
        return "reserved address"
    if addr.is_private:
        return "private address"
    if not addr.is_global:
        return "non-public address"
    return None


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address | None, str]:
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped, "IPv4-mapped"
    if addr.sixtofour is not None:
        return addr.sixtofour, "6to4"
    if addr in _NAT64:
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF), "NAT64"
    return None, ""


def _normalize_address(address: str) -> IPAddress:
    return ipaddress.ip_address(address.split("%", 1)[0]) if "%" in address else ipaddress.ip_address(address)


# --------------------------------------------------------------------------- allowlist


@dataclass(frozen=True, slots=True)
class _Entry:
    text: str
    hostname: str | None = None  # normalized hostname (IDNA, lower case, no trailing dot)
    wildcard: bool = False  # "*.example.com": sub-domains of `hostname`
    network: IPNetwork | None = None
    port: int | None = None


_HOST_PORT = re.compile(r"^(?P<host>[^:\[\]]+):(?P<port>\d+)$")
_BRACKETED = re.compile(r"^\[(?P<host>[^\]]+)\](?::(?P<port>\d+))?$")


_HOSTNAME = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)(\.(?!-)[a-z0-9_-]{1,63}(?<!-))*$")


def _normalize_hostname(host: str) -> str:
    name = host.strip().lower().rstrip(".")
    if not name.isascii():
        try:
            name = httpx.URL(f"http://{name}/").raw_host.decode("ascii")
        except (httpx.InvalidURL, UnicodeError) as exc:
            raise ValueError(str(exc)) from exc
    if not _HOSTNAME.match(name):
        raise ValueError("invalid host name")
    return name


def _parse_port(text: str | None) -> int | None:
    if text is None:
        return None
    port = int(text)
    if not 0 < port < 65536:
        raise ValueError(f"port {port} out of range")
    return port


def _parse_entry(raw: str) -> _Entry:
    text = raw.strip()
    try:
        if "://" in text:  # a pasted URL: keep its host and explicit port
            url = httpx.URL(text)
            host, port = url.host, url.port
        else:
            if "/" in text:
                return _Entry(text, network=ipaddress.ip_network(text, strict=False))
            try:
                return _Entry(text, network=ipaddress.ip_network(text))
            except ValueError:
                pass
            m = _BRACKETED.match(text) or _HOST_PORT.match(text)
            host, port = (m["host"], _parse_port(m["port"])) if m else (text, None)
        if not host:
            raise ValueError("no host")
        try:
            addr = _normalize_address(host)
        except ValueError:
            pass
        else:
            return _Entry(text, network=ipaddress.ip_network(addr), port=port)
        wildcard = host.startswith("*.")
        hostname = _normalize_hostname(host[2:] if wildcard else host)
        return _Entry(text, hostname=hostname, wildcard=wildcard, port=port)
    except (ValueError, httpx.InvalidURL) as exc:
        raise InvalidAllowlistError(
            f"{ALLOW_ENV} entry {raw.strip()!r} is not a hostname, host:port, IP address or CIDR network ({exc})"
        ) from exc


class Allowlist(Sequence[str]):
    """Parsed allowlist entries (a sequence of the entry strings). Invalid entries raise
    InvalidAllowlistError (a ValueError)."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self._entries = tuple(_parse_entry(e) for e in entries if e and e.strip())

    @classmethod
    def coerce(cls, allow: Allowlist | Iterable[str] | None) -> Allowlist:
        """`allow` as an Allowlist; None means "read PLAIT_HTTP_ALLOW"."""
        if allow is None:
            return allowlist_from_env()
        if isinstance(allow, Allowlist):
            return allow
        if isinstance(allow, str):
            return cls(allow.split(","))
        return cls(allow)

    @property
    def key(self) -> tuple[str, ...]:
        """A hashable identity (for caching clients per allowlist)."""
        return tuple(e.text for e in self._entries)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self.key[index]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.key)

    def __repr__(self) -> str:
        return f"Allowlist({list(self.key)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Allowlist) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def allows_host(self, host: str, port: int | None = None) -> bool:
        """True when a hostname entry trusts `host` (on `port`)."""
        name = host.lower().rstrip(".")
        for e in self._entries:
            if e.hostname is None or (e.port is not None and e.port != port):
                continue
            if name == e.hostname if not e.wildcard else name.endswith("." + e.hostname):
                return True
        return False

    def allows_address(self, address: IPAddress | str, port: int | None = None) -> bool:
        """True when an address/network entry trusts `address` (on `port`)."""
        addr = _normalize_address(address) if isinstance(address, str) else address
        candidates: list[IPAddress] = [addr]
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            candidates.append(addr.ipv4_mapped)
        for e in self._entries:
            if e.network is None or (e.port is not None and e.port != port):
                continue
            if any(a.version == e.network.version and a in e.network for a in candidates):
                return True
        return False


def allowlist_from_env(environ: Mapping[str, str] | None = None) -> Allowlist:
    """The allowlist in ``PLAIT_HTTP_ALLOW`` (comma-separated); InvalidAllowlistError names a bad entry."""
    env = os.environ if environ is None else environ
    return Allowlist(env.get(ALLOW_ENV, "").split(","))


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True, slots=True)
class _Target:
    scheme: str
    host: str  # as sent to DNS: IDNA-encoded, brackets removed for IPv6
    port: int


def _target(url: str | httpx.URL) -> _Target:
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError, UnicodeError) as exc:
        raise BlockedURLError(f"invalid URL {str(url)[:200]!r}: {exc}", reason="invalid") from exc
    scheme = parsed.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        shown = f"{scheme}://" if scheme else "a URL without a scheme"
        raise BlockedURLError(
            f"blocked request to {shown}: only http:// and https:// URLs are allowed",
            reason="scheme",
        )
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise BlockedURLError(f"invalid URL {str(url)[:200]!r}: it has no host", reason="invalid")
    return _Target(scheme, host, parsed.port or DEFAULT_PORTS[scheme])


def _literal(host: str) -> IPAddress | None:
    try:
        return _normalize_address(host)
    except ValueError:
        return None


def _addresses(infos: Iterable[tuple[Any, ...]]) -> list[IPAddress]:
    seen: dict[IPAddress, None] = {}
    for info in infos:
        seen.setdefault(_normalize_address(str(info[4][0])), None)
    return list(seen)


def resolve(host: str, port: int) -> list[IPAddress]:
    """All addresses of `host` (blocking; raises OSError when the name does not resolve)."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    return _addresses(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))


async def aresolve(host: str, port: int) -> list[IPAddress]:
    """All addresses of `host` without blocking the event loop."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    return _addresses(await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM))


def check_addresses(
    host: str, port: int, addresses: Sequence[IPAddress], allow: Allowlist
) -> list[IPAddress]:
    """Return the addresses if every one of them may be contacted, else raise BlockedURLError."""
    if not addresses:
        raise BlockedURLError(f"{host} did not resolve to any address", host=host, reason="unresolvable")
    if allow.allows_host(host, port):
        return list(addresses)
    for addr in addresses:
        reason = blocked_reason(addr)
        if reason is None or allow.allows_address(addr, port):
            continue
        literal = _literal(host)
        shown = f"[{host}]:{port}" if literal is not None and literal.version == 6 else f"{host}:{port}"
        where = f"{addr} is" if literal is not None else f"it resolves to {addr}, which is"
        article = "an" if reason[0] in "aeiouAEIOU" else "a"
        raise BlockedURLError(
            f"blocked request to {shown}: {where} {article} {reason} (internal addresses are refused "
            f"to prevent SSRF); {_FIX} (e.g. {ALLOW_ENV}={host})",
            host=host,
            address=str(addr),
            reason=reason,
        )
    return list(addresses)


async def aresolve_checked(host: str, port: int, allow: Allowlist) -> list[IPAddress]:
    """Resolve `host` and return its addresses if every one may be contacted (BlockedURLError
    otherwise; OSError when the name does not resolve): the check `GuardedNetworkBackend` makes
    before it connects, for code that connects itself to the returned addresses (the sandbox's
    egress proxy, `plait.net.egress`), so the checked address is the one used."""
    return check_addresses(host, port, await aresolve(host, port), allow)


def _resolution_failed(host: str, exc: OSError) -> BlockedURLError:
    return BlockedURLError(
        f"cannot check {host}: it does not resolve ({exc}); check the host name",
        host=host,
        reason="unresolvable",
    )


def check_url(url: str | httpx.URL, allow: Sequence[str] | None = None) -> None:
    """Raise BlockedURLError unless `url` is http(s) and its host may be contacted.

    `allow`: allowlist entries (an `Allowlist` or strings); None reads ``PLAIT_HTTP_ALLOW``.
    Resolves the host (blocking; literal IPs are not looked up) and checks every address; it never
    connects. A host that does not resolve is refused too (fail closed).
    """
    allowlist = Allowlist.coerce(allow)
    t = _target(url)
    if allowlist.allows_host(t.host, t.port):
        return
    try:
        addresses = resolve(t.host, t.port)
    except OSError as exc:
        raise _resolution_failed(t.host, exc) from exc
    check_addresses(t.host, t.port, addresses, allowlist)


async def acheck_url(url: str | httpx.URL, allow: Sequence[str] | None = None) -> list[IPAddress]:
    """`check_url` for async code (DNS off the event loop); returns the checked addresses."""
    allowlist = Allowlist.coerce(allow)
    t = _target(url)
    try:
        addresses = await aresolve(t.host, t.port)
    except OSError as exc:
        if allowlist.allows_host(t.host, t.port):
            return []
        raise _resolution_failed(t.host, exc) from exc
    return check_addresses(t.host, t.port, addresses, allowlist)


# --------------------------------------------------------------------------- httpx integration


@functools.cache
def guarded_backend_class(core: ModuleType) -> type[Any]:
    """The guarded network backend for an httpcore-compatible module: `httpcore` (httpx) or
    `httpcore2` (httpx2, which the `mcp`, `openai` and `anthropic` SDKs use). One definition, so
    both HTTP stacks enforce the same policy the same way."""

    class Backend(core.AsyncNetworkBackend):  # type: ignore[name-defined,misc]
        """Network backend that resolves, checks and then connects to the checked address (pinned)."""

        def __init__(self, allow: Allowlist, inner: Any = None) -> None:
            self.allow = allow
            self._inner = inner if inner is not None else core.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> Any:
            try:
                with anyio.fail_after(timeout):
                    addresses = await aresolve(host, port)
            except TimeoutError as exc:
                raise core.ConnectTimeout(f"resolving {host} timed out") from exc
            except OSError as exc:
                raise core.ConnectError(f"could not resolve host {host!r}: {exc}") from exc
            last: Exception | None = None
            for addr in check_addresses(host, port, addresses, self.allow):
                try:
                    return await self._inner.connect_tcp(
                        str(addr),
                        port,
                        timeout=timeout,
                        local_address=local_address,
                        socket_options=socket_options,
                    )
                except (core.ConnectError, core.ConnectTimeout) as exc:
                    last = exc
            assert last is not None
            raise last

        async def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
        ) -> Any:
            raise BlockedURLError("blocked request: unix sockets are not allowed", reason="scheme")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    suffix = "" if core is httpcore else f"_{core.__name__}"
    Backend.__name__ = Backend.__qualname__ = f"GuardedNetworkBackend{suffix}"
    Backend.__module__ = __name__
    return Backend


GuardedNetworkBackend = guarded_backend_class(httpcore)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """An httpx transport whose every request and connection passes the SSRF guard.

    `allow`: allowlist entries; None reads ``PLAIT_HTTP_ALLOW`` once, now.
    """

    def __init__(
        self,
        allow: Sequence[str] | None = None,
        *,
        verify: Any = True,
        cert: Any = None,
        http2: bool = False,
        limits: httpx.Limits = httpx.Limits(max_connections=100, max_keepalive_connections=20),
    ) -> None:
        self.allowlist = Allowlist.coerce(allow)
        ssl_context = httpx.create_ssl_context(verify=verify, cert=cert)
        super().__init__(verify=ssl_context, http2=http2, limits=limits, trust_env=False)
        # Replace httpx's pool by one using the guarded backend (same parameters as httpx's own).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=GuardedNetworkBackend(self.allowlist),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        _target(request.url)  # scheme and host; addresses are checked when connecting
        return await super().handle_async_request(request)


def _no_cookies() -> CookieJar:
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def guarded_client(
    allow: Sequence[str] | None = None,
    *,
    timeout: float | httpx.Timeout = 30.0,
    headers: Mapping[str, str] | None = None,
) -> httpx.AsyncClient:
    """An AsyncClient for untrusted URLs: guarded transport, no env proxies, no cookie jar,
    no automatic redirects (use `send_with_redirects`). The caller closes it (`aclose`)."""
    return httpx.AsyncClient(
        transport=GuardedTransport(allow),
        follow_redirects=False,
        trust_env=False,
        cookies=_no_cookies(),
        timeout=timeout,
        headers={"user-agent": "plait", **(headers or {})},
    )


async def send_with_redirects(
    client: httpx.AsyncClient, request: httpx.Request, *, max_redirects: int = MAX_REDIRECTS
) -> httpx.Response:
    """Send `request` (streaming) and follow up to `max_redirects` redirects, each one a new guarded
    request; a redirect to another origin drops the credential headers (`X-Api-Key`, `Cookie`...,
    see plait.net.redact). Redirect bodies are never read. The caller must close the returned
    response."""
    _target(request.url)
    response = await client.send(request, stream=True, follow_redirects=False)
    history: list[httpx.Response] = []
    while response.next_request is not None:
        next_request = response.next_request
        strip_cross_origin_credentials(response.request, next_request)
        await response.aclose()
        history.append(response)
        if len(history) > max_redirects:
            raise httpx.TooManyRedirects(f"more than {max_redirects} redirects", request=next_request)
        _target(next_request.url)
        response = await client.send(next_request, stream=True, follow_redirects=False)
    response.history = history
    return response
