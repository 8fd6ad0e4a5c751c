"""Serving the built web UI (`web/` builds into `plait/web_dist`) at `/`.

Client-side routes (`/flows/<id>`, `/tasks/<token>`, ...) get `index.html` (SPA fallback); files
under `assets/` carry content hashes in their names, so they are cached for a year; everything
else is revalidated. Server paths (`/api/...`, `/ws`, `/docs`, ...) are never the UI: an unknown
one stays a JSON 404. Without a build, the UI paths answer with a page that says how to build it.

The fallback is wired through the app's 404 handler rather than a catch-all route, so it does not
depend on the order in which routers are added.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response

import plait

PACKAGE_DIST = Path(plait.__file__).resolve().parent / "web_dist"
SERVER_PREFIXES = ("/api/", "/ws", "/mcp", "/metrics", "/docs", "/redoc", "/openapi.json", "/healthz")
# A missing file with one of these suffixes is a 404, not the SPA (flow ids may contain dots).
STATIC_SUFFIXES = frozenset(
    [
        "js",
        "mjs",
        "css",
        "map",
        "png",
        "jpg",
        "jpeg",
        "gif",
        "svg",
        "ico",
        "webp",
        "avif",
        "woff",
        "woff2",
        "ttf",
        "otf",
        "txt",
        "json",
        "webmanifest",
        "wasm",
    ]
)
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"

MISSING_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>plait: the web UI is not built</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem}}
code,pre{{background:#f3f3f3;padding:.1rem .3rem;border-radius:4px}}pre{{padding:.75rem}}</style>
</head><body>
<h1>The plait web UI is not built</h1>
<p>The server is running (API at <a href="/docs">/docs</a>), but there is no UI build in
<code>{where}</code>.</p>
<p>From the repository, <code>make run</code> builds it and starts the server. Or build it by hand:</p>
<pre>cd web &amp;&amp; npm ci &amp;&amp; npm run build</pre>
<p>then reload this page.</p>
</body></html>
"""


def default_dir() -> Path:
    """`PLAIT_WEB_DIR` (another build), else the build inside the package."""
    env = os.environ.get("PLAIT_WEB_DIR")
    return Path(env) if env else PACKAGE_DIST


class WebUI:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = (directory or default_dir()).resolve()

    @property
    def built(self) -> bool:
        return (self.directory / "index.html").is_file()

    @staticmethod
    def is_ui_path(path: str) -> bool:
        return not any(path == p.rstrip("/") or path.startswith(p) for p in SERVER_PREFIXES)

    def response(self, request: Request) -> Response | None:
        """The UI's answer for a GET of `request.url.path`, or None when it is not a UI path (or a
        missing asset): the caller answers 404 then."""
        path = request.url.path
        if request.method not in ("GET", "HEAD") or not self.is_ui_path(path):
            return None
        if not self.built:
            return HTMLResponse(
                MISSING_PAGE.format(where=html.escape(str(self.directory))),
                headers={"Cache-Control": REVALIDATE},
            )
        rel = path.lstrip("/")
        if rel:
            target = (self.directory / rel).resolve()
            if target.is_relative_to(self.directory) and target.is_file():
                cache = IMMUTABLE if rel.startswith("assets/") else REVALIDATE
                return FileResponse(target, headers={"Cache-Control": cache})
            if rel.startswith("assets/") or rel.rsplit(".", 1)[-1].lower() in STATIC_SUFFIXES:
                return None  # a missing file (not a client route): 404
        return FileResponse(self.directory / "index.html", headers={"Cache-Control": REVALIDATE})
