"""Flows shared with named users, as `viewer` or `editor`."""

from __future__ import annotations

from sqlalchemy import delete, select

from plait.store.models import FlowShare
from plait.store.repos.base import Repo, now_or, upsert


class ShareRepo(Repo):
    async def set(self, flow_id: str, user_id: str, role: str, *, now: float | None = None) -> FlowShare:
        async with self.sessionmaker.begin() as session:
            stmt = upsert(session, FlowShare).values(
                flow_id=flow_id, user_id=user_id, role=role, created_at=now_or(now)
            )
            await session.execute(
                stmt.on_conflict_do_update(
                    index_elements=[FlowShare.flow_id, FlowShare.user_id], set_={"role": role}
                )
            )
        row = await self.get(flow_id, user_id)
        assert row is not None
        return row

    async def get(self, flow_id: str, user_id: str) -> FlowShare | None:
        return await self._one(
            select(FlowShare).where(FlowShare.flow_id == flow_id, FlowShare.user_id == user_id)
        )

    async def list_for_flow(self, flow_id: str) -> list[FlowShare]:
        return await self._all(
            select(FlowShare)
            .where(FlowShare.flow_id == flow_id)
            .order_by(FlowShare.created_at, FlowShare.user_id)
        )

    async def delete(self, flow_id: str, user_id: str) -> bool:
        return (
            await self._write(
                delete(FlowShare).where(FlowShare.flow_id == flow_id, FlowShare.user_id == user_id)
            )
            > 0
        )
