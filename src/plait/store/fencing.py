"""Fencing a run's checkpoints by its lease: a process that lost a run writes nothing more to it.

The lease (see `plait.store.repos.runs`) says which process executes a run. A process whose
event loop stalls past the lease TTL (or whose lease renewals cannot reach the database) may find
on waking that another process took the run over and continues it; until it learns so, its own
execution goes on. So every checkpoint of a run executed under a lease runs, first in its
transaction, `run_rows.hold_lease`: it matches the run's row only while this process holds the
lease, and holds the row until the commit. When it matches nothing the transaction is rolled
back and `LeaseLost` raised; the engine stops at that save (no dependant starts, nothing later
is written) and the service lets the run go without writing anything either.

The functions here run inside a transaction: `fenced_sql` on a SQLAlchemy `Connection` (the
checkpointer's async engine path), `fenced_sqlite` on the SQLite writer's connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

import plait.store.run_rows as run_rows
import plait.store.run_rows_sqlite as run_rows_sqlite
from plait.errors import PlaitError


class LeaseLost(PlaitError):
    """This process no longer holds the lease of the run it wrote to: another process took the
    run over (this one stalled past the lease). Nothing was written; stop executing the run."""

    code = "lease_lost"

    def __init__(self, run_id: str, owner: str) -> None:
        super().__init__(
            f"run {run_id!r} is no longer leased to {owner!r}: another process took it over",
            hint="nothing to do: the process that holds the lease continues the run",
        )
        self.run_id = run_id
        self.owner = owner


def fenced_sql(
    conn: Connection, run_id: str, leased_run_id: str, owner: str, fn: Callable[..., Any], *args: Any
) -> Any:
    """`fn(conn, run_id, *args)` if `owner` holds the lease of `leased_run_id` (the run itself, or
    the top-level run of a sub-flow's child); LeaseLost (the caller's transaction rolls back)
    otherwise."""
    held = conn.execute(run_rows.hold_lease(), {"p_run_id": leased_run_id, "p_owner": owner}).rowcount
    if not held:
        raise LeaseLost(leased_run_id, owner)
    return fn(conn, run_id, *args)


def fenced_sqlite(
    db: sqlite3.Connection,
    run_id: str,
    leased_run_id: str,
    owner: str,
    fn: Callable[..., Any],
    *args: Any,
) -> Any:
    """As `fenced_sql`, on the SQLite writer's connection."""
    if not run_rows_sqlite.holds_lease(db, leased_run_id, owner):
        raise LeaseLost(leased_run_id, owner)
    return fn(db, run_id, *args)


__all__ = ["LeaseLost", "fenced_sql", "fenced_sqlite"]
