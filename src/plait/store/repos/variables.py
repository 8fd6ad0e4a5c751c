"""Global variables, encrypted at rest, with the short-lived cache every run reads."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update

from plait.store.crypto import SecretBox
from plait.store.models import Variable
from plait.store.repos.base import Repo, Sessions, upsert

REDACTED = "********"


@dataclass(frozen=True, slots=True)
class VariableView:
    name: str
    value: Any
    is_secret: bool
    description: str
    updated_at: float


class VariableRepo(Repo):
    """Global variables; every value is encrypted at rest with the store's `SecretBox`.
    Listings redact secret values unless asked to reveal them.

    `values()` (read by every run) is cached for `cache_ttl_s`: writes through this repo clear the
    cache at once; another process's writes are seen within the TTL."""

    def __init__(self, sessionmaker: Sessions, box: SecretBox, *, cache_ttl_s: float = 1.0) -> None:
        super().__init__(sessionmaker)
        self.box = box
        self.cache_ttl_s = cache_ttl_s
        self._cached: tuple[float, dict[str, Any]] | None = None

    async def set(
        self, name: str, value: Any, *, is_secret: bool = False, description: str | None = None
    ) -> None:
        now = time.time()
        token = self.box.encrypt(value)
        self._cached = None
        async with self.sessionmaker.begin() as session:
            stmt = upsert(session, Variable).values(
                name=name,
                value=token,
                is_secret=is_secret,
                description=description or "",
                created_at=now,
                updated_at=now,
            )
            changes: dict[str, Any] = {"value": token, "is_secret": is_secret, "updated_at": now}
            if description is not None:
                changes["description"] = description
            await session.execute(stmt.on_conflict_do_update(index_elements=[Variable.name], set_=changes))

    async def get(self, name: str, default: Any = None) -> Any:
        token = await self._one(select(Variable.value).where(Variable.name == name))
        return default if token is None else self.box.decrypt(token)

    async def values(self) -> dict[str, Any]:
        """Every variable decrypted (for `{{env.X}}` at run time); a fresh dict per call."""
        now = time.monotonic()
        if self._cached is not None and self._cached[0] > now:
            return dict(self._cached[1])
        async with self.sessionmaker() as session:
            rows = (await session.execute(select(Variable.name, Variable.value))).all()
        values = {name: self.box.decrypt(token) for name, token in rows}
        if self.cache_ttl_s > 0:
            self._cached = (now + self.cache_ttl_s, values)
        return dict(values)

    async def list_variables(self, *, reveal: bool = False) -> list[VariableView]:
        rows = await self._all(select(Variable).order_by(Variable.name))
        return [
            VariableView(
                r.name,
                self.box.decrypt(r.value) if reveal or not r.is_secret else REDACTED,
                r.is_secret,
                r.description,
                r.updated_at,
            )
            for r in rows
        ]

    async def delete(self, name: str) -> bool:
        self._cached = None
        return await self._write(delete(Variable).where(Variable.name == name)) > 0

    async def rotate(self) -> int:
        """Re-encrypt every value with the first (newest) key; returns how many."""
        self._cached = None
        async with self.sessionmaker.begin() as session:
            rows = (await session.execute(select(Variable.name, Variable.value))).all()
            for name, token in rows:
                await session.execute(
                    update(Variable).where(Variable.name == name).values(value=self.box.rotate(token)),
                    execution_options={"synchronize_session": False},
                )
        return len(rows)
