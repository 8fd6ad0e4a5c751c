"""Edge-LLM decisions of a run, in step order (the checkpointer writes them with their events)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from plait.store.models import Decision
from plait.store.repos.base import Repo, now_or


class DecisionRepo(Repo):
    async def add(
        self,
        run_id: str,
        step: int,
        data: dict[str, Any],
        *,
        node_id: str | None = None,
        now: float | None = None,
    ) -> Decision:
        row = Decision(run_id=run_id, step=step, node_id=node_id, data=data, created_at=now_or(now))
        return await self._add(row)

    async def list_decisions(self, run_id: str) -> list[Decision]:
        return await self._all(
            select(Decision).where(Decision.run_id == run_id).order_by(Decision.step, Decision.id)
        )
