"""Repositories: the narrow async operations the service layer and the workers need.

Each method is one short transaction. Methods that return rows return ORM objects detached from
their session (sessions are made with `expire_on_commit=False`): read them freely, change them
only through a repository. Times are epoch seconds; `now` parameters exist for tests and for
callers that must use one clock for a whole decision.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.sql.elements import ColumnElement

from plait.engine.events import Event
from plait.store.checkpointer import event_rows, row_to_event
from plait.store.crypto import SecretBox
from plait.store.models import (
    ApiKey,
    Component,
    Decision,
    FlowRow,
    FlowVersion,
    HumanTask,
    NodeRunRow,
    Run,
    RunEvent,
    Trigger,
    User,
    Variable,
)

Sessions = async_sessionmaker[AsyncSession]
REDACTED = "********"


def _now(now: float | None) -> float:
    return time.time() if now is None else now


def _upsert(session: AsyncSession, model: Any) -> Any:
    name = session.bind.dialect.name if session.bind is not None else ""
    if name == "postgresql":
        return postgresql.insert(model)
    if name == "sqlite":
        return sqlite.insert(model)
    raise NotImplementedError(f"plait.store supports SQLite and PostgreSQL, not {name!r}")


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Repo:
    def __init__(self, sessionmaker: Sessions) -> None:
        self.sessionmaker = sessionmaker

    async def _one(self, stmt: Any) -> Any:
        async with self.sessionmaker() as session:
            return (await session.execute(stmt)).scalar_one_or_none()

    async def _all(self, stmt: Any) -> list[Any]:
        async with self.sessionmaker() as session:
            return list((await session.execute(stmt)).scalars().all())

    async def _add(self, obj: Any) -> Any:
        async with self.sessionmaker.begin() as session:
            session.add(obj)
        return obj

    async def _write(self, stmt: Any) -> int:
        """Run an UPDATE/DELETE; returns the number of rows it matched."""
        async with self.sessionmaker.begin() as session:
            result = await session.execute(stmt, execution_options={"synchronize_session": False})
            return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def _write_returning(self, stmt: Any) -> list[Any]:
        async with self.sessionmaker.begin() as session:
            result = await session.execute(stmt, execution_options={"synchronize_session": False})
            return list(result.scalars().all())


# --------------------------------------------------------------------------------------------- users
class UserRepo(_Repo):
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

    async def list(self, *, limit: int = 100, offset: int = 0) -> list[User]:
        return await self._all(select(User).order_by(User.created_at, User.id).limit(limit).offset(offset))

    async def delete(self, user_id: str) -> bool:
        return await self._write(delete(User).where(User.id == user_id)) > 0


# ------------------------------------------------------------------------------------------ api keys
class ApiKeyRepo(_Repo):
    """API keys are shown once, at creation; the database keeps their SHA-256 and a short prefix
    (for listings). Keys are 256-bit random tokens, so a fast hash is enough."""

    KEY_PREFIX = "plait_"
    SHOWN_PREFIX_LEN = 12

    @staticmethod
    def hash_key(key: str) -> str:
        return sha256_hex(key)

    async def create(self, name: str = "", *, user_id: str | None = None) -> tuple[ApiKey, str]:
        """Returns the row and the plaintext key (not stored anywhere)."""
        key = self.KEY_PREFIX + secrets.token_urlsafe(32)
        row = ApiKey(
            user_id=user_id, name=name, prefix=key[: self.SHOWN_PREFIX_LEN], key_hash=self.hash_key(key)
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
                .values(last_used_at=_now(now))
                .returning(ApiKey)
            )
            row = rows[0] if rows else None
        else:
            row = await self._one(select(ApiKey).where(ApiKey.key_hash == digest, ApiKey.revoked.is_(False)))
        if row is None or not hmac.compare_digest(row.key_hash, digest):
            return None
        return row

    async def get(self, key_id: str) -> ApiKey | None:
        return await self._one(select(ApiKey).where(ApiKey.id == key_id))

    async def list(self, *, user_id: str | None = None, include_revoked: bool = False) -> list[ApiKey]:
        stmt = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
        if user_id is not None:
            stmt = stmt.where(ApiKey.user_id == user_id)
        if not include_revoked:
            stmt = stmt.where(ApiKey.revoked.is_(False))
        return await self._all(stmt)

    async def revoke(self, key_id: str, *, now: float | None = None) -> bool:
        return (
            await self._write(
                update(ApiKey)
                .where(ApiKey.id == key_id, ApiKey.revoked.is_(False))
                .values(revoked=True, revoked_at=_now(now))
            )
            > 0
        )


# --------------------------------------------------------------------------------------------- flows
class FlowRepo(_Repo):
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

    async def list(self, *, owner_id: str | None = None, limit: int = 100, offset: int = 0) -> list[FlowRow]:
        stmt = select(FlowRow).order_by(FlowRow.updated_at.desc(), FlowRow.id).limit(limit).offset(offset)
        if owner_id is not None:
            stmt = stmt.where(FlowRow.owner_id == owner_id)
        return await self._all(stmt)

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


# ---------------------------------------------------------------------------------------------- runs
class RunRepo(_Repo):
    """Run rows and the lease that makes one process the owner of a run.

    A lease is `(lease_owner, lease_until)`. The owner renews it while it executes the run (a
    heartbeat, e.g. every ttl/3) and releases it when the run stops; a run whose lease expired
    while `running` is one whose owner died (`find_expired_running`), and another process may
    `acquire_lease` it and resume it. Every lease method is a single conditional UPDATE, atomic on
    SQLite and PostgreSQL."""

    async def create(
        self,
        run_id: str,
        flow_id: str,
        *,
        inputs: dict[str, Any] | None = None,
        version: int | None = None,
        status: str = "queued",
        parent_run_id: str | None = None,
        variables: dict[str, Any] | None = None,
        now: float | None = None,
        document: dict[str, Any] | None = None,
    ) -> Run:
        """A run the service accepted but the engine has not begun (the checkpointer's `begin`
        then sets it running). Raises `IntegrityError` when the id is taken."""
        row = Run(
            id=run_id,
            flow_id=flow_id,
            version=version,
            document=document,
            status=status,
            inputs=inputs or {},
            variables=variables or {},
            parent_run_id=parent_run_id,
            created_at=_now(now),
        )
        return await self._add(row)

    async def get(self, run_id: str) -> Run | None:
        return await self._one(select(Run).where(Run.id == run_id))

    async def list(
        self,
        *,
        flow_id: str | None = None,
        status: str | Sequence[str] | None = None,
        parent_run_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Run]:
        """Newest first."""
        stmt = select(Run).order_by(Run.created_at.desc(), Run.id.desc()).limit(limit).offset(offset)
        if flow_id is not None:
            stmt = stmt.where(Run.flow_id == flow_id)
        if isinstance(status, str):
            stmt = stmt.where(Run.status == status)
        elif status is not None:
            stmt = stmt.where(Run.status.in_(list(status)))
        if parent_run_id is not None:
            stmt = stmt.where(Run.parent_run_id == parent_run_id)
        return await self._all(stmt)

    async def set_status(
        self,
        run_id: str,
        status: str,
        *,
        error: str | None = None,
        expected: str | Sequence[str] | None = None,
        now: float | None = None,
    ) -> bool:
        """Set the status (e.g. a queued run cancelled before it started); with `expected`, only
        if the current status is one of those (compare-and-set). Terminal statuses set finished_at."""
        values: dict[str, Any] = {"status": status}
        if error is not None:
            values["error"] = error
        if status in ("completed", "failed", "cancelled"):
            values["finished_at"] = _now(now)
        stmt = update(Run).where(Run.id == run_id).values(values)
        if isinstance(expected, str):
            stmt = stmt.where(Run.status == expected)
        elif expected is not None:
            stmt = stmt.where(Run.status.in_(list(expected)))
        return await self._write(stmt) > 0

    async def request_cancel(self, run_id: str) -> bool:
        """Flag the run for cancellation (its owner polls `is_cancel_requested`); False if unknown."""
        return await self._write(update(Run).where(Run.id == run_id).values(cancel_requested=True)) > 0

    async def is_cancel_requested(self, run_id: str) -> bool:
        return bool(await self._one(select(Run.cancel_requested).where(Run.id == run_id)))

    async def node_runs(self, run_id: str) -> list[NodeRunRow]:
        """Every node transition of the run, in the order they were saved."""
        return await self._all(select(NodeRunRow).where(NodeRunRow.run_id == run_id).order_by(NodeRunRow.id))

    async def delete(self, run_id: str) -> bool:
        """Delete a run with its node runs, events, human tasks and decisions."""
        return await self._write(delete(Run).where(Run.id == run_id)) > 0

    # -------------------------------------------------------------------------------- leases
    @staticmethod
    def _lease_free(owner: str, now: float) -> ColumnElement[bool]:
        return or_(
            Run.lease_owner.is_(None),
            Run.lease_until.is_(None),
            Run.lease_until < now,
            Run.lease_owner == owner,
        )

    async def acquire_lease(self, run_id: str, owner: str, ttl_s: float, *, now: float | None = None) -> bool:
        """Take the run's lease for `ttl_s` seconds if nobody holds it, it expired, or `owner`
        already holds it. True when `owner` now holds it."""
        t = _now(now)
        stmt = (
            update(Run)
            .where(Run.id == run_id, self._lease_free(owner, t))
            .values(lease_owner=owner, lease_until=t + ttl_s)
        )
        return await self._write(stmt) > 0

    async def renew_lease(self, run_id: str, owner: str, ttl_s: float, *, now: float | None = None) -> bool:
        """Extend the lease; False if `owner` lost it (another process took it over: stop)."""
        t = _now(now)
        stmt = update(Run).where(Run.id == run_id, Run.lease_owner == owner).values(lease_until=t + ttl_s)
        return await self._write(stmt) > 0

    async def release_lease(self, run_id: str, owner: str) -> bool:
        stmt = (
            update(Run)
            .where(Run.id == run_id, Run.lease_owner == owner)
            .values(lease_owner=None, lease_until=None)
        )
        return await self._write(stmt) > 0

    async def find_expired_running(
        self, now: float | None = None, *, limit: int = 100, statuses: Iterable[str] = ("running",)
    ) -> list[Run]:
        """Runs in `statuses` whose lease expired or that have no lease (their owner died):
        candidates for crash recovery (`acquire_lease`, then resume). Oldest first."""
        t = _now(now)
        stmt = (
            select(Run)
            .where(Run.status.in_(list(statuses)), or_(Run.lease_until.is_(None), Run.lease_until < t))
            .order_by(Run.created_at, Run.id)
            .limit(limit)
        )
        return await self._all(stmt)


# -------------------------------------------------------------------------------------------- events
class EventRepo(_Repo):
    async def list(self, run_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Event]:
        """Events with seq > after_seq, in order (`Last-Event-ID` replay)."""
        stmt = (
            select(RunEvent).where(RunEvent.run_id == run_id, RunEvent.seq > after_seq).order_by(RunEvent.seq)
        )
        if limit is not None:
            stmt = stmt.limit(limit)
        return [row_to_event(run_id, r) for r in await self._all(stmt)]

    async def last_seq(self, run_id: str) -> int:
        return int(await self._one(select(func.max(RunEvent.seq)).where(RunEvent.run_id == run_id)) or 0)

    async def append(self, run_id: str, events: Sequence[Event]) -> None:
        """Store events produced outside the checkpointer (seq must be new for the run)."""
        if not events:
            return
        async with self.sessionmaker.begin() as session:
            await session.execute(insert(RunEvent.__table__), event_rows(run_id, events))
            await session.execute(
                update(Run)
                .where(Run.id == run_id, Run.last_seq < events[-1].seq)
                .values(last_seq=events[-1].seq),
                execution_options={"synchronize_session": False},
            )


# --------------------------------------------------------------------------------------- human tasks
class HumanTaskRepo(_Repo):
    """Tasks a paused run waits on. Status: pending -> submitted | expired | cancelled; every
    transition is one conditional UPDATE, so a task is answered at most once."""

    async def create(
        self,
        run_id: str,
        node_id: str,
        *,
        message: str = "",
        fields: Sequence[Any] = (),
        prefill: Mapping[str, Any] | None = None,
        actions: Sequence[str] = ("submit",),
        assignees: Sequence[str] = (),
        blocking: bool = True,
        expires_at: float | None = None,
        kind: str = "human",
        token: str | None = None,
        now: float | None = None,
    ) -> HumanTask:
        row = HumanTask(
            token=token or secrets.token_urlsafe(24),
            run_id=run_id,
            node_id=node_id,
            kind=kind,
            status="pending",
            message=message,
            fields=list(fields),
            prefill=dict(prefill or {}),
            actions=list(actions),
            assignees=list(assignees),
            blocking=blocking,
            expires_at=expires_at,
            created_at=_now(now),
        )
        return await self._add(row)

    async def create_from_interrupt(self, run_id: str, interrupt: Mapping[str, Any]) -> HumanTask:
        """A task from one of the engine's interrupts (`RunResult.interrupts` / the `waiting` event)."""
        payload = interrupt.get("payload") or {}
        if not isinstance(payload, dict):
            payload = {"message": str(payload)}
        return await self.create(
            run_id,
            str(interrupt.get("node_id") or interrupt.get("id")),
            message=str(payload.get("message") or ""),
            fields=payload.get("fields") or [],
            prefill=payload.get("prefill") or {},
            actions=payload.get("actions") or ["submit"],
            assignees=payload.get("assignees") or [],
            blocking=bool(interrupt.get("blocking", True)),
            expires_at=interrupt.get("expires_at"),
            kind=str(interrupt.get("kind") or "human"),
            now=interrupt.get("created_at"),
        )

    async def get(self, token: str) -> HumanTask | None:
        return await self._one(select(HumanTask).where(HumanTask.token == token))

    async def list(
        self, *, run_id: str | None = None, status: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[HumanTask]:
        stmt = select(HumanTask).order_by(HumanTask.created_at, HumanTask.token).limit(limit).offset(offset)
        if run_id is not None:
            stmt = stmt.where(HumanTask.run_id == run_id)
        if status is not None:
            stmt = stmt.where(HumanTask.status == status)
        return await self._all(stmt)

    async def pending_for_node(self, run_id: str, node_id: str) -> HumanTask | None:
        return await self._one(
            select(HumanTask)
            .where(HumanTask.run_id == run_id, HumanTask.node_id == node_id, HumanTask.status == "pending")
            .order_by(HumanTask.created_at.desc())
            .limit(1)
        )

    async def submit(
        self, token: str, result: dict[str, Any], *, now: float | None = None
    ) -> HumanTask | None:
        """Record the answer if the task is still pending and not past its deadline; else None
        (then `get` tells whether it is unknown, already answered, expired or cancelled)."""
        t = _now(now)
        rows = await self._write_returning(
            update(HumanTask)
            .where(
                HumanTask.token == token,
                HumanTask.status == "pending",
                or_(HumanTask.expires_at.is_(None), HumanTask.expires_at > t),
            )
            .values(status="submitted", result=result, resolved_at=t)
            .returning(HumanTask)
        )
        return rows[0] if rows else None

    async def expire_due(self, now: float | None = None) -> list[HumanTask]:
        """Mark pending tasks past their deadline expired; returns them (their nodes must fail)."""
        t = _now(now)
        return await self._write_returning(
            update(HumanTask)
            .where(
                HumanTask.status == "pending", HumanTask.expires_at.is_not(None), HumanTask.expires_at <= t
            )
            .values(status="expired", resolved_at=t)
            .returning(HumanTask)
        )

    async def cancel_for_run(self, run_id: str, *, now: float | None = None) -> int:
        """Cancel the run's pending tasks (the run was cancelled); returns how many."""
        return await self._write(
            update(HumanTask)
            .where(HumanTask.run_id == run_id, HumanTask.status == "pending")
            .values(status="cancelled", resolved_at=_now(now))
        )


# ----------------------------------------------------------------------------------------- decisions
class DecisionRepo(_Repo):
    async def add(
        self,
        run_id: str,
        step: int,
        data: dict[str, Any],
        *,
        node_id: str | None = None,
        now: float | None = None,
    ) -> Decision:
        row = Decision(run_id=run_id, step=step, node_id=node_id, data=data, created_at=_now(now))
        return await self._add(row)

    async def list(self, run_id: str) -> list[Decision]:
        return await self._all(
            select(Decision).where(Decision.run_id == run_id).order_by(Decision.step, Decision.id)
        )


# ----------------------------------------------------------------------------------------- variables
@dataclass(frozen=True, slots=True)
class VariableView:
    name: str
    value: Any
    is_secret: bool
    description: str
    updated_at: float


class VariableRepo(_Repo):
    """Global variables; every value is encrypted at rest with the store's `SecretBox`.
    Listings redact secret values unless asked to reveal them.

    `values()` (read by every run) is cached for `cache_ttl_s`: writes through this repo clear the
    cache at once; another process's writes are seen within the TTL."""

    def __init__(self, sessionmaker: Sessions, box: SecretBox, *, cache_ttl_s: float = 1.0) -> None:
        super().__init__(sessionmaker)
        self.box = box
        self.cache_ttl_s = cache_ttl_s
        self._cached: tuple[float, dict[str, Any]] | None = None

    async def set(
        self, name: str, value: Any, *, is_secret: bool = False, description: str | None = None
    ) -> None:
        now = time.time()
        token = self.box.encrypt(value)
        self._cached = None
        async with self.sessionmaker.begin() as session:
            stmt = _upsert(session, Variable).values(
                name=name,
                value=token,
                is_secret=is_secret,
                description=description or "",
                created_at=now,
                updated_at=now,
            )
            changes: dict[str, Any] = {"value": token, "is_secret": is_secret, "updated_at": now}
            if description is not None:
                changes["description"] = description
            await session.execute(stmt.on_conflict_do_update(index_elements=[Variable.name], set_=changes))

    async def get(self, name: str, default: Any = None) -> Any:
        token = await self._one(select(Variable.value).where(Variable.name == name))
        return default if token is None else self.box.decrypt(token)

    async def values(self) -> dict[str, Any]:
        """Every variable decrypted (for `{{env.X}}` at run time); a fresh dict per call."""
        now = time.monotonic()
        if self._cached is not None and self._cached[0] > now:
            return dict(self._cached[1])
        async with self.sessionmaker() as session:
            rows = (await session.execute(select(Variable.name, Variable.value))).all()
        values = {name: self.box.decrypt(token) for name, token in rows}
        if self.cache_ttl_s > 0:
            self._cached = (now + self.cache_ttl_s, values)
        return dict(values)

    async def list(self, *, reveal: bool = False) -> list[VariableView]:
        rows = await self._all(select(Variable).order_by(Variable.name))
        return [
            VariableView(
                r.name,
                self.box.decrypt(r.value) if reveal or not r.is_secret else REDACTED,
                r.is_secret,
                r.description,
                r.updated_at,
            )
            for r in rows
        ]

    async def delete(self, name: str) -> bool:
        self._cached = None
        return await self._write(delete(Variable).where(Variable.name == name)) > 0

    async def rotate(self) -> int:
        """Re-encrypt every value with the first (newest) key; returns how many."""
        self._cached = None
        async with self.sessionmaker.begin() as session:
            rows = (await session.execute(select(Variable.name, Variable.value))).all()
            for name, token in rows:
                await session.execute(
                    update(Variable).where(Variable.name == name).values(value=self.box.rotate(token)),
                    execution_options={"synchronize_session": False},
                )
        return len(rows)


# ---------------------------------------------------------------------------------------- components
class ComponentRepo(_Repo):
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
    ) -> Component:
        """Create the owner's component or replace its code (the version number goes up by one)."""
        now = time.time()
        async with self.sessionmaker.begin() as session:
            stmt = _upsert(session, Component).values(
                id=secrets.token_hex(16),
                owner_id=owner_id,
                name=name,
                kind=kind,
                description=description,
                code=code,
                spec=spec or {},
                version=1,
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
            stmt = stmt.on_conflict_do_update(
                **target,
                set_={
                    "kind": kind,
                    "description": description,
                    "code": code,
                    "spec": spec or {},
                    "version": Component.version + 1,
                    "updated_at": now,
                },
            ).returning(Component)
            return (await session.execute(stmt, execution_options={"populate_existing": True})).scalar_one()

    async def get(self, name: str, *, owner_id: str | None = None) -> Component | None:
        return await self._one(select(Component).where(self._owned(owner_id), Component.name == name))

    async def list(self, *, owner_id: str | None = None, kind: str | None = None) -> list[Component]:
        stmt = select(Component).where(self._owned(owner_id)).order_by(Component.name)
        if kind is not None:
            stmt = stmt.where(Component.kind == kind)
        return await self._all(stmt)

    async def delete(self, name: str, *, owner_id: str | None = None) -> bool:
        return await self._write(delete(Component).where(self._owned(owner_id), Component.name == name)) > 0


# ------------------------------------------------------------------------------------------ triggers
_UNSET: Any = object()


class TriggerRepo(_Repo):
    """Webhook/schedule triggers of a flow. A webhook secret is stored as its SHA-256."""

    async def create(
        self,
        flow_id: str,
        kind: str,
        config: dict[str, Any] | None = None,
        *,
        enabled: bool = True,
        secret: str | None = None,
        next_fire_at: float | None = None,
    ) -> Trigger:
        now = time.time()
        row = Trigger(
            flow_id=flow_id,
            kind=kind,
            config=config or {},
            enabled=enabled,
            secret_hash=sha256_hex(secret) if secret else None,
            next_fire_at=next_fire_at,
            created_at=now,
            updated_at=now,
        )
        return await self._add(row)

    async def get(self, trigger_id: str) -> Trigger | None:
        return await self._one(select(Trigger).where(Trigger.id == trigger_id))

    async def list(
        self, *, flow_id: str | None = None, kind: str | None = None, enabled: bool | None = None
    ) -> list[Trigger]:
        stmt = select(Trigger).order_by(Trigger.created_at, Trigger.id)
        if flow_id is not None:
            stmt = stmt.where(Trigger.flow_id == flow_id)
        if kind is not None:
            stmt = stmt.where(Trigger.kind == kind)
        if enabled is not None:
            stmt = stmt.where(Trigger.enabled.is_(enabled))
        return await self._all(stmt)

    async def update(
        self,
        trigger_id: str,
        *,
        config: dict[str, Any] | None = None,
        enabled: bool | None = None,
        next_fire_at: float | None = _UNSET,
    ) -> Trigger | None:
        values: dict[str, Any] = {"updated_at": time.time()}
        if config is not None:
            values["config"] = config
        if enabled is not None:
            values["enabled"] = enabled
        if next_fire_at is not _UNSET:
            values["next_fire_at"] = next_fire_at
        rows = await self._write_returning(
            update(Trigger).where(Trigger.id == trigger_id).values(values).returning(Trigger)
        )
        return rows[0] if rows else None

    async def delete(self, trigger_id: str) -> bool:
        return await self._write(delete(Trigger).where(Trigger.id == trigger_id)) > 0

    async def due(self, now: float | None = None, *, limit: int = 100) -> list[Trigger]:
        """Enabled triggers whose `next_fire_at` has come."""
        t = _now(now)
        return await self._all(
            select(Trigger)
            .where(Trigger.enabled.is_(True), Trigger.next_fire_at.is_not(None), Trigger.next_fire_at <= t)
            .order_by(Trigger.next_fire_at)
            .limit(limit)
        )

    async def claim_fire(
        self,
        trigger_id: str,
        expected_next: float | None,
        next_fire_at: float | None,
        *,
        now: float | None = None,
    ) -> bool:
        """Move a due trigger to its next time, only if nobody else did (compare-and-set on
        `next_fire_at`): the process for which this returns True starts the run."""
        stmt = update(Trigger).where(Trigger.id == trigger_id)
        if expected_next is None:
            stmt = stmt.where(Trigger.next_fire_at.is_(None))
        else:
            stmt = stmt.where(Trigger.next_fire_at == expected_next)
        return await self._write(stmt.values(next_fire_at=next_fire_at, last_fired_at=_now(now))) > 0

    @staticmethod
    def check_secret(trigger: Trigger, secret: str | None) -> bool:
        """True when the trigger has no secret or `secret` matches it (constant time)."""
        if trigger.secret_hash is None:
            return True
        return secret is not None and hmac.compare_digest(trigger.secret_hash, sha256_hex(secret))
