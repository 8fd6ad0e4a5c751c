"""Users (the accounts behind API keys, browser sessions and owned flows, variables, components)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select, update

from plait.store.models import User
from plait.store.repos.base import Repo


class UserRepo(Repo):
    async def create(
        self,
        *,
        email: str | None = None,
        name: str = "",
        password_hash: str | None = None,
        role: str = "editor",
        user_id: str | None = None,
    ) -> User:
        row = User(email=email, name=name, password_hash=password_hash, role=role)
        if user_id is not None:
            row.id = user_id
        return await self._add(row)

    async def get(self, user_id: str) -> User | None:
        return await self._one(select(User).where(User.id == user_id))

    async def get_by_email(self, email: str) -> User | None:
        return await self._one(select(User).where(User.email == email))

    async def first_admin(self) -> User | None:
        """The oldest enabled admin (the local admin on a single-user deployment)."""
        stmt = (
            select(User)
            .where(User.role == "admin", User.disabled.is_(False))
            .order_by(User.created_at, User.id)
            .limit(1)
        )
        return await self._one(stmt)

    async def list_users(self, *, limit: int = 100, offset: int = 0) -> list[User]:
        return await self._all(select(User).order_by(User.created_at, User.id).limit(limit).offset(offset))

    async def update(self, user_id: str, **changes: Any) -> User | None:
        """Change `name`, `email`, `role`, `disabled` or `password_hash`; the row after, or None."""
        allowed = {"name", "email", "role", "disabled", "password_hash"}
        unknown = set(changes) - allowed
        if unknown:
            raise ValueError(f"cannot change {sorted(unknown)} of a user")
        if changes:
            await self._write(update(User).where(User.id == user_id).values(**changes))
        return await self.get(user_id)

    async def delete(self, user_id: str) -> bool:
        return await self._write(delete(User).where(User.id == user_id)) > 0
