"""Users (the accounts behind API keys and owned flows/components)."""

from __future__ import annotations

from sqlalchemy import delete, select

from plait.store.models import User
from plait.store.repos.base import Repo


class UserRepo(Repo):
    async def create(
        self,
        *,
        email: str | None = None,
        name: str = "",
        password_hash: str | None = None,
        is_admin: bool = False,
    ) -> User:
        return await self._add(User(email=email, name=name, password_hash=password_hash, is_admin=is_admin))

    async def get(self, user_id: str) -> User | None:
        return await self._one(select(User).where(User.id == user_id))

    async def get_by_email(self, email: str) -> User | None:
        return await self._one(select(User).where(User.email == email))

    async def list_users(self, *, limit: int = 100, offset: int = 0) -> list[User]:
        return await self._all(select(User).order_by(User.created_at, User.id).limit(limit).offset(offset))

    async def delete(self, user_id: str) -> bool:
        return await self._write(delete(User).where(User.id == user_id)) > 0
