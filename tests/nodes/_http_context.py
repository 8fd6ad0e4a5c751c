"""Test helpers for the http/delay nodes: a minimal NodeContext and a real loopback HTTP server."""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from plait.engine import RunServices
from plait.net.http import HttpClients

# The tests' HTTP client pool (a run's `services.http`); test_http closes it after each test.
CLIENTS = HttpClients()


class FakeContext:
    """Just enough of `NodeContext` for nodes that render templates and read their input."""

    def __init__(
        self,
        roots: Mapping[str, Any] | None = None,
        *,
        input: Any = None,
        node_id: str = "node",
        attempt: int = 1,
        services: RunServices | None = None,
    ) -> None:
        self.services = services if services is not None else RunServices(http=CLIENTS)
        self.roots = {k.lower(): v for k, v in (roots or {}).items()}
        self.run_id = "run-test"
        self.node_id = node_id
        self.attempt = attempt
        self.input = input
        self.inputs = {"in": input}
        self.vars: dict[str, Any] = dict(self.roots.get("vars", {}))
        self.tokens: list[str] = []

    def lookup(self, root: str) -> Any:
        return self.roots[root.lower()]

    def render(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        from plait.expr import render

        if not extra:
            return render(value, self.lookup)
        aliases = {k.lower(): v for k, v in extra.items()}

        def lookup(root: str) -> Any:
            return aliases[root.lower()] if root.lower() in aliases else self.lookup(root)

        return render(value, lookup)

    async def arender(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        return self.render(value, extra)

    def set_var(self, name: str, value: Any) -> None:
        self.vars[name] = value

    def interrupt(self, payload: dict[str, Any], **kwargs: Any) -> Any:
        raise NotImplementedError

    def emit_token(self, delta: str) -> None:
        self.tokens.append(delta)

    def emit_tool_call(self, name: str, args: Any) -> None:
        pass

    async def run_body(self, body: Any, *, aliases: Mapping[str, Any], inputs: Any = None) -> Any:
        raise NotImplementedError

    async def run_flow(self, ref: str, inputs: Mapping[str, Any]) -> Any:
        raise NotImplementedError


HTML_PAGE = """<!doctype html>
<html><head><title>Plait   test</title>
<style>body { color: red; }</style>
<script>var secret = "do not show";</script></head>
<body>
  <h1>Hello,
      world</h1><p>First   paragraph with <b>bold</b> text.</p><p>Second</p>
  <noscript>enable js</noscript>
  <ul><li>one</li><li>two</li></ul>
</body></html>"""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self, status: int, body: bytes | str, ctype: str = "text/plain; charset=utf-8", **headers: str
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _json(self, status: int, value: Any, **headers: str) -> None:
        self._send(status, json.dumps(value), "application/json", **headers)

    def _count(self, key: str) -> int:
        with self.server.lock:
            self.server.counters[key] += 1
            return self.server.counters[key]

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        path = parts.path
        with self.server.lock:
            self.server.hits[path] += 1
        try:
            if path == "/json":
                self._json(200, {"hello": "world", "n": 1}, X_Custom="Yes")
            elif path == "/vnd":
                self._send(200, '{"data": [1, 2]}', "application/vnd.api+json")
            elif path == "/echo":
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else None
                self._json(
                    200,
                    {
                        "method": self.command,
                        "path": path,
                        "query": parse_qs(parts.query),
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    },
                )
            elif path == "/html":
                self._send(200, HTML_PAGE, "text/html; charset=utf-8")
            elif path == "/html-latin1":
                page = '<html><head><meta charset="iso-8859-1"></head><body><p>caf\xe9</p></body></html>'
                self._send(200, page.encode("latin-1"), "text/html")
            elif path == "/text":
                self._send(200, "just   some\ntext", "text/plain")
            elif path == "/bad-json":
                self._send(200, "this is not json", "application/json")
            elif path == "/empty-json":
                self._send(200, b"", "application/json")
            elif path == "/flaky":  # HTTP 500 for the first `fails` calls per key
                n = self._count("flaky:" + q["key"])
                if n <= int(q.get("fails", "1")):
                    self._send(500, f"server error {n}")
                else:
                    self._json(200, {"attempt": n})
            elif path == "/ratelimited":  # 429 with Retry-After on the first call per key
                n = self._count("429:" + q["key"])
                if n == 1:
                    self._send(429, "slow down", Retry_After=q.get("after", "1"))
                else:
                    self._json(200, {"attempt": n})
            elif path == "/drop":  # close the connection without a response for the first `fails` calls
                n = self._count("drop:" + q["key"])
                if n <= int(q.get("fails", "1")):
                    self.close_connection = True
                    return
                self._json(200, {"attempt": n})
            elif path == "/slow":
                time.sleep(float(q.get("s", "2")))
                self._json(200, {"slow": True})
            elif path == "/status":
                code = int(q["code"])
                self._send(code, "E" * int(q.get("n", "20")) + "-tail")
            elif path == "/redirect":
                self.send_response(int(q.get("code", "302")))
                self.send_header("Location", q["to"])
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif path == "/loop":
                self.send_response(302)
                self.send_header("Location", f"/loop?i={int(q.get('i', '0')) + 1}")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif path == "/huge":  # n bytes with a Content-Length header
                self._send(200, b"x" * int(q["n"]), "application/octet-stream")
            elif path == "/huge-stream":  # n bytes, no Content-Length (ends when the connection closes)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                chunk = b"y" * 65536
                remaining = int(q["n"])
                while remaining > 0:
                    self.wfile.write(chunk[: min(remaining, len(chunk))])
                    remaining -= len(chunk)
            elif path == "/gzip":  # small on the wire, n bytes once decompressed
                data = gzip.compress(b"z" * int(q["n"]))
                self._send(200, data, "text/plain", Content_Encoding="gzip")
            elif path == "/cookie":
                self._json(200, {"cookie": self.headers.get("Cookie")}, Set_Cookie="sid=secret; Path=/")
            else:
                self._send(404, "not found")
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.counters: Counter[str] = Counter()
        self.hits: Counter[str] = Counter()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out and disconnect are expected


class LocalServer:
    """A real HTTP server on 127.0.0.1 (ephemeral port), run in a daemon thread."""

    def __init__(self) -> None:
        self.httpd = _Server()
        self.port: int = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def hits(self) -> Counter[str]:
        return self.httpd.hits

    def url(self, path: str) -> str:
        return self.base + path

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
