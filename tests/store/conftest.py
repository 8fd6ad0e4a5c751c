"""Fixtures for the store tests: a fresh database per test.

SQLite always (a file in tmp_path); PostgreSQL too when PLAIT_TEST_POSTGRES_URL is set (e.g.
`postgresql+asyncpg://postgres@127.0.0.1:5432/postgres`): each test then gets a database of its own,
created from that server and dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url

from plait.engine.checkpoint import Checkpointer, InMemoryCheckpointer
from plait.store import SecretBox, SqlCheckpointer, Store, create_engine_from_url, database_url

PG_URL = os.environ.get("PLAIT_TEST_POSTGRES_URL")
needs_pg = pytest.mark.skipif(not PG_URL, reason="PLAIT_TEST_POSTGRES_URL is not set")
BACKENDS = ["sqlite", pytest.param("postgresql", marks=needs_pg)]

_ENV = (
    "PLAIT_DATABASE_URL",
    "PLAIT_SECRET_KEY",
    "PLAIT_SECRET_KEY_FILE",
    "PLAIT_SQLITE_SYNCHRONOUS",
    "PLAIT_SQLITE_BUSY_TIMEOUT_MS",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


async def _pg_database() -> tuple[str, str]:
    assert PG_URL
    name = f"plait_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine_from_url(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    finally:
        await admin.dispose()
    url = make_url(database_url(PG_URL)).set(database=name).render_as_string(hide_password=False)
    return name, url


async def _drop_pg_database(name: str) -> None:
    assert PG_URL
    admin = create_engine_from_url(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.dispose()


@pytest.fixture(params=BACKENDS)
async def db_url(request: pytest.FixtureRequest, tmp_path: object) -> AsyncIterator[str]:
    """An empty database (not migrated)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path}/db/plait.db"
        return
    name, url = await _pg_database()
    try:
        yield url
    finally:
        await _drop_pg_database(name)


@pytest.fixture
def backend(db_url: str) -> str:
    return make_url(db_url).get_backend_name()


@pytest.fixture
def box() -> SecretBox:
    return SecretBox(Fernet.generate_key().decode())


@pytest.fixture
async def store(db_url: str, box: SecretBox) -> AsyncIterator[Store]:
    """A migrated store."""
    s = await Store.open(db_url, box=box)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture(params=["writer-thread", "async-engine"])
async def checkpointer(
    request: pytest.FixtureRequest, store: Store, backend: str
) -> AsyncIterator[SqlCheckpointer]:
    """The SQL checkpointer, on SQLite through both of its write paths."""
    if request.param == "writer-thread" and backend != "sqlite":
        pytest.skip("the writer thread is SQLite-only")
    cp = SqlCheckpointer(store.sessionmaker, sqlite_writer_thread=request.param == "writer-thread")
    try:
        yield cp
    finally:
        await cp.close()


# ------------------------------------------------------------------ every checkpointer, alike
class SaverUnderTest:
    """A checkpointer for the conformance suite, and `reopen()`: another instance on the same
    storage (as another process would open it; the in-memory one has only itself)."""

    def __init__(self, kind: str, cp: Checkpointer, store: Store | None = None) -> None:
        self.kind = kind
        self.cp = cp
        self.store = store
        self._opened: list[SqlCheckpointer] = []

    def reopen(self) -> Checkpointer:
        if self.store is None:
            return self.cp
        other = SqlCheckpointer(
            self.store.sessionmaker, sqlite_writer_thread=self.kind == "sqlite-writer-thread"
        )
        self._opened.append(other)
        return other

    async def close(self) -> None:
        for cp in [*self._opened, self.cp]:
            if isinstance(cp, SqlCheckpointer):
                await cp.close()
        if self.store is not None:
            await self.store.close()


SAVERS = [
    "memory",
    "sqlite-writer-thread",
    "sqlite-async-engine",
    pytest.param("postgresql", marks=needs_pg),
]


@pytest.fixture(params=SAVERS)
async def saver(
    request: pytest.FixtureRequest, tmp_path: Path, box: SecretBox
) -> AsyncIterator[SaverUnderTest]:
    """Each checkpointer plait has: in memory, SQL on SQLite (both write paths), SQL on PostgreSQL."""
    kind: str = request.param
    if kind == "memory":
        yield SaverUnderTest(kind, InMemoryCheckpointer())
        return
    pg_name = None
    if kind == "postgresql":
        pg_name, url = await _pg_database()
    else:
        url = f"sqlite+aiosqlite:///{tmp_path}/db/plait.db"
    store = await Store.open(url, box=box)
    cp = SqlCheckpointer(store.sessionmaker, sqlite_writer_thread=kind == "sqlite-writer-thread")
    harness = SaverUnderTest(kind, cp, store)
    try:
        yield harness
    finally:
        await harness.close()
        if pg_name is not None:
            await _drop_pg_database(pg_name)
