"""The web UI at `/`: the build with an SPA fallback and cache headers, or a page saying how to
build it; server paths stay JSON."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from plait.api import create_app
from plait.service import Settings

INDEX = (
    "<!doctype html><html><body><div id=root></div><script src=/assets/app-1a2b.js></script></body></html>"
)


async def _client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://test") as c,
    ):
        yield c


@pytest.fixture
def built(tmp_path: Path) -> Path:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text(INDEX)
    (dist / "assets" / "app-1a2b.js").write_text("console.log('plait')")
    (dist / "favicon.svg").write_text("<svg/>")
    (tmp_path / "secret.txt").write_text("outside the build")
    return dist


@pytest.fixture
async def ui(built: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    monkeypatch.setenv("PLAIT_WEB_DIR", str(built))
    async for c in _client(settings):
        yield c


async def test_index_and_client_routes_get_the_app(ui: httpx.AsyncClient) -> None:
    for path in ("/", "/flows/support-bot", "/flows/examples.hello", "/tasks/abc_DEF-123", "/runs/x/y"):
        r = await ui.get(path)
        assert r.status_code == 200, path
        assert r.text == INDEX and r.headers["content-type"].startswith("text/html")
        assert r.headers["cache-control"] == "no-cache"
    assert (await ui.head("/")).status_code == 200


async def test_assets_are_cached_and_missing_files_are_404(ui: httpx.AsyncClient) -> None:
    r = await ui.get("/assets/app-1a2b.js")
    assert r.status_code == 200 and r.text == "console.log('plait')"
    assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert "javascript" in r.headers["content-type"]
    r = await ui.get("/favicon.svg")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-cache"
    for path in ("/assets/gone-0000.js", "/missing.css", "/robots.txt"):
        r = await ui.get(path)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path


async def test_paths_outside_the_build_are_not_served(ui: httpx.AsyncClient) -> None:
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/assets/..%2f..%2fsecret.txt"):
        r = await ui.get(path)
        assert "outside the build" not in r.text, path


async def test_server_paths_are_untouched(ui: httpx.AsyncClient) -> None:
    assert (await ui.get("/healthz")).json()["status"] == "ok"
    assert "swagger" in (await ui.get("/docs")).text.lower()
    assert (await ui.get("/openapi.json")).json()["info"]["title"] == "plait"
    r = await ui.get("/api/v1/no-such-thing")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = await ui.get("/api/v1/flows")
    assert r.status_code == 401  # the UI never bypasses the key
    schema = (await ui.get("/openapi.json")).json()
    assert "/" not in schema["paths"]


async def test_without_a_build_the_page_says_how_to_build_it(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIT_WEB_DIR", str(tmp_path / "nothing-here"))
    async for c in _client(settings):
        for path in ("/", "/flows/x"):
            r = await c.get(path)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
            assert "make run" in r.text and "npm ci" in r.text and "npm run build" in r.text
        assert (await c.get("/api/v1/nope")).status_code == 404
        assert (await c.get("/healthz")).status_code == 200
