"""What every repository shares: the session factory and one short transaction per method.

Methods that return rows return ORM objects detached from their session (sessions are made with
`expire_on_commit=False`): read them freely, change them only through a repository. Times are
epoch seconds; `now` parameters exist for tests and for callers that must use one clock for a
whole decision.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, TypeVar

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from plait.store.db import upsert_for

Sessions = async_sessionmaker[AsyncSession]
RowT = TypeVar("RowT")


def now_or(now: float | None) -> float:
    """`now` when a caller gave one, else the current time."""
    return time.time() if now is None else now


def upsert(session: AsyncSession, model: Any) -> Any:
    """The INSERT ... ON CONFLICT construct of the session's database for `model`."""
    return upsert_for(session.bind.dialect.name if session.bind is not None else "", model)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Repo:
    """Base of the repositories: small helpers that each run one statement in one transaction."""

    def __init__(self, sessionmaker: Sessions) -> None:
        self.sessionmaker = sessionmaker

    async def _one(self, stmt: Select[RowT]) -> RowT | None:
        async with self.sessionmaker() as session:
            return (await session.execute(stmt)).scalar_one_or_none()

    async def _all(self, stmt: Select[RowT]) -> list[RowT]:
        async with self.sessionmaker() as session:
            return list((await session.execute(stmt)).scalars().all())

    async def _add(self, obj: RowT) -> RowT:
        async with self.sessionmaker.begin() as session:
            session.add(obj)
        return obj

    async def _write(self, stmt: Any) -> int:
        """Run an UPDATE/DELETE; returns the number of rows it matched."""
        async with self.sessionmaker.begin() as session:
            result = await session.execute(stmt, execution_options={"synchronize_session": False})
            return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def _write_returning(self, stmt: Any) -> list[Any]:
        async with self.sessionmaker.begin() as session:
            result = await session.execute(stmt, execution_options={"synchronize_session": False})
            return list(result.scalars().all())


__all__ = ["Repo", "Sessions", "now_or", "sha256_hex", "upsert"]
