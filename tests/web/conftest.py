"""Browser tests: Python playwright driving Debian's chromium (`/usr/bin/chromium`, installed by
.ci/run) against the real server (`plait serve` as a subprocess on 127.0.0.1, a fresh SQLite
database, PLAIT_API_KEY set) serving the built UI (`make test` builds it).

The browser signs in as a person does: `plait serve` prints a one-time sign-in link on stderr;
the server fixture follows it once (with httpx) and every test page gets the resulting session
cookie (the local admin, the same user PLAIT_API_KEY acts as, so flows made through `api` show in
the browser). Tests that sign out or sign in themselves use their own server or their own login.

Locally the tests skip, saying why, when the UI build or chromium is missing; under CI (CI=true)
a missing piece is a failure, so they cannot silently not run there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from plait.api.ui import default_dir
from plait_testing import free_port

API_KEY = "browser-test-key-0123"
SESSION_COOKIE = "plait_session"
SIGNIN_LINE = re.compile(r"sign in at (http://\S+)")
CHROMIUM = os.environ.get("PLAIT_CHROMIUM", "/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "screenshots"


WEB_DIST = default_dir()  # the package's build, or PLAIT_WEB_DIR (the server gets the same)


def missing_piece() -> str | None:
    if not (WEB_DIST / "index.html").is_file():
        return f"the web UI is not built ({WEB_DIST}): run `make web-build` (or cd web && npm ci && npm run build)"
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM}: apt-get install chromium (or set PLAIT_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing: pip install -e '.[dev]'"
    return None


def require_browser_setup() -> None:
    reason = missing_piece()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run in CI: {reason}")
    pytest.skip(reason)


class LiveServer:
    admin_session: str = ""  # the local admin's session cookie (set by the live_server fixture)

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / "server.log"
        env = {
            **os.environ,
            "PLAIT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'plait.db'}",
            "PLAIT_API_KEY": API_KEY,
            "PLAIT_LEASE_TTL_S": "3",
            "PLAIT_SWEEP_INTERVAL_S": "0.2",
            "PLAIT_SSE_HEARTBEAT_S": "1",
        }
        self._log = open(self.log_path, "a")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "plait.cli.main",
                "serve",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            cwd=tmp,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        deadline = time.monotonic() + 90  # a loaded CI machine starts it slowly
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            raise AssertionError("server did not start:\n" + self.log())
        self.api = httpx.Client(base_url=self.url, headers={"x-api-key": API_KEY}, timeout=30)
        self.signin_link = self._wait_signin_link()

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def _wait_signin_link(self, timeout: float = 5) -> str:
        """The one-time link `plait serve` prints (`plait: sign in at http://...?token=...`)."""
        deadline = time.monotonic() + timeout
        while True:
            found = SIGNIN_LINE.search(self.log())
            if found:
                return found.group(1)
            if time.monotonic() > deadline:
                raise AssertionError("`plait serve` printed no sign-in link:\n" + self.log())
            time.sleep(0.05)

    def redeem(self, link: str) -> httpx.Response:
        """Follow a sign-in link as a browser's first request would (no redirect followed)."""
        return httpx.get(link, follow_redirects=False, timeout=30)

    def session_from_link(self, link: str) -> str:
        """The session cookie a sign-in link sets."""
        r = self.redeem(link)
        assert r.status_code in (302, 303, 307), (r.status_code, r.text)
        token = r.cookies.get(SESSION_COOKIE)
        assert token, f"no {SESSION_COOKIE} cookie in {r.headers}"
        return token

    def login(self, email: str, password: str) -> str:
        """The session cookie of a password sign-in."""
        r = httpx.post(
            f"{self.url}/api/v1/auth/login", json={"email": email, "password": password}, timeout=30
        )
        assert r.status_code == 200, r.text
        token = r.cookies.get(SESSION_COOKIE)
        assert token, f"no {SESSION_COOKIE} cookie in {r.headers}"
        return token

    def cookie(self, token: str) -> dict[str, Any]:
        """A playwright cookie for `context.add_cookies`."""
        return {
            "name": SESSION_COOKIE,
            "value": token,
            "url": self.url,
            "httpOnly": True,
            "sameSite": "Strict",
        }

    def create_flow(self, doc: dict[str, Any], *, publish: bool = False) -> None:
        r = self.api.post("/api/v1/flows", json={"document": doc, "name": doc.get("name")})
        assert r.status_code == 201, r.text
        if publish:
            assert self.api.post(f"/api/v1/flows/{doc['id']}/versions", json={}).status_code == 201

    def wait_run(self, run_id: str, statuses: tuple[str, ...], timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            run = self.api.get(f"/api/v1/runs/{run_id}").json()
            if run["status"] in statuses or time.monotonic() > deadline:
                assert run["status"] in statuses, run
                return run
            time.sleep(0.05)

    def stop(self) -> None:
        self.api.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


# Package scope, not session: playwright's sync API keeps an asyncio loop running on the main
# thread while it is open, and tests after this package (tests/workers) call asyncio.run.
@pytest.fixture(scope="package")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    require_browser_setup()
    server = LiveServer(Path(tmp_path_factory.mktemp("web")))
    try:
        server.admin_session = server.session_from_link(server.signin_link)
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    require_browser_setup()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, live_server: LiveServer) -> Iterator[Any]:
    """A fresh browser context signed in as the local admin; page errors fail the test."""
    pg, errors = new_page(browser, live_server, live_server.admin_session)
    yield pg
    pg.context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def new_page(browser: Any, server: LiveServer, session: str | None = None) -> tuple[Any, list[str]]:
    """A page in a new browser context (with a session cookie when given) and its uncaught errors."""
    context = browser.new_context(
        viewport={"width": 1400, "height": 900}, base_url=server.url, accept_downloads=True
    )
    if session:
        context.add_cookies([server.cookie(session)])
    context.set_default_timeout(15_000)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    return pg, errors


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path))
    return path
