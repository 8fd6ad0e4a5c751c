"""Scratch databases for the tests: a fresh PostgreSQL database per test, or a SQLite file.

Why a database of each test's own: tests sharing one PostgreSQL database truncate or read each
other's rows when runs overlap (several test sessions on one server, two services or real
`plait serve` processes per test). So a test that runs on PostgreSQL gets a database created on the
server PLAIT_TEST_POSTGRES_URL names (e.g. `postgresql+asyncpg://postgres@127.0.0.1:5432/postgres`)
and dropped WITH (FORCE) afterwards, even when a connection is still open. Without that variable the
PostgreSQL cases skip (`needs_pg`).

One module, so that the skip marker, the naming (`<prefix>_<12 hex>`, easy to spot when one leaks)
and the clean-up are the same in every test that needs them.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from plait.store import create_engine_from_url, database_url

PG_URL: str | None = os.environ.get("PLAIT_TEST_POSTGRES_URL")
needs_pg = pytest.mark.skipif(not PG_URL, reason="set PLAIT_TEST_POSTGRES_URL to run on PostgreSQL")
BACKENDS = ["sqlite", pytest.param("postgresql", marks=needs_pg)]


def _server_url() -> str:
    assert PG_URL, "PLAIT_TEST_POSTGRES_URL is not set (use needs_pg or BACKENDS)"
    return PG_URL


async def admin_sql(sql: str) -> None:
    """One statement on the server's admin database, outside a transaction (AUTOCOMMIT), as
    CREATE/DROP DATABASE need."""
    admin = create_engine_from_url(_server_url(), isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.exec_driver_sql(sql)
    finally:
        await admin.dispose()


def _new_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def _url_of(name: str) -> str:
    """The URL of database `name` on the test server (async driver, password kept)."""
    return make_url(database_url(_server_url())).set(database=name).render_as_string(hide_password=False)


def _create(name: str) -> str:
    return f'CREATE DATABASE "{name}"'


def _drop(name: str) -> str:
    return f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'


@asynccontextmanager
async def scratch_database(prefix: str = "plait_test") -> AsyncIterator[str]:
    """The URL of a fresh, empty PostgreSQL database, dropped when the block ends."""
    name = _new_name(prefix)
    await admin_sql(_create(name))
    try:
        yield _url_of(name)
    finally:
        await admin_sql(_drop(name))


@contextmanager
def scratch_database_sync(prefix: str = "plait_test") -> Iterator[str]:
    """`scratch_database` for sync fixtures (no event loop running): each statement in its own
    `asyncio.run`."""
    name = _new_name(prefix)
    asyncio.run(admin_sql(_create(name)))
    try:
        yield _url_of(name)
    finally:
        asyncio.run(admin_sql(_drop(name)))


@asynccontextmanager
async def database_for(
    backend: str, tmp_path: Path, prefix: str = "plait_test", sqlite_file: str = "plait.db"
) -> AsyncIterator[str]:
    """The URL of an empty database for a `BACKENDS` parameter: a SQLite file in `tmp_path`
    ("sqlite") or a scratch PostgreSQL database ("postgresql")."""
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path}/{sqlite_file}"
        return
    if backend != "postgresql":
        raise ValueError(f"unknown test database backend {backend!r}")
    async with scratch_database(prefix) as url:
        yield url
