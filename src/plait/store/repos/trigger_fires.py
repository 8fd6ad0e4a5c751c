"""The firings of triggers: the row that decides which server starts a run.

"Exactly once however many servers run" rests on one unique key, `(trigger_id, fire_key)`: every
scheduler that sees a schedule tick, and every request that carries a signed webhook delivery,
INSERTs the same key; the database lets one INSERT through and the others conflict. The winner
starts the run and records it on the row (`finish`). Nothing here needs a lock or a leader.

Old rows are pruned (`prune`) in batches, but never one that still guards something: a trigger's
newest row stays (its tick's window may still be open: only a later tick closes it, and a lagging
scheduler could otherwise fire that tick again), and so does a row whose run has not finished
(the overlap policy looks for the trigger's active runs through these rows).
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, exists, func, select, update
from sqlalchemy.exc import IntegrityError

from plait.engine.status import TERMINAL_RUN_STATUSES
from plait.store.models import Run, TriggerFire, table_of
from plait.store.repos.base import Repo, upsert

fires_table = table_of(TriggerFire)
runs_table = table_of(Run)


class TriggerFireRepo(Repo):
    """Firings of triggers (`trigger_fires`) and the trigger recorded on the runs they start."""

    async def claim(
        self, trigger_id: str, fire_key: str, fire_at: float, *, status: str = "started"
    ) -> int | None:
        """Record a firing; its id when this call inserted it, None when the key was taken (by
        another server for the same tick, or an earlier delivery of the same webhook)."""
        values: dict[str, Any] = {
            "trigger_id": trigger_id,
            "fire_key": fire_key,
            "fire_at": fire_at,
            "status": status,
            "created_at": time.time(),
        }
        try:
            async with self.sessionmaker.begin() as session:
                stmt = (
                    upsert(session, fires_table)
                    .values(values)
                    .on_conflict_do_nothing(index_elements=["trigger_id", "fire_key"])
                    .returning(fires_table.c.id)
                )
                inserted = (await session.execute(stmt)).scalar_one_or_none()
        except IntegrityError:  # the trigger was deleted meanwhile (its foreign key)
            return None
        return None if inserted is None else int(inserted)

    async def finish(
        self, fire_id: int, status: str, *, run_id: str | None = None, error: str | None = None
    ) -> None:
        await self._write(
            update(TriggerFire)
            .where(TriggerFire.id == fire_id)
            .values(status=status, run_id=run_id, error=error)
        )

    async def list_fires(self, trigger_id: str, *, limit: int = 20) -> list[TriggerFire]:
        """Newest first."""
        return await self._all(
            select(TriggerFire)
            .where(TriggerFire.trigger_id == trigger_id)
            .order_by(TriggerFire.fire_at.desc(), TriggerFire.id.desc())
            .limit(limit)
        )

    async def active_runs(self, trigger_id: str) -> list[str]:
        """The runs this trigger started that have not finished (queued, running, waiting)."""
        started = select(fires_table.c.run_id).where(
            fires_table.c.trigger_id == trigger_id, fires_table.c.run_id.is_not(None)
        )
        stmt = select(Run.id).where(
            Run.id.in_(started), Run.status.not_in([str(s) for s in TERMINAL_RUN_STATUSES])
        )
        async with self.sessionmaker() as session:
            return list((await session.execute(stmt)).scalars().all())

    async def count(self, trigger_id: str, *, status: str | None = None) -> int:
        stmt = select(func.count()).select_from(TriggerFire).where(TriggerFire.trigger_id == trigger_id)
        if status is not None:
            stmt = stmt.where(TriggerFire.status == status)
        async with self.sessionmaker() as session:
            return int((await session.execute(stmt)).scalar_one())

    async def prune(self, before: float, *, batch: int = 1000) -> int:
        """Delete up to `batch` firings older than `before` (`fire_at`) that guard nothing any
        more: a newer firing of the same trigger exists, and the run it started (if any) has
        finished. Returns how many were deleted (call again while it returns `batch`)."""
        f = fires_table
        newer = fires_table.alias("newer")
        active = runs_table.alias("active")
        stale = (
            select(f.c.id)
            .where(
                f.c.fire_at < before,
                exists().where(newer.c.trigger_id == f.c.trigger_id, newer.c.fire_at > f.c.fire_at),
                ~exists().where(
                    active.c.id == f.c.run_id,
                    active.c.status.not_in([str(s) for s in TERMINAL_RUN_STATUSES]),
                ),
            )
            .limit(batch)
        )
        ids = [int(i) for i in await self._all(stale)]
        if not ids:
            return 0
        return await self._write(delete(fires_table).where(fires_table.c.id.in_(ids)))

    async def mark_run(self, run_id: str, trigger_id: str) -> None:
        """Record on the run which trigger started it (`runs.trigger_id`)."""
        await self._write(update(runs_table).where(runs_table.c.id == run_id).values(trigger_id=trigger_id))


__all__ = ["TriggerFireRepo"]
