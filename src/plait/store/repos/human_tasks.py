"""Human tasks: what a paused run waits on, answered at most once."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import or_, select, update

from plait.engine.status import TaskStatus
from plait.store.models import HumanTask
from plait.store.repos.base import Repo, now_or


class HumanTaskRepo(Repo):
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
            status=TaskStatus.PENDING,
            message=message,
            fields=list(fields),
            prefill=dict(prefill or {}),
            actions=list(actions),
            assignees=list(assignees),
            blocking=blocking,
            expires_at=expires_at,
            created_at=now_or(now),
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

    async def list_tasks(
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
            .where(
                HumanTask.run_id == run_id,
                HumanTask.node_id == node_id,
                HumanTask.status == TaskStatus.PENDING,
            )
            .order_by(HumanTask.created_at.desc())
            .limit(1)
        )

    async def submit(
        self, token: str, result: dict[str, Any], *, now: float | None = None
    ) -> HumanTask | None:
        """Record the answer if the task is still pending and not past its deadline; else None
        (then `get` tells whether it is unknown, already answered, expired or cancelled)."""
        t = now_or(now)
        rows = await self._write_returning(
            update(HumanTask)
            .where(
                HumanTask.token == token,
                HumanTask.status == TaskStatus.PENDING,
                or_(HumanTask.expires_at.is_(None), HumanTask.expires_at > t),
            )
            .values(status=TaskStatus.SUBMITTED, result=result, resolved_at=t)
            .returning(HumanTask)
        )
        return rows[0] if rows else None

    async def expire_due(self, now: float | None = None) -> list[HumanTask]:
        """Mark pending tasks past their deadline expired; returns them (their nodes must fail)."""
        t = now_or(now)
        return await self._write_returning(
            update(HumanTask)
            .where(
                HumanTask.status == TaskStatus.PENDING,
                HumanTask.expires_at.is_not(None),
                HumanTask.expires_at <= t,
            )
            .values(status=TaskStatus.EXPIRED, resolved_at=t)
            .returning(HumanTask)
        )

    async def reopen_expired(self, token: str) -> bool:
        """Put an expired task back to pending (its expiry could not be acted on, e.g. the run
        queue was down); past its deadline it still takes no answer, and the next `expire_due`
        returns it again. False when the task is not expired (anymore)."""
        n = await self._write(
            update(HumanTask)
            .where(HumanTask.token == token, HumanTask.status == TaskStatus.EXPIRED)
            .values(status=TaskStatus.PENDING, resolved_at=None)
        )
        return n > 0

    async def cancel_for_run(self, run_id: str, *, now: float | None = None) -> int:
        """Cancel the run's pending tasks (the run was cancelled); returns how many."""
        return await self._write(
            update(HumanTask)
            .where(HumanTask.run_id == run_id, HumanTask.status == TaskStatus.PENDING)
            .values(status=TaskStatus.CANCELLED, resolved_at=now_or(now))
        )
