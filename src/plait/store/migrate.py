"""Apply the Alembic migrations at start-up: `await migrate(url)`.

Idempotent (an up-to-date database is left alone) and safe when several processes start at once:
the whole upgrade runs in one transaction that first takes a lock, so the second process waits
and then finds the database at head.
- PostgreSQL: `pg_advisory_xact_lock` (released at commit/rollback); DDL is transactional.
- SQLite: `BEGIN IMMEDIATE` (the database's write lock, waited for up to the busy timeout);
  SQLite DDL is transactional too.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL, Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from plait.store.db import create_engine_from_url

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Any constant works; this one spells "plait-mg" in ASCII.
ADVISORY_LOCK_ID = 0x706C_6169_742D_6D67


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    return cfg


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def _lock(connection: Connection) -> None:
    name = connection.dialect.name
    if name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({ADVISORY_LOCK_ID})")
    elif name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def _upgrade(connection: Connection, revision: str) -> None:
    _lock(connection)
    cfg = alembic_config()
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, revision)


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def migrate(url: str | URL | AsyncEngine | None = None, *, revision: str = "head") -> None:
    """Upgrade the database at `url` (or the given engine) to `revision` (default: head)."""
    engine = url if isinstance(url, AsyncEngine) else create_engine_from_url(url)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(_upgrade, revision)
            await conn.commit()
    finally:
        if engine is not url:
            await engine.dispose()


async def current_revision(url: str | URL | AsyncEngine | None = None) -> str | None:
    """The revision the database is at (None before the first migration)."""
    engine = url if isinstance(url, AsyncEngine) else create_engine_from_url(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_current)
    finally:
        if engine is not url:
            await engine.dispose()
