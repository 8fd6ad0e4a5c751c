"""Every write to the `runs` table (run rows and their leases), as SQLAlchemy statements.

One module owns them so that the run row has one writer: `RunRepo` executes them in its own
transactions, the `SqlCheckpointer` inside its checkpoint transactions (a checkpoint and the run
row it moves commit together), and `run_rows_sqlite` compiles the same statements for the raw
sqlite3 connection of the SQLite writer thread. Functions here build statements; they never
execute anything.

A lease is `(lease_owner, lease_until)`: the process executing a run holds it and renews it; a
run whose lease expired while `running` is one whose owner died. Every lease statement is one
conditional UPDATE, atomic on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, TypedDict

from sqlalchemy import (
    Delete,
    Insert,
    Select,
    Update,
    bindparam,
    delete,
    func,
    insert,
    null,
    or_,
    select,
    update,
)
from sqlalchemy.sql.elements import ColumnElement

from plait.engine.checkpoint import RunRecord
from plait.engine.events import Event
from plait.engine.status import TERMINAL_RUN_STATUSES, RunStatus
from plait.store.db import upsert_for
from plait.store.models import Run, table_of
from plait.store.rows import finished_usage

runs_table = table_of(Run)


class NewRunFields(TypedDict, total=False):
    """The optional fields of a new run row: `create_values`'s keywords, which hold the defaults
    (`RunRepo.create`/`insert` pass them through with `Unpack`, so they are typed once)."""

    inputs: dict[str, Any] | None
    version: int | None
    status: str
    parent_run_id: str | None
    variables: dict[str, Any] | None
    lease_owner: str | None
    lease_until: float | None
    document: dict[str, Any] | None
    owner_id: str | None
    trigger_id: str | None


def create_values(
    run_id: str,
    flow_id: str,
    *,
    created_at: float,
    inputs: dict[str, Any] | None = None,
    version: int | None = None,
    status: str = RunStatus.QUEUED,
    parent_run_id: str | None = None,
    variables: dict[str, Any] | None = None,
    lease_owner: str | None = None,
    lease_until: float | None = None,
    document: dict[str, Any] | None = None,
    owner_id: str | None = None,
    trigger_id: str | None = None,
) -> dict[str, Any]:
    """The columns of a new run row (a run accepted, not begun; optionally leased already)."""
    return {
        "id": run_id,
        "flow_id": flow_id,
        "version": version,
        "status": str(status),
        "inputs": inputs or {},
        "variables": variables or {},
        "parent_run_id": parent_run_id,
        "lease_owner": lease_owner,
        "lease_until": lease_until,
        "created_at": created_at,
        "document": document,
        "owner_id": owner_id,
        "trigger_id": trigger_id,
        "cancel_requested": False,
        "last_seq": 0,
    }


def insert_run(values: dict[str, Any]) -> Insert:
    return insert(runs_table).values(values)


def begin_values(record: RunRecord, last_seq: int, now: float) -> dict[str, Any]:
    """The columns `begin_run` inserts (or updates): the run is running from `now`. A sub-flow's
    child run (`parent_run_id`) acts as the user its parent acts as: `begin_run` copies the owner."""
    return {
        "id": record.run_id,
        "flow_id": record.flow_id,
        "status": str(RunStatus.RUNNING),
        "inputs": record.inputs,
        "variables": record.variables,
        "context": {"vars": record.variables},
        "parent_run_id": record.parent_run_id,
        "created_at": record.created_at,
        "started_at": now,
        "last_seq": last_seq,
    }


def parent_owner(parent_run_id: Any) -> Any:
    """The owner of run `parent_run_id` (a value or a bound parameter), as a scalar subquery."""
    parent = runs_table.alias("parent")
    return select(parent.c.owner_id).where(parent.c.id == parent_run_id).scalar_subquery()


def begin_run(dialect: str, values: dict[str, Any]) -> Any:
    """Insert the run running, or (restart, resume, a run the service queued) set it running
    again. Existing rows keep their created_at, started_at and live context; returns `context`.
    A new child run (`parent_run_id` set) gets its parent's owner."""
    if isinstance(values.get("parent_run_id"), str) and "owner_id" not in values:
        values = {**values, "owner_id": parent_owner(values["parent_run_id"])}
    stmt = upsert_for(dialect, runs_table).values(values)
    ex = stmt.excluded
    greatest = func.greatest if dialect == "postgresql" else func.max
    return stmt.on_conflict_do_update(
        index_elements=[runs_table.c.id],
        set_={
            "flow_id": ex.flow_id,
            "status": ex.status,
            "inputs": ex.inputs,
            "variables": ex.variables,
            "context": func.coalesce(runs_table.c.context, ex.context),
            "parent_run_id": func.coalesce(ex.parent_run_id, runs_table.c.parent_run_id),
            "started_at": func.coalesce(runs_table.c.started_at, ex.started_at),
            "finished_at": null(),
            "outputs": null(),
            "error": null(),
            "last_seq": greatest(runs_table.c.last_seq, ex.last_seq),
        },
    ).returning(runs_table.c.context)


def _bound(column: str, name: str | None = None) -> Any:
    """A parameter for `column`, typed as the column (JSON columns encode their values)."""
    return bindparam(name or column, type_=runs_table.c[column].type)


@cache
def begin_run_bound(dialect: str, columns: tuple[str, ...]) -> Any:
    """`begin_run` built once per dialect and set of columns, every value a parameter named as
    its column: executed with `begin_values`, it skips building the statement and its cache key
    for every run (about a millisecond of CPU)."""
    values: dict[str, Any] = {c: _bound(c) for c in columns}
    if "parent_run_id" in columns and "owner_id" not in columns:
        values["owner_id"] = parent_owner(bindparam("parent_run_id"))
    return begin_run(dialect, values)


def begin_run_params(dialect: str, values: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The statement and parameters that execute `begin_run(dialect, values)`."""
    if not isinstance(values.get("parent_run_id"), str):
        values = {k: v for k, v in values.items() if k != "parent_run_id"}
    return begin_run_bound(dialect, tuple(values)), values


def read_context(run_id: str) -> Select[Any]:
    return select(runs_table.c.context).where(runs_table.c.id == run_id)


def save_context(run_id: str, context: dict[str, Any] | None, last_seq: int | None) -> Update:
    """A checkpoint moves the run row: the live context (when a node set variables) and the
    event seq (which rides along; `finish` sets it for good). None leaves a column as it is."""
    values: dict[str, Any] = {}
    if context is not None:
        values["context"] = context
    if last_seq is not None:
        values["last_seq"] = last_seq
    return update(runs_table).where(runs_table.c.id == run_id).values(values)


def raise_last_seq(run_id: str, seq: int) -> Update:
    """Events stored outside the checkpointer: `last_seq` goes up, never down."""
    return (
        update(runs_table).where(runs_table.c.id == run_id, runs_table.c.last_seq < seq).values(last_seq=seq)
    )


def finish_values(
    status: str,
    outputs: dict[str, Any] | None,
    error: str | None,
    events: Sequence[Event],
    now: float,
) -> dict[str, Any]:
    """The columns an execution's end sets: a run that ended for good has a finish time and holds
    no lease; a waiting one keeps its lease until its process releases it."""
    terminal = status in TERMINAL_RUN_STATUSES
    values: dict[str, Any] = {
        "status": str(status),
        "outputs": outputs,
        "error": error,
        "finished_at": now if terminal else None,
    }
    if terminal:
        values["lease_owner"] = values["lease_until"] = None
    if events:
        values["last_seq"] = events[-1].seq
        usage = finished_usage(events)
        if usage is not None:
            values["usage"] = usage
    return values


def finish_run(run_id: str, values: dict[str, Any]) -> Update:
    return update(runs_table).where(runs_table.c.id == run_id).values(values)


@cache
def _finish_bound(columns: tuple[str, ...]) -> Update:
    return (
        update(runs_table)
        .where(runs_table.c.id == bindparam("p_run_id"))
        .values({c: _bound(c, f"p_{c}") for c in columns})
    )


def finish_run_params(run_id: str, values: dict[str, Any]) -> tuple[Update, dict[str, Any]]:
    """As `finish_run`, built once per set of columns: the statement and its parameters."""
    params = {f"p_{c}": v for c, v in values.items()}
    params["p_run_id"] = run_id
    return _finish_bound(tuple(values)), params


def set_status(
    run_id: str,
    status: str,
    *,
    now: float,
    error: str | None = None,
    expected: str | Sequence[str] | None = None,
    owner: str | None = None,
) -> Update:
    """Set the status; with `expected`, only if the current status is one of those
    (compare-and-set); with `owner`, only while `owner` holds the run's lease. Terminal statuses
    set finished_at."""
    values: dict[str, Any] = {"status": str(status)}
    if error is not None:
        values["error"] = error
    if status in TERMINAL_RUN_STATUSES:
        values["finished_at"] = now
    stmt = update(runs_table).where(runs_table.c.id == run_id).values(values)
    if owner is not None:
        stmt = stmt.where(runs_table.c.lease_owner == owner)
    if isinstance(expected, str):
        return stmt.where(runs_table.c.status == expected)
    if expected is not None:
        return stmt.where(runs_table.c.status.in_([str(s) for s in expected]))
    return stmt


def request_cancel(run_id: str) -> Update:
    return update(runs_table).where(runs_table.c.id == run_id).values(cancel_requested=True)


def _lease_free(owner: Any, now: Any) -> ColumnElement[bool]:
    c = runs_table.c
    return or_(c.lease_owner.is_(None), c.lease_until.is_(None), c.lease_until < now, c.lease_owner == owner)


def acquire_lease(run_id: str, owner: str, until: float, now: float) -> Update:
    """Take the lease if nobody holds it, it expired, or `owner` already holds it."""
    return (
        update(runs_table)
        .where(runs_table.c.id == run_id, _lease_free(owner, now))
        .values(lease_owner=owner, lease_until=until)
    )


@cache
def _take_lease() -> Update:
    c = runs_table.c
    owner, now = bindparam("p_owner", type_=c.lease_owner.type), bindparam("p_now", type_=c.lease_until.type)
    return (
        update(runs_table)
        .where(
            c.id == bindparam("p_run_id"),
            c.status.not_in([str(s) for s in TERMINAL_RUN_STATUSES]),
            or_(_lease_free(owner, now), c.lease_owner == bindparam("p_from_owner")),
        )
        .values(lease_owner=owner, lease_until=bindparam("p_until", type_=c.lease_until.type))
    )


def take_lease(
    run_id: str, owner: str, until: float, now: float, *, from_owner: str
) -> tuple[Update, dict[str, Any]]:
    """Take the lease of a run that has not ended if it is free (as `acquire_lease`) or
    `from_owner` holds it: one process hands a run over to another in one statement, so the row
    is never without a lease in between. The statement (built once) and its parameters."""
    params = {
        "p_run_id": run_id,
        "p_owner": owner,
        "p_until": until,
        "p_now": now,
        "p_from_owner": from_owner,
    }
    return _take_lease(), params


@cache
def hold_lease() -> Update:
    """The fence of a checkpoint (`plait.store.fencing`): an UPDATE that changes nothing and
    matches the run's row only while `p_owner` holds its lease. Executed first in a transaction,
    it locks the row until the commit (PostgreSQL; SQLite locks the whole file), so a take-over
    waits for the checkpoint or the checkpoint finds the lease taken and is rolled back. Built
    once; parameters `p_run_id` and `p_owner`."""
    c = runs_table.c
    return (
        update(runs_table)
        .where(c.id == bindparam("p_run_id"), c.lease_owner == bindparam("p_owner", type_=c.lease_owner.type))
        .values(lease_owner=c.lease_owner)
    )


@cache
def hold_leases() -> Update:
    """`hold_lease` for several runs of one owner (a group commit, `plait.store.group_commit`):
    locks the rows `p_owner` still holds among `p_run_ids`, in id order (two batches lock alike),
    and returns their ids. Built once; parameters `p_run_ids` (a list) and `p_owner`."""
    c = runs_table.c
    held = (
        select(c.id)
        .where(
            c.id.in_(bindparam("p_run_ids", expanding=True)),
            c.lease_owner == bindparam("p_owner", type_=c.lease_owner.type),
        )
        .order_by(c.id)
        .with_for_update()
    )
    return update(runs_table).where(c.id.in_(held)).values(lease_owner=c.lease_owner).returning(c.id)


def renew_leases(run_ids: Iterable[str], owner: str, until: float) -> Update:
    """Extend the leases `owner` still holds among `run_ids` (one statement for all of them).
    Several rows are locked in id order, as a group commit's fence locks them (`hold_leases`), so
    the two never wait on each other in a cycle."""
    c = runs_table.c
    ids = list(run_ids)
    if len(ids) == 1:
        return update(runs_table).where(c.id == ids[0], c.lease_owner == owner).values(lease_until=until)
    held = select(c.id).where(c.id.in_(ids), c.lease_owner == owner).order_by(c.id).with_for_update()
    return update(runs_table).where(c.id.in_(held)).values(lease_until=until)


def release_lease(run_id: str, owner: str) -> Update:
    return (
        update(runs_table)
        .where(runs_table.c.id == run_id, runs_table.c.lease_owner == owner)
        .values(lease_owner=None, lease_until=None)
    )


def delete_run(run_id: str) -> Delete:
    """The run with its node runs, events, human tasks and decisions (foreign keys cascade)."""
    return delete(runs_table).where(runs_table.c.id == run_id)


__all__ = [
    "NewRunFields",
    "acquire_lease",
    "begin_run",
    "begin_run_bound",
    "begin_run_params",
    "begin_values",
    "create_values",
    "delete_run",
    "finish_run",
    "finish_run_params",
    "finish_values",
    "hold_lease",
    "insert_run",
    "parent_owner",
    "raise_last_seq",
    "read_context",
    "release_lease",
    "renew_leases",
    "request_cancel",
    "runs_table",
    "save_context",
    "set_status",
    "take_lease",
]
