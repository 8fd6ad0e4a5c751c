"""Flows (the mutable draft) and their immutable published versions."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Select, delete, or_, select, update

from plait.store.models import FlowRow, FlowShare, FlowVersion
from plait.store.repos.base import Repo


def shared_with(user_id: str) -> Select[str]:
    """The ids of the flows shared with a user (a subquery)."""
    return select(FlowShare.flow_id).where(FlowShare.user_id == user_id)


def visible_flow_ids(user_id: str) -> Select[str]:
    """The ids of the flows a user owns or has been given (a subquery)."""
    return select(FlowRow.id).where(or_(FlowRow.owner_id == user_id, FlowRow.id.in_(shared_with(user_id))))


class FlowRepo(Repo):
    async def create(
        self,
        flow_id: str,
        draft: dict[str, Any],
        *,
        name: str | None = None,
        description: str = "",
        owner_id: str | None = None,
    ) -> FlowRow:
        """Raises `sqlalchemy.exc.IntegrityError` when the id is taken."""
        now = time.time()
        row = FlowRow(
            id=flow_id,
            name=name if name is not None else str(draft.get("name") or flow_id),
            description=description,
            draft=draft,
            owner_id=owner_id,
            created_at=now,
            updated_at=now,
        )
        return await self._add(row)

    async def get(self, flow_id: str) -> FlowRow | None:
        return await self._one(select(FlowRow).where(FlowRow.id == flow_id))

    async def list_flows(
        self,
        *,
        owner_id: str | None = None,
        visible_to: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[FlowRow]:
        """Newest first; `owner_id`: only that user's; `visible_to`: that user's and those shared
        with them."""
        stmt = select(FlowRow).order_by(FlowRow.updated_at.desc(), FlowRow.id).limit(limit).offset(offset)
        if owner_id is not None:
            stmt = stmt.where(FlowRow.owner_id == owner_id)
        if visible_to is not None:
            stmt = stmt.where(or_(FlowRow.owner_id == visible_to, FlowRow.id.in_(shared_with(visible_to))))
        return await self._all(stmt)

    async def claim_unowned(self, user_id: str) -> int:
        """Give flows made before users existed (no owner) to `user_id` (the local admin)."""
        return await self._write(update(FlowRow).where(FlowRow.owner_id.is_(None)).values(owner_id=user_id))

    async def update(
        self,
        flow_id: str,
        *,
        draft: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> FlowRow | None:
        values: dict[str, Any] = {"updated_at": time.time()}
        if draft is not None:
            values["draft"] = draft
        if name is not None:
            values["name"] = name
        if description is not None:
            values["description"] = description
        rows = await self._write_returning(
            update(FlowRow).where(FlowRow.id == flow_id).values(values).returning(FlowRow)
        )
        return rows[0] if rows else None

    async def delete(self, flow_id: str) -> bool:
        """Deletes the flow, its versions and triggers (runs are kept: they are history)."""
        return await self._write(delete(FlowRow).where(FlowRow.id == flow_id)) > 0

    async def publish(
        self, flow_id: str, *, document: dict[str, Any] | None = None, note: str = ""
    ) -> FlowVersion | None:
        """Freeze `document` (default: the current draft) as the next version number; None if no flow.

        The number is taken with an atomic `latest_version = latest_version + 1`, so concurrent
        publishes get distinct versions."""
        now = time.time()
        async with self.sessionmaker.begin() as session:
            bumped = (
                await session.execute(
                    update(FlowRow)
                    .where(FlowRow.id == flow_id)
                    .values(latest_version=FlowRow.latest_version + 1, updated_at=now)
                    .returning(FlowRow.latest_version, FlowRow.draft),
                    execution_options={"synchronize_session": False},
                )
            ).first()
            if bumped is None:
                return None
            version, draft = bumped
            row = FlowVersion(
                flow_id=flow_id,
                version=version,
                document=document if document is not None else draft,
                note=note,
            )
            row.created_at = now
            session.add(row)
        return row

    async def get_version(self, flow_id: str, version: int | None = None) -> FlowVersion | None:
        """Version `version`, or the latest one when None."""
        stmt = select(FlowVersion).where(FlowVersion.flow_id == flow_id)
        if version is None:
            stmt = stmt.order_by(FlowVersion.version.desc()).limit(1)
        else:
            stmt = stmt.where(FlowVersion.version == version)
        return await self._one(stmt)

    async def list_versions(self, flow_id: str) -> list[FlowVersion]:
        return await self._all(
            select(FlowVersion).where(FlowVersion.flow_id == flow_id).order_by(FlowVersion.version)
        )
