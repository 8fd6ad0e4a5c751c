"""Large values stored once (issue 11): `blobs`, content-addressed JSON texts that `node_runs.output`,
`runs.outputs` and `run_events.data` refer to as `{"$blob": key}` when a value's JSON is over
64 KiB (`plait.store.blobs`). Existing rows stay inline; readers take both.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("refs", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_blobs")),
    )


# The columns that may hold `{"$blob": key}`: table, key columns, column.
_REFERRING = (
    ("node_runs", ("id",), "output"),
    ("runs", ("id",), "outputs"),
    ("run_events", ("run_id", "seq"), "data"),
)


def _is_ref(value: Any) -> bool:
    return type(value) is dict and len(value) == 1 and "$blob" in value


def _blob_value(conn: Any, key: str, cache: dict[str, Any]) -> Any:
    if key not in cache:
        row = conn.execute(sa.text("SELECT data, refs FROM blobs WHERE key = :key"), {"key": key}).first()
        if row is None:
            return {"$blob": key}
        value = json.loads(row[0])
        if row[1]:
            if isinstance(value, dict):
                value = {
                    k: _blob_value(conn, v["$blob"], cache) if _is_ref(v) else v for k, v in value.items()
                }
            else:
                value = [_blob_value(conn, v["$blob"], cache) if _is_ref(v) else v for v in value]
        cache[key] = value
    return cache[key]


def downgrade() -> None:
    # Put the values rows refer to back inline first (this revision's code reads references).
    conn = op.get_bind()
    cache: dict[str, Any] = {}
    for name, keys, column in _REFERRING:
        table = sa.table(name, sa.column(column, sa.JSON(none_as_null=True)), *(sa.column(k) for k in keys))
        found = conn.execute(
            sa.select(*(table.c[k] for k in keys), table.c[column]).where(
                sa.cast(table.c[column], sa.Text).like('%"$blob"%')
            )
        ).all()
        for row in found:
            value = row[-1]
            if _is_ref(value):
                where = [table.c[k] == row[i] for i, k in enumerate(keys)]
                conn.execute(
                    sa.update(table).where(*where).values({column: _blob_value(conn, value["$blob"], cache)})
                )
    op.drop_table("blobs")
