"""The built UI's JavaScript stays within its budget: 600 kB gzipped (all chunks)."""

from __future__ import annotations

import gzip

import pytest

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


@pytest.mark.parametrize("name", ["index.html"])
def test_the_build_has_an_index(name: str) -> None:
    if not (WEB_DIST / name).is_file():
        require_browser_setup()
    assert "<div id=" in (WEB_DIST / name).read_text()
