"""The built UI's JavaScript stays within its budget: 600 kB gzipped (all chunks)."""

from __future__ import annotations

import gzip

from .conftest import WEB_DIST, require_browser_setup

BUDGET_BYTES = 600 * 1024


def test_built_javascript_is_at_most_600_kb_gzipped() -> None:
    if not (WEB_DIST / "index.html").is_file():
        require_browser_setup()  # skips locally / fails in CI, saying how to build
    scripts = sorted(p for p in WEB_DIST.rglob("*") if p.suffix in (".js", ".mjs"))
    assert scripts, f"no JavaScript in {WEB_DIST}"
    total = sum(len(gzip.compress(p.read_bytes(), compresslevel=9)) for p in scripts)
    print(f"\n  built JavaScript: {total / 1024:.1f} kB gzipped in {len(scripts)} files")
    assert total <= BUDGET_BYTES, f"{total / 1024:.1f} kB gzipped, over the 600 kB budget"


def test_the_index_loads_hashed_assets() -> None:
    if not (WEB_DIST / "index.html").is_file():
        require_browser_setup()
    index = (WEB_DIST / "index.html").read_text()
    assert '<div id="root">' in index or "<div id=root>" in index
    assert "/assets/" in index  # the immutable, content-hashed files the server caches for a year
