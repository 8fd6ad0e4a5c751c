"""Variables (a user's and the deployment-wide ones), encrypted at rest, with the short-lived
cache every run reads."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, or_, select, update

from plait.store.crypto import SecretBox
from plait.store.models import Variable, new_id
from plait.store.repos.base import Repo, Sessions, upsert

REDACTED = "********"


@dataclass(frozen=True, slots=True)
class VariableView:
    name: str
    value: Any
    is_secret: bool
    description: str
    updated_at: float
    owner_id: str | None = None  # None: deployment-wide


@dataclass(frozen=True, slots=True)
class RunVariables:
    """What one run reads as `{{env.X}}`: the deployment-wide variables overlaid with its user's,
    and the values of the secret ones among them (what masking hides)."""

    values: dict[str, Any]
    secrets: tuple[Any, ...]


def _owner_is(owner_id: str | None) -> Any:
    return Variable.owner_id.is_(None) if owner_id is None else Variable.owner_id == owner_id


class VariableRepo(Repo):
    """Variables, per owner: a user's (`owner_id`) and the deployment-wide ones (`owner_id` None),
    which every run reads as defaults. Every value is encrypted at rest with the store's
    `SecretBox`. Listings redact secret values unless asked to reveal them.

    `for_run(owner)` (read by every run) is cached for `cache_ttl_s` per owner: writes through this
    repo clear the cache at once; another process's writes are seen within the TTL."""

    CACHE_OWNERS = 256

    def __init__(self, sessionmaker: Sessions, box: SecretBox, *, cache_ttl_s: float = 1.0) -> None:
        super().__init__(sessionmaker)
        self.box = box
        self.cache_ttl_s = cache_ttl_s
        self._cached: dict[str | None, tuple[float, RunVariables]] = {}

    async def set(
        self,
        name: str,
        value: Any,
        *,
        owner_id: str | None = None,
        is_secret: bool = False,
        description: str | None = None,
    ) -> None:
        """Create or replace the owner's variable `name` (owner None: deployment-wide)."""
        now = time.time()
        token = self.box.encrypt(value)
        self._cached.clear()
        async with self.sessionmaker.begin() as session:
            stmt = upsert(session, Variable).values(
                id=new_id(),
                owner_id=owner_id,
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
            if owner_id is None:  # the partial unique index on name where owner_id IS NULL
                stmt = stmt.on_conflict_do_update(
                    index_elements=[Variable.name], index_where=Variable.owner_id.is_(None), set_=changes
                )
            else:
                stmt = stmt.on_conflict_do_update(
                    index_elements=[Variable.owner_id, Variable.name], set_=changes
                )
            await session.execute(stmt)

    async def get(self, name: str, default: Any = None, *, owner_id: str | None = None) -> Any:
        token = await self._one(select(Variable.value).where(Variable.name == name, _owner_is(owner_id)))
        return default if token is None else self.box.decrypt(token)

    async def for_run(self, owner_id: str | None = None) -> RunVariables:
        """The variables a run of `owner_id` reads (see `RunVariables`); fresh containers per call."""
        now = time.monotonic()
        cached = self._cached.get(owner_id)
        if cached is None or cached[0] <= now:
            stmt = select(Variable.owner_id, Variable.name, Variable.value, Variable.is_secret).where(
                Variable.owner_id.is_(None)
                if owner_id is None
                else or_(Variable.owner_id.is_(None), Variable.owner_id == owner_id)
            )
            async with self.sessionmaker() as session:
                rows = (await session.execute(stmt)).all()
            values: dict[str, Any] = {}
            secrets: list[Any] = []
            # Deployment-wide first, so the user's own variable of the same name wins.
            for _owner, name, token, is_secret in sorted(rows, key=lambda r: r[0] is not None):
                value = self.box.decrypt(token)
                values[name] = value
                if is_secret:
                    secrets.append(value)
            cached = (now + self.cache_ttl_s, RunVariables(values, tuple(secrets)))
            if self.cache_ttl_s > 0:
                if len(self._cached) >= self.CACHE_OWNERS:
                    self._cached.clear()
                self._cached[owner_id] = cached
        return RunVariables(dict(cached[1].values), cached[1].secrets)

    async def values(self, owner_id: str | None = None) -> dict[str, Any]:
        """Every variable a run of `owner_id` reads, decrypted (`{{env.X}}`); a fresh dict."""
        return (await self.for_run(owner_id)).values

    async def list_variables(
        self, *, owner_id: str | None = None, include_global: bool = True, reveal: bool = False
    ) -> list[VariableView]:
        """The owner's variables, then (`include_global`) the deployment-wide ones; owner None:
        the deployment-wide ones only."""
        cond = _owner_is(owner_id)
        if owner_id is not None and include_global:
            cond = or_(cond, Variable.owner_id.is_(None))
        rows = await self._all(
            select(Variable)
            .where(cond)
            .order_by(Variable.name, Variable.owner_id.is_not(None), Variable.owner_id)
        )
        return [
            VariableView(
                r.name,
                self.box.decrypt(r.value) if reveal or not r.is_secret else REDACTED,
                r.is_secret,
                r.description,
                r.updated_at,
                r.owner_id,
            )
            for r in rows
        ]

    async def delete(self, name: str, *, owner_id: str | None = None) -> bool:
        self._cached.clear()
        return await self._write(delete(Variable).where(Variable.name == name, _owner_is(owner_id))) > 0

    async def rotate(self) -> int:
        """Re-encrypt every value with the first (newest) key; returns how many."""
        self._cached.clear()
        async with self.sessionmaker.begin() as session:
            rows = (await session.execute(select(Variable.id, Variable.value))).all()
            for row_id, token in rows:
                await session.execute(
                    update(Variable).where(Variable.id == row_id).values(value=self.box.rotate(token)),
                    execution_options={"synchronize_session": False},
                )
        return len(rows)
