"""Restore points: a flow's draft saved before the assistant changed it (`flow_restore_points`)."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, select

from plait.store.models import FlowRestorePoint
from plait.store.repos.base import Repo

KEEP_PER_FLOW = 20


class RestorePointRepo(Repo):
    async def add(
        self,
        flow_id: str,
        document: dict[str, Any],
        *,
        note: str = "",
        created_by: str | None = None,
        keep: int = KEEP_PER_FLOW,
    ) -> FlowRestorePoint:
        """Save a restore point and drop the flow's oldest beyond the newest `keep`."""
        async with self.sessionmaker.begin() as session:
            row = FlowRestorePoint(
                flow_id=flow_id, document=document, note=note, created_by=created_by, created_at=time.time()
            )
            session.add(row)
            await session.flush()
            newest = (
                select(FlowRestorePoint.id)
                .where(FlowRestorePoint.flow_id == flow_id)
                .order_by(FlowRestorePoint.id.desc())
                .limit(keep)
            )
            kept = [r for (r,) in (await session.execute(newest)).all()]
            await session.execute(
                delete(FlowRestorePoint).where(
                    FlowRestorePoint.flow_id == flow_id, FlowRestorePoint.id.not_in(kept)
                )
            )
        return row

    async def list_points(self, flow_id: str) -> list[FlowRestorePoint]:
        """The flow's restore points, newest first."""
        async with self.sessionmaker() as session:
            stmt = (
                select(FlowRestorePoint)
                .where(FlowRestorePoint.flow_id == flow_id)
                .order_by(FlowRestorePoint.id.desc())
            )
            return list((await session.execute(stmt)).scalars())

    async def get(self, flow_id: str, point_id: int) -> FlowRestorePoint | None:
        async with self.sessionmaker() as session:
            stmt = select(FlowRestorePoint).where(
                FlowRestorePoint.flow_id == flow_id, FlowRestorePoint.id == point_id
            )
            return (await session.execute(stmt)).scalar_one_or_none()
