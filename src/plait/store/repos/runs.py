"""`RunRepo`: run rows and the lease that makes one process the owner of a run.

The run row has one writer: the statements of `plait.store.run_rows`, executed here (the
service's writes) and in the checkpointer's transactions (what the engine's progress changes).
Nothing else in plait writes `runs`.

A lease is `(lease_owner, lease_until)`. The owner renews it while it executes the run
(`heartbeat`, e.g. every ttl/3) and releases it when the run stops; a run whose lease expired
while `running` is one whose owner died (`find_expired_running`), and another process may
`acquire_lease` it and resume it. Every lease method is a single conditional UPDATE, atomic on
SQLite and PostgreSQL.

On a SQLite file, creating a run and releasing its lease go through the store's `SqliteWriter`,
the connection the checkpoints use: they join its group commits instead of contending with them
for SQLite's write lock.

Rows read here come with their large values (stored once in `blobs`, see plait.store.blobs) put
back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, NamedTuple, TypeVar, Unpack

from sqlalchemy import literal_column, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm.attributes import set_committed_value

import plait.store.run_rows as run_rows
import plait.store.run_rows_sqlite as run_rows_sqlite
from plait.engine.status import RunStatus
from plait.store.blobs import BlobReader, refs_in
from plait.store.models import FlowVersion, NodeRunRow, Run, table_of
from plait.store.repos.base import Repo, Sessions, now_or
from plait.store.repos.flows import visible_flow_ids
from plait.store.run_rows import NewRunFields
from plait.store.sqlite_writer import SqliteWriter

RowsT = TypeVar("RowsT", bound=Sequence[Any])


@cache
def _returning_run_and_version(stmt: Any) -> Any:
    """`stmt` (an UPDATE of `runs`, built once) returning the row as a `Run`, and the row id and
    creation time of the run's flow version (None for a run of a draft, or a version deleted
    since)."""
    runs, versions = run_rows.runs_table, table_of(FlowVersion)
    # Named with their table: SQLite's RETURNING renders the updated table's columns bare, which
    # inside the subquery would name the version's own columns.
    found = (
        versions.c.flow_id == literal_column("runs.flow_id"),
        versions.c.version == literal_column("runs.version"),
    )
    version_id = select(versions.c.id).where(*found).scalar_subquery().label("flow_version_id")
    created = select(versions.c.created_at).where(*found).scalar_subquery().label("flow_version_at")
    return select(Run, version_id, created).from_statement(stmt.returning(*runs.c, version_id, created))


class TakenOver(NamedTuple):
    """A run whose lease `RunRepo.take_over_with_version` took, and which row its flow version is
    now: (row id, creation time), None for a run of a draft or of a version deleted since. A
    published version is immutable: a process that compiled the version of that row may reuse
    it without reading it again (both parts: SQLite may give a deleted row's id to a new one)."""

    run: Run
    flow_version: tuple[int, float] | None


class Heartbeat(NamedTuple):
    """What renewing a process' leases found (`RunRepo.heartbeat`)."""

    cancel_requested: list[str]  # runs whose cancel was requested through the database
    # Runs whose lease `owner` does not hold: taken over by another process, released (e.g.
    # the run finished), or deleted.
    not_held: list[str]


class RunRepo(Repo):
    """Run rows and leases. `writer`: the store's SQLite writer, on a SQLite file."""

    def __init__(self, sessionmaker: Sessions, writer: SqliteWriter | None = None) -> None:
        super().__init__(sessionmaker)
        self.writer = writer

    async def create(
        self, run_id: str, flow_id: str, *, now: float | None = None, **fields: Unpack[NewRunFields]
    ) -> Run:
        """As `insert`, and returns the new row."""
        return Run(**await self.insert(run_id, flow_id, now=now, **fields))

    async def insert(
        self, run_id: str, flow_id: str, *, now: float | None = None, **fields: Unpack[NewRunFields]
    ) -> dict[str, Any]:
        """A run the service accepted but the engine has not begun (the checkpointer's `begin`
        then sets it running), leased to `lease_owner` in the same statement when given.
        `document`: the flow document of a run of a draft (see `Run.document`); the other
        fields and their defaults: `run_rows.create_values`. Returns the row's columns (building
        no ORM object: this is every run's first write). Raises `IntegrityError` when the id is
        taken."""
        values = run_rows.create_values(run_id, flow_id, created_at=now_or(now), **fields)
        writer = self.writer
        if writer is None:
            async with self.sessionmaker.begin() as session:
                await session.execute(run_rows.insert_run(values))
            return values
        # A run leased here is about to execute here: it counts as active for the writer.
        alone = writer.alone(run_id, starting=values["lease_owner"] is not None)
        try:
            await writer.run(run_rows_sqlite.create, values, alone=alone)
        except sqlite3.IntegrityError as exc:
            writer.ended(run_id)
            raise IntegrityError("INSERT INTO runs", {"id": run_id}, exc) from exc
        except BaseException:
            writer.ended(run_id)
            raise
        return values

    async def _with_values(self, rows: RowsT, column: str) -> RowsT:
        """`rows` (ORM objects) with the large values of `column` read from `blobs` (see
        plait.store.blobs), set as loaded values (nothing to write back)."""
        keys = refs_in(getattr(r, column) for r in rows)
        if keys:
            async with self.sessionmaker() as session:
                blobs = await BlobReader().load(session, keys)
            for r in rows:
                set_committed_value(r, column, blobs.value(getattr(r, column)))
        return rows

    async def get(self, run_id: str) -> Run | None:
        row = await self._one(select(Run).where(Run.id == run_id))
        return None if row is None else (await self._with_values([row], "outputs"))[0]

    async def list_runs(
        self,
        *,
        flow_id: str | None = None,
        status: str | Sequence[str] | None = None,
        parent_run_id: str | None = None,
        top_level: bool = False,
        visible_to: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Run]:
        """Newest first; `visible_to`: the runs a user started and the runs of flows they can see;
        `parent_run_id`: the sub-flow children of that run; `top_level`: no children at all."""
        stmt = select(Run).order_by(Run.created_at.desc(), Run.id.desc()).limit(limit).offset(offset)
        if visible_to is not None:
            stmt = stmt.where(or_(Run.owner_id == visible_to, Run.flow_id.in_(visible_flow_ids(visible_to))))
        if flow_id is not None:
            stmt = stmt.where(Run.flow_id == flow_id)
        if isinstance(status, str):
            stmt = stmt.where(Run.status == status)
        elif status is not None:
            stmt = stmt.where(Run.status.in_(list(status)))
        if parent_run_id is not None:
            stmt = stmt.where(Run.parent_run_id == parent_run_id)
        elif top_level:
            stmt = stmt.where(Run.parent_run_id.is_(None))
        return await self._with_values(await self._all(stmt), "outputs")

    async def set_status(
        self,
        run_id: str,
        status: str,
        *,
        error: str | None = None,
        expected: str | Sequence[str] | None = None,
        owner: str | None = None,
        now: float | None = None,
    ) -> bool:
        """Set the status (e.g. a queued run cancelled before it started); with `expected`, only
        if the current status is one of those (compare-and-set); with `owner`, only while `owner`
        holds the run's lease. Terminal statuses set finished_at."""
        stmt = run_rows.set_status(
            run_id, status, now=now_or(now), error=error, expected=expected, owner=owner
        )
        return await self._write(stmt) > 0

    async def request_cancel(self, run_id: str) -> bool:
        """Flag the run for cancellation (its owner's `heartbeat` sees it); False if unknown."""
        return await self._write(run_rows.request_cancel(run_id)) > 0

    async def is_cancel_requested(self, run_id: str) -> bool:
        return bool(await self._one(select(Run.cancel_requested).where(Run.id == run_id)))

    async def node_runs(self, run_id: str) -> list[NodeRunRow]:
        """Every node transition of the run, in the order they were saved."""
        rows = await self._all(select(NodeRunRow).where(NodeRunRow.run_id == run_id).order_by(NodeRunRow.id))
        return await self._with_values(rows, "output")

    async def delete(self, run_id: str) -> bool:
        """Delete a run with its node runs, events, human tasks and decisions."""
        return await self._write(run_rows.delete_run(run_id)) > 0

    # -------------------------------------------------------------------------------- leases
    async def acquire_lease(self, run_id: str, owner: str, ttl_s: float, *, now: float | None = None) -> bool:
        """Take the run's lease for `ttl_s` seconds if nobody holds it, it expired, or `owner`
        already holds it. True when `owner` now holds it."""
        t = now_or(now)
        return await self._write(run_rows.acquire_lease(run_id, owner, t + ttl_s, t)) > 0

    async def take_over(
        self, run_id: str, owner: str, ttl_s: float, *, from_owner: str, now: float | None = None
    ) -> Run | None:
        """Take the lease of a run that has not ended from `from_owner` (or as `acquire_lease`
        does) and return the row as it is now, in one statement. None when the run is unknown,
        ended, or another process holds its lease."""
        taken = await self.take_over_with_version(run_id, owner, ttl_s, from_owner=from_owner, now=now)
        return None if taken is None else taken.run

    async def take_over_with_version(
        self, run_id: str, owner: str, ttl_s: float, *, from_owner: str, now: float | None = None
    ) -> TakenOver | None:
        """As `take_over`, and in the same statement which row the run's flow version is."""
        t = now_or(now)
        stmt, params = run_rows.take_lease(run_id, owner, t + ttl_s, t, from_owner=from_owner)
        async with self.sessionmaker.begin() as session:
            found = (await session.execute(_returning_run_and_version(stmt), params)).first()
        if found is None:
            return None
        row, version_id, version_at = found
        version = None if version_id is None else (int(version_id), float(version_at))
        return TakenOver((await self._with_values([row], "outputs"))[0], version)

    async def renew_lease(self, run_id: str, owner: str, ttl_s: float, *, now: float | None = None) -> bool:
        """Extend the lease; False if `owner` lost it (another process took it over: stop)."""
        return await self._write(run_rows.renew_leases([run_id], owner, now_or(now) + ttl_s)) > 0

    async def heartbeat(
        self, run_ids: Iterable[str], owner: str, ttl_s: float, *, now: float | None = None
    ) -> Heartbeat:
        """Extend every lease `owner` holds among `run_ids` (one UPDATE for all of them) and say
        which of them had their cancel requested (by another process, through the database) and
        which `owner` no longer holds (another process took them over, or they are gone)."""
        ids = list(run_ids)
        if not ids:
            return Heartbeat([], [])
        async with self.sessionmaker.begin() as session:
            await session.execute(
                run_rows.renew_leases(ids, owner, now_or(now) + ttl_s),
                execution_options={"synchronize_session": False},
            )
            rows = (
                await session.execute(
                    select(Run.id, Run.cancel_requested, Run.lease_owner).where(Run.id.in_(ids))
                )
            ).all()
        flagged = [r.id for r in rows if r.cancel_requested]
        owners = {r.id: r.lease_owner for r in rows}
        lost = [run_id for run_id in ids if run_id not in owners or owners[run_id] != owner]
        return Heartbeat(flagged, lost)

    async def release_lease(self, run_id: str, owner: str) -> bool:
        writer = self.writer
        if writer is not None:
            released = await writer.run(
                run_rows_sqlite.release_lease, run_id, owner, alone=writer.alone(run_id)
            )
            return bool(released)
        return await self._write(run_rows.release_lease(run_id, owner)) > 0

    async def find_expired_running(
        self, now: float | None = None, *, limit: int = 100, statuses: Iterable[str] = (RunStatus.RUNNING,)
    ) -> list[Run]:
        """Runs in `statuses` whose lease expired or that have no lease (their owner died):
        candidates for crash recovery (`acquire_lease`, then resume). Oldest first. Only
        top-level runs: a sub-flow's child run holds no lease and is continued by its parent."""
        t = now_or(now)
        stmt = (
            select(Run)
            .where(
                Run.status.in_([str(s) for s in statuses]),
                or_(Run.lease_until.is_(None), Run.lease_until < t),
                Run.parent_run_id.is_(None),
            )
            .order_by(Run.created_at, Run.id)
            .limit(limit)
        )
        return await self._with_values(await self._all(stmt), "outputs")


__all__ = ["Heartbeat", "RunRepo", "TakenOver"]
