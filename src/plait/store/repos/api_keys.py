"""API keys: shown once at creation, kept as their SHA-256."""

from __future__ import annotations

import hmac
import secrets

from sqlalchemy import select, update

from plait.store.models import ApiKey
from plait.store.repos.base import Repo, now_or, sha256_hex


class ApiKeyRepo(Repo):
    """API keys are shown once, at creation; the database keeps their SHA-256 and a short prefix
    (for listings). Keys are 256-bit random tokens, so a fast hash is enough."""

    KEY_PREFIX = "plait_"
    SHOWN_PREFIX_LEN = 12

    @staticmethod
    def hash_key(key: str) -> str:
        return sha256_hex(key)

    async def create(
        self, name: str = "", *, user_id: str | None = None, scopes: list[str] | None = None
    ) -> tuple[ApiKey, str]:
        """Returns the row and the plaintext key (not stored anywhere). `scopes` None: every scope."""
        key = self.KEY_PREFIX + secrets.token_urlsafe(32)
        row = ApiKey(
            user_id=user_id,
            name=name,
            prefix=key[: self.SHOWN_PREFIX_LEN],
            key_hash=self.hash_key(key),
            scopes=scopes,
        )
        return await self._add(row), key

    async def verify(self, key: str, *, touch: bool = True, now: float | None = None) -> ApiKey | None:
        """The active key matching `key`, or None; records `last_used_at` when `touch`."""
        if not key:
            return None
        digest = self.hash_key(key)
        if touch:
            rows = await self._write_returning(
                update(ApiKey)
                .where(ApiKey.key_hash == digest, ApiKey.revoked.is_(False))
                .values(last_used_at=now_or(now))
                .returning(ApiKey)
            )
            row: ApiKey | None = rows[0] if rows else None
        else:
            row = await self._one(select(ApiKey).where(ApiKey.key_hash == digest, ApiKey.revoked.is_(False)))
        if row is None or not hmac.compare_digest(row.key_hash, digest):
            return None
        return row

    async def get(self, key_id: str) -> ApiKey | None:
        return await self._one(select(ApiKey).where(ApiKey.id == key_id))

    async def list_keys(self, *, user_id: str | None = None, include_revoked: bool = False) -> list[ApiKey]:
        stmt = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
        if user_id is not None:
            stmt = stmt.where(ApiKey.user_id == user_id)
        if not include_revoked:
            stmt = stmt.where(ApiKey.revoked.is_(False))
        return await self._all(stmt)

    async def revoke(self, key_id: str, *, user_id: str | None = None, now: float | None = None) -> bool:
        """Revoke a key (`user_id`: only if it is that user's)."""
        stmt = update(ApiKey).where(ApiKey.id == key_id, ApiKey.revoked.is_(False))
        if user_id is not None:
            stmt = stmt.where(ApiKey.user_id == user_id)
        return await self._write(stmt.values(revoked=True, revoked_at=now_or(now))) > 0

    async def claim_unowned(self, user_id: str) -> int:
        """Give keys made before users existed (no user) to `user_id` (the local admin)."""
        return await self._write(update(ApiKey).where(ApiKey.user_id.is_(None)).values(user_id=user_id))
