"""Webhook and schedule triggers of flows."""

from __future__ import annotations

import hmac
import time
from typing import Any

from sqlalchemy import delete, func, select, update

from plait.store.models import FlowVersion, Trigger, table_of
from plait.store.repos.base import Repo, now_or, sha256_hex, upsert

_UNSET: Any = object()


class TriggerRepo(Repo):
    """Webhook/schedule triggers of a flow. A webhook secret is stored as its SHA-256."""

    async def create(
        self,
        flow_id: str,
        kind: str,
        config: dict[str, Any] | None = None,
        *,
        enabled: bool = True,
        secret: str | None = None,
        secret_enc: str | None = None,
        next_fire_at: float | None = None,
    ) -> Trigger:
        """`secret`: stored as its SHA-256; `secret_enc`: the same secret encrypted by the caller
        (the store's `SecretBox`), for checks that need the secret itself (HMAC signatures)."""
        now = time.time()
        row = Trigger(
            flow_id=flow_id,
            kind=kind,
            config=config or {},
            enabled=enabled,
            secret_hash=sha256_hex(secret) if secret else None,
            secret_enc=secret_enc,
            next_fire_at=next_fire_at,
            created_at=now,
            updated_at=now,
        )
        return await self._add(row)

    async def create_if_absent(
        self, trigger_id: str, flow_id: str, kind: str, config: dict[str, Any], *, next_fire_at: float | None
    ) -> bool:
        """Insert a trigger with a chosen id unless one has it (servers racing to add the same
        declared schedule add it once); True when this call inserted it."""
        now = time.time()
        values = {
            "id": trigger_id,
            "flow_id": flow_id,
            "kind": kind,
            "config": config,
            "enabled": True,
            "next_fire_at": next_fire_at,
            "created_at": now,
            "updated_at": now,
        }
        async with self.sessionmaker.begin() as session:
            table = table_of(Trigger)
            stmt = (
                upsert(session, table)
                .values(values)
                .on_conflict_do_nothing(index_elements=["id"])
                .returning(table.c.id)
            )
            return (await session.execute(stmt)).scalar_one_or_none() is not None

    async def latest_versions_after(self, after_id: int) -> list[FlowVersion]:
        """Of the versions published after the one with id `after_id`, the latest of each flow."""
        newest = (
            select(func.max(FlowVersion.id)).where(FlowVersion.id > after_id).group_by(FlowVersion.flow_id)
        )
        return await self._all(select(FlowVersion).where(FlowVersion.id.in_(newest)).order_by(FlowVersion.id))

    async def get(self, trigger_id: str) -> Trigger | None:
        return await self._one(select(Trigger).where(Trigger.id == trigger_id))

    async def list_triggers(
        self, *, flow_id: str | None = None, kind: str | None = None, enabled: bool | None = None
    ) -> list[Trigger]:
        stmt = select(Trigger).order_by(Trigger.created_at, Trigger.id)
        if flow_id is not None:
            stmt = stmt.where(Trigger.flow_id == flow_id)
        if kind is not None:
            stmt = stmt.where(Trigger.kind == kind)
        if enabled is not None:
            stmt = stmt.where(Trigger.enabled.is_(enabled))
        return await self._all(stmt)

    async def update(
        self,
        trigger_id: str,
        *,
        config: dict[str, Any] | None = None,
        enabled: bool | None = None,
        next_fire_at: float | None = _UNSET,
        last_fired_at: float | None = _UNSET,
    ) -> Trigger | None:
        values: dict[str, Any] = {"updated_at": time.time()}
        if config is not None:
            values["config"] = config
        if enabled is not None:
            values["enabled"] = enabled
        if next_fire_at is not _UNSET:
            values["next_fire_at"] = next_fire_at
        if last_fired_at is not _UNSET:
            values["last_fired_at"] = last_fired_at
        rows = await self._write_returning(
            update(Trigger).where(Trigger.id == trigger_id).values(values).returning(Trigger)
        )
        return rows[0] if rows else None

    async def delete(self, trigger_id: str) -> bool:
        return await self._write(delete(Trigger).where(Trigger.id == trigger_id)) > 0

    async def due(self, now: float | None = None, *, limit: int = 100) -> list[Trigger]:
        """Enabled triggers whose `next_fire_at` has come."""
        t = now_or(now)
        return await self._all(
            select(Trigger)
            .where(Trigger.enabled.is_(True), Trigger.next_fire_at.is_not(None), Trigger.next_fire_at <= t)
            .order_by(Trigger.next_fire_at)
            .limit(limit)
        )

    async def claim_fire(
        self,
        trigger_id: str,
        expected_next: float | None,
        next_fire_at: float | None,
        *,
        now: float | None = None,
    ) -> bool:
        """Move a due trigger to its next time, only if nobody else did (compare-and-set on
        `next_fire_at`): the process for which this returns True starts the run."""
        stmt = update(Trigger).where(Trigger.id == trigger_id)
        if expected_next is None:
            stmt = stmt.where(Trigger.next_fire_at.is_(None))
        else:
            stmt = stmt.where(Trigger.next_fire_at == expected_next)
        return await self._write(stmt.values(next_fire_at=next_fire_at, last_fired_at=now_or(now))) > 0

    async def advance(self, trigger_id: str, expected_next: float | None, next_fire_at: float | None) -> bool:
        """Move a schedule from the tick it was due at to its next one, unless it changed meanwhile
        (compare-and-set on `next_fire_at`: another server moved it, or it was edited)."""
        stmt = update(Trigger).where(Trigger.id == trigger_id)
        if expected_next is None:
            stmt = stmt.where(Trigger.next_fire_at.is_(None))
        else:
            stmt = stmt.where(Trigger.next_fire_at == expected_next)
        return await self._write(stmt.values(next_fire_at=next_fire_at)) > 0

    @staticmethod
    def check_secret(trigger: Trigger, secret: str | None) -> bool:
        """True when the trigger has no secret or `secret` matches it (constant time)."""
        if trigger.secret_hash is None:
            return True
        return secret is not None and hmac.compare_digest(trigger.secret_hash, sha256_hex(secret))
