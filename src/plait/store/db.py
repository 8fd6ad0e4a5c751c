"""Database URLs, async engines and session factories.

SQLite (default, `sqlite+aiosqlite:///./.plait/plait.db`) gets WAL, foreign keys, a busy timeout and a
configurable `synchronous` level on every new connection; PostgreSQL (`postgresql+asyncpg://...`, from
`PLAIT_DATABASE_URL`) gets a liveness check on checkout (`install_liveness_check`). JSON is written compactly with a tolerant fallback for values the
standard encoder does not know (datetimes, sets, bytes, pydantic models).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import json
import math
import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import StaticPool

DEFAULT_URL = "sqlite+aiosqlite:///./.plait/plait.db"
ENV_URL = "PLAIT_DATABASE_URL"
ENV_SQLITE_SYNCHRONOUS = "PLAIT_SQLITE_SYNCHRONOUS"
ENV_SQLITE_BUSY_TIMEOUT_MS = "PLAIT_SQLITE_BUSY_TIMEOUT_MS"
_SYNC_LEVELS = {"OFF", "NORMAL", "FULL", "EXTRA"}


def database_url(url: str | URL | None = None) -> str:
    """The URL to use: the argument, else `PLAIT_DATABASE_URL`, else the SQLite default.

    Driverless URLs are given their async driver: `sqlite:///x.db` -> `sqlite+aiosqlite:///x.db`,
    `postgres://` / `postgresql://` -> `postgresql+asyncpg://`.
    """
    if isinstance(url, URL):
        raw = url.render_as_string(hide_password=False)
    else:
        raw = url if url is not None else (os.environ.get(ENV_URL) or DEFAULT_URL)
    for prefix, replacement in (
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgres://", "postgresql+asyncpg://"),
        ("postgresql://", "postgresql+asyncpg://"),
    ):
        if raw.startswith(prefix):
            return replacement + raw[len(prefix) :]
    return raw


def sqlite_path(url: str | URL) -> Path | None:
    """The database file of a SQLite URL (None for other databases and in-memory SQLite)."""
    u = make_url(database_url(url))
    if u.get_backend_name() != "sqlite":
        return None
    db = u.database
    if not db or db == ":memory:" or db.startswith("file::memory:"):
        return None
    if db.startswith("file:"):
        db = db[5:].split("?", 1)[0]
    return Path(db)


def json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


def json_dumps(value: Any) -> str:
    """Compact JSON. NaN and infinities (not JSON; PostgreSQL rejects them) become null."""
    try:
        return json.dumps(
            value, separators=(",", ":"), ensure_ascii=False, default=json_default, allow_nan=False
        )
    except ValueError:
        return json.dumps(
            _finite(value), separators=(",", ":"), ensure_ascii=False, default=json_default, allow_nan=False
        )


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [_finite(v) for v in value]
    return value


def _sqlite_synchronous() -> str:
    level = os.environ.get(ENV_SQLITE_SYNCHRONOUS, "FULL").strip().upper()
    if level not in _SYNC_LEVELS:
        raise ValueError(f"{ENV_SQLITE_SYNCHRONOUS} must be one of {sorted(_SYNC_LEVELS)}, not {level!r}")
    return level


def private_file(path: Path) -> None:
    """Make the SQLite file (and a directory made for it) readable by this user only: it holds
    every flow, run and (encrypted) variable. SQLite gives its -wal and -shm files the main file's
    permissions. An existing file that others can read is tightened when it is ours."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    except OSError:
        return  # not writable here: SQLite will say so
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def create_engine_from_url(url: str | URL | None = None, **kwargs: Any) -> AsyncEngine:
    """An async engine for `url` (see `database_url`); creates the SQLite file's directory."""
    resolved = database_url(url)
    u = make_url(resolved)
    backend = u.get_backend_name()
    options: dict[str, Any] = {"json_serializer": json_dumps}
    if backend == "sqlite":
        path = sqlite_path(resolved)
        if path is not None:
            # Pin the file now: a relative path must not follow later changes of directory.
            path = path.resolve()
            private_file(path)
            resolved = u.set(database=str(path)).render_as_string(hide_password=False)
            # Connections above pool_size are closed when returned; under concurrent requests
            # the default (5 + 10 overflow) opened a new connection (a thread, the pragmas)
            # for many reads. WAL readers do not block each other.
            options["pool_size"] = 20
            options["max_overflow"] = 20
        else:
            # In-memory: one shared connection, or every session would see its own empty database.
            options["poolclass"] = StaticPool
            options["connect_args"] = {"check_same_thread": False}
    options.update(kwargs)
    engine = create_async_engine(resolved, **options)
    if backend == "sqlite":
        install_sqlite_pragmas(engine.sync_engine)
    elif backend == "postgresql" and not options.get("pool_pre_ping"):
        install_liveness_check(engine.sync_engine)
    return engine


# A pooled connection that sat unused longer than this is pinged before it is handed out.
PING_AFTER_IDLE_S = 1.0
_CHECKED_IN = "plait_checked_in"  # connection_record.info key: when it went back to the pool


def install_liveness_check(engine: Engine) -> None:
    """Hand out only live connections, cheaply: SQLAlchemy's `pool_pre_ping` costs every
    checkout three round trips on asyncpg (BEGIN, a ping, ROLLBACK), which was a third of a queued
    run's round trips. Instead, a connection asyncpg already knows is closed (the server restarted
    or went away: it read the end of the socket while the connection sat in the pool) is replaced
    at no cost, and only one unused for `PING_AFTER_IDLE_S` is pinged (a network that failed
    silently). Connections in constant use are not pinged: one that fails mid-transaction fails
    that transaction, as it could right after a ping before."""

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info[_CHECKED_IN] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        driver = record.driver_connection
        is_closed = getattr(driver, "is_closed", None)
        if callable(is_closed) and is_closed():
            raise DisconnectionError("the database connection was closed")
        since = record.info.get(_CHECKED_IN)
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_S:
            return  # new, or in use a moment ago
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # noqa: BLE001 - any failure: the pool takes another connection
            raise DisconnectionError(f"the database connection failed a ping: {exc}") from exc
        if alive is False:
            raise DisconnectionError("the database connection failed a ping")


def apply_sqlite_pragmas(dbapi_connection: Any) -> None:
    """WAL, foreign keys, busy timeout and `synchronous` on one DB-API connection."""
    synchronous = _sqlite_synchronous()
    busy_ms = int(os.environ.get(ENV_SQLITE_BUSY_TIMEOUT_MS, "30000"))
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
        _enable_wal(cursor, busy_ms / 1000)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
    finally:
        cursor.close()


def _enable_wal(cursor: Any, timeout_s: float) -> None:
    """Switch to WAL (persistent in the file). The switch needs an exclusive lock and SQLite does
    not wait for it through the busy handler: when several connections open a new database at
    once, retry until the timeout."""
    deadline = time.monotonic() + timeout_s
    delay = 0.002
    while True:
        try:
            cursor.execute("PRAGMA journal_mode")
            if str(cursor.fetchone()[0]).lower() == "wal":
                return
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.fetchall()
            return
        except Exception as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def install_sqlite_pragmas(engine: Engine) -> None:
    """Apply `apply_sqlite_pragmas` to every new connection of `engine`."""
    _sqlite_synchronous()  # fail at start-up, not at the first connection

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        apply_sqlite_pragmas(dbapi_connection)


def upsert_for(dialect: str, table: Any) -> Any:
    """The INSERT ... ON CONFLICT construct of `dialect` (a dialect name) for `table`."""
    if dialect == "postgresql":
        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise NotImplementedError(f"plait.store supports SQLite and PostgreSQL, not {dialect!r}")


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions whose objects stay readable after commit (repositories return detached rows)."""
    return async_sessionmaker(engine, expire_on_commit=False)
