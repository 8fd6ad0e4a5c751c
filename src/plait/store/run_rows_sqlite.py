"""The run-row writes of `run_rows` on a raw sqlite3 connection (the SQLite writer thread).

The SQL is compiled once, at import, from the same SQLAlchemy tables; JSON columns are encoded
here (SQLAlchemy's JSON type does it on the other path). A statement's fixed values are inlined
(`false()`, `0`) rather than bound, so each call binds only what changes. Callers run these
functions inside the writer's transaction (see `sqlite_writer`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from sqlalchemy import bindparam, case, false, func, insert, literal_column, null, select, update
from sqlalchemy.dialects import sqlite

from plait.store.db import json_dumps
from plait.store.rows import json_or_none, live_vars
from plait.store.run_rows import begin_run, hold_lease, parent_owner, runs_table

_NAMED = sqlite.dialect(paramstyle="named")


def compile_sql(stmt: Any) -> str:
    """SQLite SQL with named parameters, for `sqlite3.Connection.execute`."""
    return str(stmt.compile(dialect=_NAMED))


_CREATE_COLUMNS = (
    "id",
    "flow_id",
    "version",
    "status",
    "inputs",
    "variables",
    "parent_run_id",
    "lease_owner",
    "lease_until",
    "created_at",
    "document",
    "owner_id",
    "trigger_id",
)
_SQL_CREATE = compile_sql(
    insert(runs_table).values(
        {
            **{c: bindparam(c) for c in _CREATE_COLUMNS},
            "cancel_requested": false(),
            "last_seq": literal_column("0"),
        }
    )
)
_BEGIN_COLUMNS = (
    "id",
    "flow_id",
    "status",
    "inputs",
    "variables",
    "context",
    "parent_run_id",
    "created_at",
    "started_at",
    "last_seq",
)
# A Python-side default would become one more parameter: the inserted flag is inlined.
_SQL_BEGIN = compile_sql(
    begin_run("sqlite", {**{c: bindparam(c) for c in _BEGIN_COLUMNS}, "cancel_requested": false()})
)
# A sub-flow's child run: the same, with its parent's owner.
_SQL_BEGIN_CHILD = compile_sql(
    begin_run(
        "sqlite",
        {
            **{c: bindparam(c) for c in _BEGIN_COLUMNS},
            "cancel_requested": false(),
            "owner_id": parent_owner(bindparam("parent_run_id")),
        },
    )
)
_SQL_READ_CONTEXT = compile_sql(select(runs_table.c.context).where(runs_table.c.id == bindparam("run_id")))
_SQL_SAVE_CONTEXT = compile_sql(
    update(runs_table)
    .where(runs_table.c.id == bindparam("run_id"))
    .values(
        last_seq=func.coalesce(bindparam("last_seq"), runs_table.c.last_seq),
        context=func.coalesce(bindparam("context"), runs_table.c.context),
    )
)
_SQL_FINISH = compile_sql(
    update(runs_table)
    .where(runs_table.c.id == bindparam("run_id"))
    .values(
        status=bindparam("status"),
        outputs=bindparam("outputs"),
        error=bindparam("error"),
        finished_at=bindparam("finished_at"),
        last_seq=func.coalesce(bindparam("last_seq"), runs_table.c.last_seq),
        usage=func.coalesce(bindparam("usage"), runs_table.c.usage),
        # As `run_rows.finish_values`: a finished run (finish time set) holds no lease; a
        # waiting one keeps it until its process releases it.
        lease_owner=case((bindparam("finished_at").is_(None), runs_table.c.lease_owner), else_=null()),
        lease_until=case((bindparam("finished_at").is_(None), runs_table.c.lease_until), else_=null()),
    )
)
_SQL_HOLD_LEASE = compile_sql(hold_lease())
_SQL_RELEASE_LEASE = compile_sql(
    update(runs_table)
    .where(runs_table.c.id == bindparam("run_id"), runs_table.c.lease_owner == bindparam("owner"))
    .values(lease_owner=null(), lease_until=null())
)


def create(db: sqlite3.Connection, values: dict[str, Any]) -> None:
    """`run_rows.create_values` as a new row; raises `sqlite3.IntegrityError` when the id is taken."""
    params = dict(values)
    params["inputs"] = json_dumps(params["inputs"])
    params["variables"] = json_dumps(params["variables"])
    params["document"] = json_or_none(params["document"])
    db.execute(_SQL_CREATE, params)


def begin(db: sqlite3.Connection, values: dict[str, Any]) -> Any:
    """`run_rows.begin_run` with `run_rows.begin_values`; returns the row's live context."""
    params = dict(values)
    for key in ("inputs", "variables", "context"):
        params[key] = json_dumps(params[key])
    sql = _SQL_BEGIN if params["parent_run_id"] is None else _SQL_BEGIN_CHILD
    (context,) = db.execute(sql, params).fetchone()
    return None if context is None else json.loads(context)


def read_vars(db: sqlite3.Connection, run_id: str) -> dict[str, Any]:
    """The live variables stored in the run's context ({} when none)."""
    stored = db.execute(_SQL_READ_CONTEXT, {"run_id": run_id}).fetchone()
    return live_vars(json.loads(stored[0]) if stored and stored[0] else None) or {}


def save_context(
    db: sqlite3.Connection, run_id: str, context: dict[str, Any] | None, last_seq: int | None
) -> None:
    """As `run_rows.save_context`: None leaves a column as it is."""
    db.execute(_SQL_SAVE_CONTEXT, {"run_id": run_id, "last_seq": last_seq, "context": json_or_none(context)})


def finish(db: sqlite3.Connection, run_id: str, values: dict[str, Any]) -> None:
    """`run_rows.finish_values` written to the run row."""
    db.execute(
        _SQL_FINISH,
        {
            "run_id": run_id,
            "status": values["status"],
            "outputs": json_or_none(values["outputs"]),
            "error": values["error"],
            "finished_at": values.get("finished_at"),
            "last_seq": values.get("last_seq"),
            "usage": json_or_none(values.get("usage")),
        },
    )


def holds_lease(db: sqlite3.Connection, run_id: str, owner: str) -> bool:
    """`run_rows.hold_lease`: whether `owner` still holds the run's lease."""
    return db.execute(_SQL_HOLD_LEASE, {"p_run_id": run_id, "p_owner": owner}).rowcount > 0


def release_lease(db: sqlite3.Connection, run_id: str, owner: str) -> bool:
    return db.execute(_SQL_RELEASE_LEASE, {"run_id": run_id, "owner": owner}).rowcount > 0


__all__ = [
    "begin",
    "compile_sql",
    "create",
    "finish",
    "holds_lease",
    "read_vars",
    "release_lease",
    "save_context",
]
