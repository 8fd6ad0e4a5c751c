"""SSRF guard: address policy, allowlist, and the httpx transport against a real loopback server.

Blocked ranges are tested with `check_url` on literal addresses (no lookup, no connection); the only
connections made go to a server on 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from plait.net import guard
from plait.net.guard import (
    Allowlist,
    BlockedURLError,
    acheck_url,
    allowlist_from_env,
    blocked_reason,
    check_url,
    guarded_client,
    send_with_redirects,
)


@pytest.fixture(autouse=True)
def no_env_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLAIT_HTTP_ALLOW", raising=False)


# --------------------------------------------------------------------------- address policy

BLOCKED = [
    ("http://10.0.0.1/", "10.0.0.1", "private"),
    ("http://10.255.255.254:8080/x", "10.255.255.254", "private"),
    ("http://172.16.0.1/", "172.16.0.1", "private"),
    ("http://172.31.255.1/", "172.31.255.1", "private"),
    ("http://192.168.1.1/", "192.168.1.1", "private"),
    ("http://127.0.0.1/", "127.0.0.1", "loopback"),
    ("http://127.8.9.10/", "127.8.9.10", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254", "link-local"),
    ("http://[::1]/", "::1", "loopback"),
    ("http://[fc00::1]/", "fc00::1", "private"),
    ("http://[fd12:3456::1]:8443/", "fd12:3456::1", "private"),
    ("http://[fe80::1]/", "fe80::1", "link-local"),
    ("http://100.64.0.1/", "100.64.0.1", "carrier-grade NAT"),
    ("http://100.127.255.254/", "100.127.255.254", "carrier-grade NAT"),
    ("http://0.0.0.0/", "0.0.0.0", "unspecified"),
    ("http://[::]/", "::", "unspecified"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1", "IPv4-mapped loopback"),
    ("http://[::ffff:10.0.0.1]/", "::ffff:a00:1", "IPv4-mapped private"),
    ("http://224.0.0.1/", "224.0.0.1", "multicast"),
    ("http://[ff02::1]/", "ff02::1", "multicast"),
    ("http://240.0.0.1/", "240.0.0.1", "reserved"),
    ("http://0.1.2.3/", "0.1.2.3", "private"),
    ("https://192.0.2.10/", "192.0.2.10", ""),  # documentation range
    ("http://[2002:a00:1::]/", "2002:a00:1::", "6to4 private"),
    ("http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe", "NAT64 link-local"),
]


@pytest.mark.parametrize(("url", "address", "reason"), BLOCKED)
def test_internal_addresses_are_blocked(url: str, address: str, reason: str) -> None:
    with pytest.raises(BlockedURLError) as info:
        check_url(url)
    err = info.value
    assert err.address == address and reason in (err.reason or "")
    host = httpx.URL(url).host
    assert host in err.message and address in err.message
    assert "add it to PLAIT_HTTP_ALLOW" in err.message
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(
    "url",
    [
        "http://8.8.8.8/",
        "https://1.1.1.1:8443/path?q=1",
        "http://[2606:4700:4700::1111]/",
        "http://[::ffff:8.8.8.8]/",
        "http://[64:ff9b::808:808]/",  # NAT64 of a public address
        "http://100.128.0.1/",  # just above 100.64.0.0/10
        "http://172.32.0.1/",  # just above 172.16.0.0/12
    ],
)
def test_public_addresses_pass(url: str) -> None:
    check_url(url)  # literal addresses: no lookup, no connection


def test_blocked_reason() -> None:
    assert blocked_reason("127.0.0.1") == "loopback address"
    assert blocked_reason(ipaddress.ip_address("8.8.4.4")) is None
    assert blocked_reason("::ffff:192.168.0.1") == "IPv4-mapped private address (192.168.0.1)"


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "gopher://example.com:70/_x", "ftp://example.com/", "example.com/x", "//h/x"],
)
def test_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(BlockedURLError, match="only http:// and https://"):
        check_url(url, allow=["example.com", "h"])


@pytest.mark.parametrize("url", ["http:///path", "http://[::1/", "http://:80/"])
def test_invalid_urls_are_refused(url: str) -> None:
    with pytest.raises(BlockedURLError):
        check_url(url)


def test_hostnames_are_resolved_and_every_address_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_resolve(host: str, port: int) -> list[Any]:
        assert (host, port) == ("api.example.com", 443)
        return [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("10.0.0.5")]

    monkeypatch.setattr(guard, "resolve", fake_resolve)
    with pytest.raises(BlockedURLError) as info:
        check_url("https://api.example.com/v1")
    assert info.value.message.startswith(
        "blocked request to api.example.com:443: it resolves to 10.0.0.5, which is a private address"
    )
    assert "PLAIT_HTTP_ALLOW=api.example.com" in info.value.message
    check_url("https://api.example.com/v1", allow=["10.0.0.0/24"])
    check_url("https://api.example.com/v1", allow=["api.example.com"])


def test_unresolvable_names_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(host: str, port: int) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(guard, "resolve", fail)
    with pytest.raises(BlockedURLError, match="does not resolve"):
        check_url("http://nowhere.example/")


def test_localhost_is_blocked() -> None:
    with pytest.raises(BlockedURLError, match="localhost:8080: it resolves to .*loopback"):
        check_url("http://localhost:8080/")


# --------------------------------------------------------------------------- allowlist


def test_allow_by_hostname() -> None:
    check_url("http://localhost:8080/", allow=["localhost"])
    check_url("http://LOCALHOST./", allow=["localhost"])
    with pytest.raises(BlockedURLError):
        check_url("http://127.0.0.1:8080/", allow=["localhost"])  # the name does not allow the address


def test_allow_by_ip_and_cidr() -> None:
    check_url("http://127.0.0.1:8080/", allow=["127.0.0.1"])
    check_url("http://127.1.2.3/", allow=["127.0.0.0/8"])
    check_url("http://10.1.2.3/", allow=["10.0.0.0/8"])
    check_url("http://[fd00::5]/", allow=["fc00::/7"])
    check_url("http://[::1]:9000/", allow=["::1"])
    check_url("http://[::ffff:127.0.0.1]/", allow=["127.0.0.1"])  # IPv4-mapped matches the IPv4 entry
    with pytest.raises(BlockedURLError):
        check_url("http://10.1.2.3/", allow=["10.0.0.0/16"])
    with pytest.raises(BlockedURLError):
        check_url("http://127.0.0.2/", allow=["127.0.0.1"])


def test_allow_with_port() -> None:
    check_url("http://127.0.0.1:8080/", allow=["127.0.0.1:8080"])
    check_url("http://[::1]:8080/", allow=["[::1]:8080"])
    check_url("http://localhost:8080/", allow=["localhost:8080"])
    check_url("http://127.0.0.1/", allow=["127.0.0.1:80"])  # default port
    check_url("https://127.0.0.1/", allow=["127.0.0.1:443"])
    for url in ("http://127.0.0.1:8081/", "http://127.0.0.1/", "http://localhost:9/"):
        with pytest.raises(BlockedURLError):
            check_url(url, allow=["127.0.0.1:8080", "localhost:8080"])


def test_allow_wildcard_subdomains(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "resolve", lambda host, port: [ipaddress.ip_address("10.9.9.9")])
    allow = Allowlist(["*.corp.example"])
    assert allow.allows_host("api.corp.example") and allow.allows_host("a.b.corp.example")
    assert not allow.allows_host("corp.example") and not allow.allows_host("evilcorp.example")
    check_url("https://api.corp.example/", allow=allow)
    with pytest.raises(BlockedURLError):
        check_url("https://evilcorp.example/", allow=allow)


def test_allowlist_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert list(allowlist_from_env()) == []
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", " 127.0.0.0/8, localhost:8080 ,, api.internal,[::1]:9000 ")
    allow = allowlist_from_env()
    assert list(allow) == ["127.0.0.0/8", "localhost:8080", "api.internal", "[::1]:9000"]
    assert allow.allows_address("127.0.0.9", 1) and not allow.allows_address("10.0.0.1", 1)
    assert allow.allows_host("api.internal", 1) and allow.allows_host("localhost", 8080)
    assert not allow.allows_host("localhost", 8081)
    check_url("http://127.0.0.1:5/")  # allow=None reads the environment
    assert allowlist_from_env({"PLAIT_HTTP_ALLOW": "10.0.0.1"}).allows_address("10.0.0.1")


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "exa mple.com", "*", "host:99999", "a/b", "-bad.com"])
def test_invalid_allowlist_entries(entry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"localhost,{entry}")
    with pytest.raises(ValueError, match="PLAIT_HTTP_ALLOW entry") as info:
        allowlist_from_env()
    assert entry in str(info.value)


# --------------------------------------------------------------------------- httpx transport


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits += 1  # type: ignore[attr-defined]
        if self.path.startswith("/go/"):
            self.send_response(302)
            self.send_header("Location", self.path[len("/go/") :])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"path": self.path, "host": self.headers.get("Host")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.hits = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def base(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


async def test_transport_blocks_loopback_by_default(server: ThreadingHTTPServer) -> None:
    before = server.hits  # type: ignore[attr-defined]
    async with guarded_client() as client:
        with pytest.raises(BlockedURLError, match="loopback"):
            await client.get(base(server) + "/x")
    assert server.hits == before  # type: ignore[attr-defined]


async def test_transport_allows_allowlisted(server: ThreadingHTTPServer) -> None:
    async with guarded_client(["127.0.0.1"]) as client:
        response = await client.get(base(server) + "/x")
    assert response.status_code == 200 and response.json()["path"] == "/x"


async def test_transport_refuses_other_schemes() -> None:
    async with guarded_client(["127.0.0.1"]) as client:
        with pytest.raises(BlockedURLError, match="only http"):
            await client.send(httpx.Request("GET", "gopher://127.0.0.1:70/"))


async def test_transport_pins_the_checked_address(server: ThreadingHTTPServer, monkeypatch) -> None:
    calls: list[str] = []

    async def fake_resolve(host: str, port: int) -> list[Any]:
        calls.append(host)
        return [ipaddress.ip_address("127.0.0.1")]

    monkeypatch.setattr(guard, "aresolve", fake_resolve)
    port = server.server_address[1]
    async with guarded_client(["127.0.0.1"]) as client:
        response = await client.get(f"http://rebind.example:{port}/p")
    assert calls == ["rebind.example"]
    assert response.json() == {"path": "/p", "host": f"rebind.example:{port}"}


async def test_redirects_are_rechecked(server: ThreadingHTTPServer) -> None:
    port = server.server_address[1]
    async with guarded_client([f"127.0.0.1:{port}"]) as client:
        response = await send_with_redirects(client, client.build_request("GET", base(server) + "/go//final"))
        await response.aread()
        await response.aclose()
        assert response.json()["path"] == "/final" and len(response.history) == 1
        before = server.hits  # type: ignore[attr-defined]
        request = client.build_request("GET", base(server) + f"/go/http://127.0.0.2:{port}/final")
        with pytest.raises(BlockedURLError, match=r"127\.0\.0\.2"):
            await send_with_redirects(client, request)
        assert server.hits == before + 1  # type: ignore[attr-defined]
        with pytest.raises(httpx.TooManyRedirects):
            loop = "/go" * 7 + "/end"
            await send_with_redirects(client, client.build_request("GET", base(server) + loop))


async def test_client_does_not_follow_redirects_on_its_own(server: ThreadingHTTPServer) -> None:
    async with guarded_client(["127.0.0.1"]) as client:
        response = await client.get(base(server) + "/go//final")
    assert response.status_code == 302


async def test_acheck_url(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await acheck_url("http://8.8.8.8/") == [ipaddress.ip_address("8.8.8.8")]
    with pytest.raises(BlockedURLError, match="loopback"):
        await acheck_url("http://127.0.0.1/")
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    assert await acheck_url("http://127.0.0.1/") == [ipaddress.ip_address("127.0.0.1")]
