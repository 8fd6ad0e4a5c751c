"""The egress proxy of sandboxed user code: every connection it makes passes the SSRF guard.

Why: a `code` or `component` node with ``network: true`` used to share the host's network, so
user code could reach the server's own port, cloud metadata and private ranges, which the `http`
node refuses. Now the sandbox runner's only way out is this proxy (the sandbox supervisor relays
each connection to it, see ``plait/sandbox/relay.py``), and the proxy applies the same policy as
the `http` node: ``plait.net.guard`` with ``PLAIT_HTTP_ALLOW``, the destination resolved here,
every address checked, and the connection made to the checked address (no second lookup, so no
DNS rebinding between check and connect).

Protocol: a plain HTTP proxy, what ``HTTP_PROXY``/``HTTPS_PROXY`` mean to every client (httpx,
requests, urllib, pip):

* ``CONNECT host:port`` opens a tunnel (HTTPS, or any TCP protocol) to a checked address;
* an absolute-form request (``GET http://host/path HTTP/1.1``) is sent to the checked address in
  origin form with ``Connection: close`` (one request per connection, so a kept-alive connection
  can never carry a request for another host);
* a refused destination gets ``403`` whose reason phrase carries the guard's message (clients
  show it: ``ProxyError: 403 blocked by plait's egress guard: ... loopback address ...``).

Connections arrive as file descriptors (``SCM_RIGHTS``) on a unix socket in a private 0700
directory: a sandbox supervisor connects once per call and passes every connection its runner
opens. The proxy runs on its own event loop in a daemon thread, so it serves callers on any
event loop; `egress_proxy()` starts the process-wide one on first use.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ipaddress
import os
import re
import shutil
import socket
import tempfile
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from plait.net.guard import (
    Allowlist,
    BlockedURLError,
    InvalidAllowlistError,
    allowlist_from_env,
    aresolve_checked,
)

MAX_HEAD_BYTES = 64 * 1024  # request line and headers
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0
LINGER_S = 30.0  # after the client stops sending, how long the answer may still flow
MAX_CONNECTIONS = 512  # open client connections over all calls; more are closed at once
CHUNK = 64 * 1024
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te"}
)
_AUTHORITY = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9._-]+)):(?P<port>\d{1,5})$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9._-]+$")


class _Refusal(Exception):
    """An answer to send instead of forwarding: status, reason and a one-line message."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """A parsed proxy request: where to connect and, for plain HTTP, the head to send there."""

    method: str
    host: str
    port: int
    head: bytes | None  # None for CONNECT (a tunnel: nothing is sent before the client's bytes)


def _port(text: str) -> int:
    port = int(text)
    if not 0 < port < 65536:
        raise _Refusal(400, "Bad Request", f"port {port} is out of range")
    return port


def _host(host: str) -> str:
    if ":" in host:
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise _Refusal(400, "Bad Request", f"invalid IPv6 address {host!r}") from None
    if not _HOSTNAME.match(host):
        raise _Refusal(400, "Bad Request", f"invalid host name {host[:100]!r}")
    return host.lower().rstrip(".")


def parse_request(head: bytes) -> ProxyRequest:
    """Parse a request head (up to and including the blank line); raises _Refusal."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _Refusal(400, "Bad Request", "not an HTTP/1.x proxy request")
    method, target, version = parts
    if method == "CONNECT":
        m = _AUTHORITY.match(target)
        if not m:
            raise _Refusal(400, "Bad Request", f"CONNECT needs host:port, got {target[:100]!r}")
        return ProxyRequest(method, _host(m["v6"] or m["host"]), _port(m["port"]), None)
    if not target.lower().startswith("http://"):
        raise _Refusal(
            400,
            "Bad Request",
            "this proxy takes absolute http:// URLs and CONNECT host:port (for https://)",
        )
    try:
        url = urlsplit(target)
        host, port = url.hostname, url.port or 80
    except ValueError as exc:
        raise _Refusal(400, "Bad Request", f"invalid URL: {exc}") from None
    if not host:
        raise _Refusal(400, "Bad Request", "the URL has no host")
    host = _host(host)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = [line for line in lines[1:] if line]
    kept = [line for line in headers if line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP]
    if not any(line.split(":", 1)[0].strip().lower() == "host" for line in kept):
        shown = f"[{host}]" if ":" in host else host
        kept.insert(0, f"Host: {shown}" + (f":{port}" if port != 80 else ""))
    kept.append("Connection: close")
    out = "\r\n".join([f"{method} {path} {version}", *kept]) + "\r\n\r\n"
    return ProxyRequest(method, host, _port(str(port)), out.encode("latin-1"))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _reason_phrase(text: str) -> str:
    """`text` as an HTTP reason phrase: printable ASCII on one line, at most 400 characters."""
    clean = "".join(c if 32 <= ord(c) < 127 else "?" for c in text)
    return clean[:400]


async def _respond(writer: asyncio.StreamWriter, refusal: _Refusal, kind: str) -> None:
    body = (refusal.message + "\n").encode("utf-8", "replace")
    reason = _reason_phrase(f"{refusal.reason}: {refusal.message}")
    head = (
        f"HTTP/1.1 {refusal.status} {reason}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"X-Plait-Egress: {kind}\r\n"
        "Connection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError, TimeoutError):
        writer.write(head.encode("latin-1") + body)
        async with asyncio.timeout(5):
            await writer.drain()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):
        async with asyncio.timeout(1):
            await writer.wait_closed()


class EgressProxy:
    """The guarded HTTP proxy (see the module docstring). `allow`: allowlist entries; None reads
    ``PLAIT_HTTP_ALLOW`` for every connection (so a changed setting applies at once)."""

    def __init__(self, allow: Sequence[str] | None = None) -> None:
        self._allow = None if allow is None else Allowlist.coerce(allow)
        self.pid = os.getpid()
        self._dir = tempfile.mkdtemp(prefix="plait-egress-")
        self.socket_path = os.path.join(self._dir, "proxy.sock")
        self._listener: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.active = 0
        self.allowed = 0  # connections forwarded (tests and operators read these)
        self.blocked = 0  # destinations the guard refused

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> EgressProxy:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.socket_path)
            listener.listen(128)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        self._listener = listener
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="plait-egress", daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.pid == os.getpid()

    def close(self) -> None:
        if self.pid != os.getpid():
            return  # a forked copy: the proxy, its thread and its directory belong to the parent
        loop, stopped = self._loop, self._stopped
        if loop is not None and stopped is not None and self._thread is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopped.set)
            self._thread.join(5)
        if self._listener is not None:
            self._listener.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(ready))
        finally:
            loop.close()

    async def _main(self, ready: threading.Event) -> None:
        self._stopped = asyncio.Event()
        accept = asyncio.create_task(self._accept())
        ready.set()
        await self._stopped.wait()
        accept.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(accept, *self._tasks, return_exceptions=True)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ control connections
    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._listener is not None
        while True:
            try:
                control, _ = await loop.sock_accept(self._listener)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            control.setblocking(False)
            self._spawn(self._control(control))

    async def _control(self, control: socket.socket) -> None:
        """Read connections (fds) a sandbox supervisor passes, until it hangs up."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                readable: asyncio.Future[None] = loop.create_future()
                loop.add_reader(control.fileno(), _resolve, readable)
                try:
                    await readable
                finally:
                    loop.remove_reader(control.fileno())
                try:
                    data, fds, _flags, _addr = socket.recv_fds(control, 64, 16)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    return
                for fd in fds:
                    self._client_fd(fd)
                if not data and not fds:
                    return
        finally:
            control.close()

    def _client_fd(self, fd: int) -> None:
        try:
            sock = socket.socket(fileno=fd)
        except OSError:
            os.close(fd)
            return
        if sock.type != socket.SOCK_STREAM or self.active >= MAX_CONNECTIONS:
            sock.close()
            return
        self._spawn(self._client(sock))

    # ------------------------------------------------------------------ one client connection
    async def _client(self, sock: socket.socket) -> None:
        self.active += 1
        writer: asyncio.StreamWriter | None = None
        upstream: asyncio.StreamWriter | None = None
        try:
            sock.setblocking(False)
            reader, writer = await asyncio.open_connection(sock=sock, limit=MAX_HEAD_BYTES)
            try:
                async with asyncio.timeout(HEAD_TIMEOUT_S):
                    head = await reader.readuntil(b"\r\n\r\n")
                request = parse_request(head)
                up_reader, upstream = await self._connect(request)
            except _Refusal as refusal:
                await _respond(writer, refusal, "blocked" if refusal.status == 403 else "error")
                return
            except asyncio.LimitOverrunError:
                await _respond(
                    writer, _Refusal(431, "Request Header Fields Too Large", "head too large"), "error"
                )
                return
            except (asyncio.IncompleteReadError, TimeoutError, OSError):
                return
            if request.head is None:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.write(request.head)
            await self._pipe(reader, writer, up_reader, upstream)
        finally:
            self.active -= 1
            for w in (upstream, writer):
                if w is not None:
                    await _close(w)
            if writer is None:
                sock.close()

    async def _connect(self, request: ProxyRequest) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Resolve, check and connect to a checked address; raises _Refusal."""
        where = f"{request.host}:{request.port}"
        try:
            allow = self._allow if self._allow is not None else allowlist_from_env()
        except InvalidAllowlistError as exc:
            raise _Refusal(502, "Bad Gateway", f"the server's allowlist is invalid: {exc}") from None
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                addresses = await aresolve_checked(request.host, request.port, allow)
                last: OSError | None = None
                for address in addresses:
                    try:
                        opened = await asyncio.open_connection(str(address), request.port)
                    except OSError as exc:
                        last = exc
                        continue
                    self.allowed += 1
                    return opened
        except BlockedURLError as exc:
            self.blocked += 1
            raise _Refusal(403, "Forbidden", f"blocked by plait's egress guard: {exc}") from None
        except TimeoutError:
            raise _Refusal(504, "Gateway Timeout", f"connecting to {where} timed out") from None
        except OSError as exc:
            raise _Refusal(502, "Bad Gateway", f"cannot reach {where}: {exc}") from None
        raise _Refusal(502, "Bad Gateway", f"cannot reach {where}: {last}")

    @staticmethod
    async def _pipe(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        upstream: asyncio.StreamWriter,
    ) -> None:
        up = asyncio.create_task(_copy(reader, upstream))
        down = asyncio.create_task(_copy(up_reader, writer))
        try:
            done, _ = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            if down not in done:
                await asyncio.wait({down}, timeout=LINGER_S)
        finally:
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)


_proxy: EgressProxy | None = None
_proxy_lock = threading.Lock()


def egress_proxy() -> EgressProxy:
    """The process-wide egress proxy, started on first use (again after a fork) and closed at exit."""
    global _proxy
    with _proxy_lock:
        if _proxy is None or not _proxy.alive():
            _proxy = EgressProxy().start()
            atexit.register(_proxy.close)
        return _proxy


__all__ = ["EgressProxy", "ProxyRequest", "egress_proxy", "parse_request"]
