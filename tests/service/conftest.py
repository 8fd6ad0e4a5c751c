"""Fixtures shared by the service tests: `db_url`, an empty database per test, on SQLite (a file in
tmp_path) and on PostgreSQL (a scratch database, scratch_db.py) when PLAIT_TEST_POSTGRES_URL is set.
Several modules here run two services over one database; they all want exactly this."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from scratch_db import BACKENDS, database_for


@pytest.fixture(params=BACKENDS)
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database (not migrated); its PostgreSQL name says which module made it."""
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    async with database_for(request.param, tmp_path, prefix=f"plait_{module}") as url:
        yield url
