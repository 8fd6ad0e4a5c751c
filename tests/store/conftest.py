"""Fixtures for the store tests: a fresh database per test.

SQLite always (a file in tmp_path); PostgreSQL too when PLAIT_TEST_POSTGRES_URL is set (e.g.
`postgresql+asyncpg://postgres@127.0.0.1:5432/postgres`): each test then gets a database of its own,
created from that server and dropped afterwards (scratch_db.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url

from plait.engine.checkpoint import Checkpointer, InMemoryCheckpointer
from plait.store import SecretBox, SqlCheckpointer, Store
from scratch_db import BACKENDS, database_for, needs_pg

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


@pytest.fixture(params=BACKENDS)
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database (not migrated)."""
    async with database_for(request.param, tmp_path, sqlite_file="db/plait.db") as url:
        yield url


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
    backend = "postgresql" if kind == "postgresql" else "sqlite"
    async with database_for(backend, tmp_path, sqlite_file="db/plait.db") as url:
        store = await Store.open(url, box=box)
        cp = SqlCheckpointer(store.sessionmaker, sqlite_writer_thread=kind == "sqlite-writer-thread")
        harness = SaverUnderTest(kind, cp, store)
        try:
            yield harness
        finally:
            await harness.close()
