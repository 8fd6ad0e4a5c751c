"""Browser sessions and one-time sign-in tokens: kept as their SHA-256, like API keys."""

from __future__ import annotations

import secrets

from sqlalchemy import delete, select

from plait.store.models import AuthToken
from plait.store.repos.base import Repo, now_or, sha256_hex

SESSION = "session"
SIGNIN = "signin"


class AuthTokenRepo(Repo):
    async def create(self, kind: str, user_id: str, *, ttl_s: float, now: float | None = None) -> str:
        """A new random token of `kind` for the user; returns the token (only its hash is stored)."""
        token = secrets.token_urlsafe(32)
        at = now_or(now)
        await self._add(
            AuthToken(
                token_hash=sha256_hex(token), kind=kind, user_id=user_id, created_at=at, expires_at=at + ttl_s
            )
        )
        return token

    async def check(self, kind: str, token: str, *, now: float | None = None) -> str | None:
        """The user id of a live token of `kind`, or None."""
        if not token:
            return None
        row = await self._one(
            select(AuthToken).where(AuthToken.token_hash == sha256_hex(token), AuthToken.kind == kind)
        )
        if row is None or row.expires_at <= now_or(now):
            return None
        return row.user_id

    async def consume(self, kind: str, token: str, *, now: float | None = None) -> str | None:
        """As `check`, deleting the token: a second use finds nothing (one delete wins a race)."""
        user_id = await self.check(kind, token, now=now)
        if user_id is None:
            return None
        deleted = await self._write(
            delete(AuthToken).where(AuthToken.token_hash == sha256_hex(token), AuthToken.kind == kind)
        )
        return user_id if deleted else None

    async def revoke(self, kind: str, token: str) -> bool:
        return (
            await self._write(
                delete(AuthToken).where(AuthToken.token_hash == sha256_hex(token), AuthToken.kind == kind)
            )
            > 0
        )

    async def revoke_user(self, user_id: str) -> int:
        """Every session and sign-in token of a user (disabled, or a password reset)."""
        return await self._write(delete(AuthToken).where(AuthToken.user_id == user_id))

    async def purge_expired(self, *, now: float | None = None) -> int:
        return await self._write(delete(AuthToken).where(AuthToken.expires_at <= now_or(now)))
