"""Users, their API keys, browser sessions and sign-in links: the use cases behind `/api/v1/users`,
`/api/v1/api-keys`, `/api/v1/auth/*` and `plait admin`.

Credentials, and what each one resolves to (`Principal`):
- an API key (`x-api-key` or a bearer token): its user, with the key's scopes;
- the deployment key (`PLAIT_API_KEY`), and every request when auth is off: the local admin;
- a session cookie (set by a password login or a sign-in link): its user, every scope of the role.

The local admin is the first admin, made on first start (`admin@localhost`, no password: it signs
in through the one-time link `plait serve` prints, or `plait admin link`). Passwords are hashed
with argon2 (argon2-cffi's defaults, RFC 9106's low-memory profile).
"""

from __future__ import annotations

import hmac
import time
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from plait.service.access import ALL_SCOPES, ROLE_SCOPES, Principal, Role, Scope, principal
from plait.service.errors import Conflict, Invalid, NotFound, TooManyAttempts, Unauthorized
from plait.service.settings import Settings
from plait.store import Store
from plait.store.models import ApiKey, User
from plait.store.repos import SESSION, SIGNIN

LOCAL_ADMIN_EMAIL = "admin@localhost"
KEY_CACHE_S = 30.0
LOGIN_FAILURES = 5  # wrong passwords for one email within LOGIN_WINDOW_S ...
LOGIN_WINDOW_S = 300.0  # ... make it wait until the oldest of them is this old
SESSION_TTL_S = 14 * 24 * 3600.0
SIGNIN_TTL_S = 24 * 3600.0
MIN_PASSWORD = 8

_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise Invalid(f"a password needs at least {MIN_PASSWORD} characters", code="weak_password")
    if len(password) > 1024:
        raise Invalid("a password can have at most 1024 characters", code="invalid")
    return _hasher.hash(password)


def user_view(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "role": user.role,
        "disabled": user.disabled,
        "created_at": user.created_at,
    }


def key_view(row: ApiKey) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "prefix": row.prefix,
        "scopes": sorted(row.scopes) if row.scopes is not None else sorted(ALL_SCOPES),
        "user_id": row.user_id,
        "created_at": row.created_at,
        "last_used_at": row.last_used_at,
    }


def _scopes(scopes: list[str] | None) -> list[str]:
    if not scopes:
        raise Invalid("give the key at least one scope: read, write, run or admin", code="invalid")
    unknown = [s for s in scopes if s not in Scope._value2member_map_]
    if unknown:
        raise Invalid(f"unknown scope(s) {unknown}: use read, write, run or admin", code="invalid")
    return sorted(set(scopes))


def _role(role: str) -> str:
    if role not in Role._value2member_map_:
        raise Invalid(f"unknown role {role!r}: use admin, editor or viewer", code="invalid")
    return role


class UserService:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self._key_cache: dict[str, tuple[float, Principal]] = {}
        self._local_admin: Principal | None = None
        self._login_failures: dict[str, list[float]] = {}  # email -> times of recent failures

    # -- who is calling -------------------------------------------------------------------------

    async def local_admin(self) -> Principal:
        """The deployment's own admin (what PLAIT_API_KEY and auth-off requests act as)."""
        if self._local_admin is None:
            user = await self.ensure_local_admin()
            self._local_admin = Principal(user.id, Role.ADMIN, ALL_SCOPES, "deployment")
        return self._local_admin

    async def ensure_local_admin(self) -> User:
        """The first admin, made (as `admin@localhost`) when the deployment has none; it also
        takes over what was made before users existed (flows, keys and components without an
        owner). Safe to race: the email is unique."""
        user = await self.store.users.first_admin()
        if user is None:
            user = await self.store.users.get_by_email(LOCAL_ADMIN_EMAIL)
            if user is None:
                try:
                    user = await self.store.users.create(email=LOCAL_ADMIN_EMAIL, name="Admin", role="admin")
                except Exception:  # noqa: BLE001 - another process made it first
                    user = await self.store.users.get_by_email(LOCAL_ADMIN_EMAIL)
                    if user is None:
                        raise
            elif user.role != "admin" or user.disabled:
                user = await self.store.users.update(user.id, role="admin", disabled=False) or user
        await self.store.api_keys.claim_unowned(user.id)
        await self.store.flows.claim_unowned(user.id)
        await self.store.components.claim_unowned(user.id)
        return user

    async def check_key(self, key: str | None) -> Principal:
        """The caller behind an API key; raises Unauthorized."""
        if not key:
            raise Unauthorized(
                "sign in, or send an API key (x-api-key header or Authorization: Bearer)",
                hint="open the sign-in link `plait serve` printed, or run `plait admin link`",
            )
        if self.settings.api_key and hmac.compare_digest(key.encode(), self.settings.api_key.encode()):
            return await self.local_admin()
        now = time.monotonic()
        cached = self._key_cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        row = await self.store.api_keys.verify(key, touch=False)
        user = None if row is None else await self._user_for_key(row)
        if row is None or user is None or user.disabled:
            raise Unauthorized("invalid API key", hint="keys are shown once; create a new one if it is lost")
        who = principal(user.id, user.role, row.scopes, via="key", key_id=row.id)
        if len(self._key_cache) > 1000:
            self._key_cache.clear()
        self._key_cache[key] = (now + KEY_CACHE_S, who)
        return who

    async def _user_for_key(self, row: ApiKey) -> User | None:
        if row.user_id is None:  # a key made before users existed: the local admin's
            return await self.ensure_local_admin()
        return await self.store.users.get(row.user_id)

    async def resolve(self, key: str | None, session: str | None) -> Principal | None:
        """The caller of a request: its API key when it has one (Unauthorized when invalid), else
        its session cookie; None when it has neither. Auth off: always the local admin."""
        if not self.settings.require_auth:
            return await self.local_admin()
        if key:
            return await self.check_key(key)
        return await self.check_session(session)

    async def check_session(self, token: str | None) -> Principal | None:
        """The caller behind a session cookie, or None (no cookie, expired, user disabled)."""
        if not token:
            return None
        user_id = await self.store.auth_tokens.check(SESSION, token)
        user = None if user_id is None else await self.store.users.get(user_id)
        if user is None or user.disabled:
            return None
        return principal(user.id, user.role, None, via="session")

    def forget_credentials(self) -> None:
        """Drop cached key lookups (a key revoked, a user disabled or their role changed)."""
        self._key_cache.clear()

    # -- signing in ------------------------------------------------------------------------------

    async def login(self, email: str, password: str) -> tuple[User, str]:
        """Check a password; returns the user and a new session token. One message for every
        failure (no oracle for which emails exist); the hash is checked even when none exists.
        After `LOGIN_FAILURES` wrong tries for one email in `LOGIN_WINDOW_S`, that email waits
        (429) whatever the password: guessing costs minutes, not milliseconds."""
        email = email.strip().lower()
        now = time.monotonic()
        recent = [t for t in self._login_failures.get(email, ()) if t > now - LOGIN_WINDOW_S]
        if len(recent) >= LOGIN_FAILURES:
            wait = int(recent[0] + LOGIN_WINDOW_S - now) + 1
            raise TooManyAttempts(
                f"too many wrong passwords for this email; try again in {wait} s",
                hint="an admin can set a new password with `plait admin set-password EMAIL`",
            )
        user = await self.store.users.get_by_email(email)
        stored = user.password_hash if user is not None and not user.disabled else None
        try:
            ok = _hasher.verify(stored or _DUMMY_HASH, password) and stored is not None
        except (VerificationError, InvalidHashError):
            ok = False
        if not ok or user is None:
            if len(self._login_failures) > 10_000:
                self._login_failures.clear()
            self._login_failures[email] = [*recent, now]
            raise Unauthorized("wrong email or password")
        self._login_failures.pop(email, None)
        if stored is not None and _hasher.check_needs_rehash(stored):
            await self.store.users.update(user.id, password_hash=_hasher.hash(password))
        return user, await self.store.auth_tokens.create(SESSION, user.id, ttl_s=SESSION_TTL_S)

    async def signin_link_token(self, user_id: str | None = None) -> str:
        """A one-time sign-in token (24 h) for a user (default: the local admin)."""
        if user_id is None:
            user_id = (await self.ensure_local_admin()).id
        return await self.store.auth_tokens.create(SIGNIN, user_id, ttl_s=SIGNIN_TTL_S)

    async def redeem_signin(self, token: str) -> str | None:
        """Use a sign-in token; a new session token, or None when it is unknown, used or expired."""
        user_id = await self.store.auth_tokens.consume(SIGNIN, token)
        user = None if user_id is None else await self.store.users.get(user_id)
        if user is None or user.disabled:
            return None
        return await self.store.auth_tokens.create(SESSION, user.id, ttl_s=SESSION_TTL_S)

    async def logout(self, token: str | None) -> None:
        if token:
            await self.store.auth_tokens.revoke(SESSION, token)

    # -- users -----------------------------------------------------------------------------------

    async def me(self, who: Principal) -> dict[str, Any]:
        user = await self.store.users.get(who.user_id)
        if user is None:
            raise Unauthorized("this account no longer exists")
        return {**user_view(user), "scopes": sorted(who.scopes), "auth": who.via}

    async def create_user(
        self, *, email: str, name: str = "", role: str = "editor", password: str | None = None
    ) -> dict[str, Any]:
        email = email.strip().lower()
        if "@" not in email or len(email) > 320:
            raise Invalid(f"{email!r} is not an email address", code="invalid")
        if await self.store.users.get_by_email(email) is not None:
            raise Conflict(f"a user with the email {email!r} exists already")
        password_hash = hash_password(password) if password else None
        user = await self.store.users.create(
            email=email, name=name, role=_role(role), password_hash=password_hash
        )
        return user_view(user)

    async def list_users(self) -> list[dict[str, Any]]:
        return [user_view(u) for u in await self.store.users.list_users(limit=10_000)]

    async def update_user(
        self,
        who: Principal,
        user_id: str,
        *,
        name: str | None = None,
        role: str | None = None,
        disabled: bool | None = None,
        password: str | None = None,
    ) -> dict[str, Any]:
        user = await self.store.users.get(user_id)
        if user is None:
            raise NotFound(f"no user {user_id!r}")
        changes: dict[str, Any] = {}
        if name is not None:
            changes["name"] = name
        if role is not None:
            changes["role"] = _role(role)
        if disabled is not None:
            changes["disabled"] = disabled
        if password is not None:
            changes["password_hash"] = hash_password(password)
        if user_id == who.user_id and (changes.get("disabled") or changes.get("role", "admin") != "admin"):
            raise Conflict("you cannot disable yourself or take away your own admin role")
        updated = await self.store.users.update(user_id, **changes)
        assert updated is not None
        if disabled or role is not None or password is not None:
            await self.store.auth_tokens.revoke_user(user_id)  # sessions end; keys re-checked
            self.forget_credentials()
        return user_view(updated)

    async def set_password(self, email: str, password: str) -> dict[str, Any]:
        """`plait admin set-password`: a new password for a user (their sessions end)."""
        user = await self.store.users.get_by_email(email.strip().lower())
        if user is None:
            raise NotFound(f"no user with the email {email!r}")
        updated = await self.store.users.update(user.id, password_hash=hash_password(password))
        await self.store.auth_tokens.revoke_user(user.id)
        assert updated is not None
        return user_view(updated)

    async def user_by_email(self, email: str) -> User | None:
        return await self.store.users.get_by_email(email.strip().lower())

    # -- API keys --------------------------------------------------------------------------------

    async def create_key(
        self, user_id: str, name: str, scopes: list[str], *, allowed: frozenset[Scope]
    ) -> dict[str, Any]:
        """A new key for a user (shown once); its scopes cannot exceed `allowed` (the user's role,
        and the scopes of the credential asking for it)."""
        wanted = _scopes(scopes)
        beyond = [s for s in wanted if s not in {str(a) for a in allowed}]
        if beyond:
            raise Invalid(
                f"this key cannot have the scope(s) {beyond}: you may give it only {sorted(allowed)}",
                code="invalid",
            )
        row, key = await self.store.api_keys.create(name[:200], user_id=user_id, scopes=wanted)
        return {**key_view(row), "key": key}

    async def create_key_for(self, user_id: str, name: str, scopes: list[str]) -> dict[str, Any]:
        user = await self.store.users.get(user_id)
        if user is None:
            raise NotFound(f"no user {user_id!r}")
        return await self.create_key(user.id, name, scopes, allowed=ROLE_SCOPES[Role(user.role)])

    async def list_keys(self, user_id: str) -> list[dict[str, Any]]:
        return [key_view(r) for r in await self.store.api_keys.list_keys(user_id=user_id)]

    async def revoke_key(self, who: Principal, key_id: str) -> None:
        """Revoke one of the caller's keys (an admin: anyone's)."""
        owner = None if who.is_admin else who.user_id
        if not await self.store.api_keys.revoke(key_id, user_id=owner):
            raise NotFound(f"no API key {key_id!r}")
        self.forget_credentials()


# A hash of a random password: `login` verifies against it when the email is unknown, so an
# unknown email costs the same time as a wrong password.
_DUMMY_HASH = _hasher.hash("plait: no such user, no such password")
