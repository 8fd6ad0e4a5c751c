from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import stat
from pathlib import Path

import pytest
from pydantic import BaseModel
from sqlalchemy import text

from plait.store import DEFAULT_URL, Store, create_engine_from_url, database_url
from plait.store.db import json_dumps, sqlite_path


def test_database_url_default_env_and_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    assert database_url() == DEFAULT_URL == "sqlite+aiosqlite:///./.plait/plait.db"
    monkeypatch.setenv("PLAIT_DATABASE_URL", "postgresql+asyncpg://u:p@db/plait")
    assert database_url() == "postgresql+asyncpg://u:p@db/plait"
    assert database_url("sqlite:///x.db") == "sqlite+aiosqlite:///x.db"
    assert database_url("postgres://u:p@h/d") == "postgresql+asyncpg://u:p@h/d"
    assert database_url("postgresql://u:p@h/d") == "postgresql+asyncpg://u:p@h/d"
    assert database_url("postgresql+asyncpg://u:p@h/d") == "postgresql+asyncpg://u:p@h/d"


def test_sqlite_path() -> None:
    assert sqlite_path("sqlite+aiosqlite:///./.plait/plait.db") == Path(".plait/plait.db")
    assert sqlite_path("sqlite+aiosqlite:////abs/p.db") == Path("/abs/p.db")
    assert sqlite_path("sqlite+aiosqlite:///:memory:") is None
    assert sqlite_path("postgresql+asyncpg://h/d") is None


async def _pragma(engine: object, name: str) -> object:
    async with engine.connect() as conn:  # type: ignore[attr-defined]
        return (await conn.execute(text(f"PRAGMA {name}"))).scalar()


async def test_sqlite_engine_creates_directory_and_sets_pragmas(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/a/b/plait.db"
    engine = create_engine_from_url(url)
    try:
        assert (tmp_path / "a" / "b").is_dir()
        assert await _pragma(engine, "journal_mode") == "wal"
        assert await _pragma(engine, "foreign_keys") == 1
        assert await _pragma(engine, "busy_timeout") == 30000
        assert await _pragma(engine, "synchronous") == 2  # FULL
    finally:
        await engine.dispose()


async def test_sqlite_pragmas_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_SQLITE_SYNCHRONOUS", "normal")
    monkeypatch.setenv("PLAIT_SQLITE_BUSY_TIMEOUT_MS", "1234")
    engine = create_engine_from_url(f"sqlite:///{tmp_path}/p.db")
    try:
        assert engine.dialect.driver == "aiosqlite"
        assert await _pragma(engine, "synchronous") == 1
        assert await _pragma(engine, "busy_timeout") == 1234
    finally:
        await engine.dispose()
    monkeypatch.setenv("PLAIT_SQLITE_SYNCHRONOUS", "sometimes")
    with pytest.raises(ValueError, match="PLAIT_SQLITE_SYNCHRONOUS"):
        create_engine_from_url(f"sqlite:///{tmp_path}/p.db")


async def test_relative_sqlite_path_is_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    engine = create_engine_from_url()  # the default ./.plait/plait.db
    try:
        assert engine.url.database == str(tmp_path / ".plait" / "plait.db")
        monkeypatch.chdir("/")
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
        assert (tmp_path / ".plait" / "plait.db").is_file()
    finally:
        await engine.dispose()


async def test_in_memory_sqlite_shares_one_connection() -> None:
    engine = create_engine_from_url("sqlite+aiosqlite:///:memory:")
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar() == 0
    finally:
        await engine.dispose()


def test_json_dumps_is_compact_and_tolerant() -> None:
    class M(BaseModel):
        a: int

    @dataclasses.dataclass
    class D:
        b: str

    value = {
        "t": dt.datetime(2024, 1, 2, 3, 4, 5),
        "s": {1},
        "bytes": b"hi",
        "m": M(a=1),
        "d": D("x"),
        "u": "é",
        "o": object,
    }
    out = json.loads(json_dumps(value))
    assert out["t"] == "2024-01-02T03:04:05"
    assert out["s"] == [1] and out["bytes"] == "aGk=" and out["m"] == {"a": 1} and out["d"] == {"b": "x"}
    assert out["u"] == "é" and out["o"] == "<class 'object'>"
    assert json_dumps({"a": [1, 2]}) == '{"a":[1,2]}'
    nan = float("nan")
    assert json.loads(json_dumps({"a": nan, "b": [float("inf"), (1.5,)], "c": {2.5}})) == {
        "a": None,
        "b": [None, [1.5]],
        "c": [2.5],
    }


def test_sqlite_file_and_its_directory_are_private(tmp_path: Path) -> None:
    """The database holds every flow and run: others on the machine cannot read it (the -wal and
    -shm files SQLite makes take the main file's mode)."""
    db = tmp_path / "fresh" / "plait.db"

    async def main() -> None:
        store = await Store.open(f"sqlite+aiosqlite:///{db}")
        await store.close()

    asyncio.run(main())
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    loose = tmp_path / "loose.db"
    loose.touch(mode=0o644)
    loose.chmod(0o644)
    create_engine_from_url(f"sqlite+aiosqlite:///{loose}")
    assert stat.S_IMODE(loose.stat().st_mode) == 0o600
