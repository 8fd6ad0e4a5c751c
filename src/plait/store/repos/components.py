"""Custom components, scoped to an owner."""

from __future__ import annotations

import secrets
import time
from typing import Any

from sqlalchemy import delete, select, update

from plait.store.models import Component
from plait.store.repos.base import Repo, upsert


class ComponentRepo(Repo):
    """Custom components, scoped to an owner: every method takes `owner_id` (a user id; None, the
    default, is the deployment-wide owner) and only sees that owner's components."""

    @staticmethod
    def _owned(owner_id: str | None) -> Any:
        return Component.owner_id.is_(None) if owner_id is None else Component.owner_id == owner_id

    async def save(
        self,
        name: str,
        code: str,
        *,
        owner_id: str | None = None,
        spec: dict[str, Any] | None = None,
        description: str = "",
        kind: str = "node",
        session_id: str | None = None,
    ) -> Component:
        """Create the owner's component or replace its code (the version number goes up by one).

        `session_id` is recorded as given: a save without one (the API, the canvas) makes the
        component the owner's own, even one the assistant registered before."""
        row = await self._upsert(
            name, code, owner_id, spec, description, kind, session_id, only_over_session=False
        )
        assert row is not None
        return row

    async def save_for_session(
        self,
        name: str,
        code: str,
        *,
        owner_id: str | None,
        session_id: str,
        spec: dict[str, Any] | None = None,
        description: str = "",
        kind: str = "node",
    ) -> Component | None:
        """Save a component the assistant generated in `session_id`, replacing one of the same name
        that an assistant session registered (last write wins); None, and nothing written, when the
        owner has a component of that name of their own (`session_id` NULL). One statement: the
        check and the write cannot interleave with another save."""
        return await self._upsert(
            name, code, owner_id, spec, description, kind, session_id, only_over_session=True
        )

    async def _upsert(
        self,
        name: str,
        code: str,
        owner_id: str | None,
        spec: dict[str, Any] | None,
        description: str,
        kind: str,
        session_id: str | None,
        *,
        only_over_session: bool,
    ) -> Component | None:
        now = time.time()
        async with self.sessionmaker.begin() as session:
            stmt = upsert(session, Component).values(
                id=secrets.token_hex(16),
                owner_id=owner_id,
                name=name,
                kind=kind,
                description=description,
                code=code,
                spec=spec or {},
                version=1,
                session_id=session_id,
                created_at=now,
                updated_at=now,
            )
            # NULL owners are distinct in (owner_id, name): the shared ones conflict on the
            # partial unique index `name WHERE owner_id IS NULL`.
            target: dict[str, Any] = (
                {"index_elements": [Component.name], "index_where": Component.owner_id.is_(None)}
                if owner_id is None
                else {"index_elements": [Component.owner_id, Component.name]}
            )
            if only_over_session:
                target["where"] = Component.session_id.is_not(None)
            stmt = stmt.on_conflict_do_update(
                **target,
                set_={
                    "kind": kind,
                    "description": description,
                    "code": code,
                    "spec": spec or {},
                    "version": Component.version + 1,
                    "session_id": session_id,
                    "updated_at": now,
                },
            ).returning(Component)
            row: Component | None = (
                await session.execute(stmt, execution_options={"populate_existing": True})
            ).scalar_one_or_none()
            return row

    async def get(self, name: str, *, owner_id: str | None = None) -> Component | None:
        return await self._one(select(Component).where(self._owned(owner_id), Component.name == name))

    async def list_components(
        self, *, owner_id: str | None = None, kind: str | None = None
    ) -> list[Component]:
        stmt = select(Component).where(self._owned(owner_id)).order_by(Component.name)
        if kind is not None:
            stmt = stmt.where(Component.kind == kind)
        return await self._all(stmt)

    async def delete(self, name: str, *, owner_id: str | None = None) -> bool:
        return await self._write(delete(Component).where(self._owned(owner_id), Component.name == name)) > 0

    async def delete_session_components(self, owner_id: str | None, session_id: str | None = None) -> int:
        """Delete the components the assistant registered for the owner: those of `session_id`, or
        of every session when it is None. The owner's own components (`session_id` NULL) stay.
        Returns how many were deleted."""
        stmt = delete(Component).where(self._owned(owner_id), Component.session_id.is_not(None))
        if session_id is not None:
            stmt = stmt.where(Component.session_id == session_id)
        return await self._write(stmt)

    async def claim_unowned(self, user_id: str) -> int:
        """Give deployment-wide components (made before users existed) to `user_id` (the local
        admin); one whose name the user has already stays deployment-wide."""
        mine = select(Component.name).where(Component.owner_id == user_id)
        return await self._write(
            update(Component)
            .where(Component.owner_id.is_(None), Component.name.not_in(mine))
            .values(owner_id=user_id)
        )
