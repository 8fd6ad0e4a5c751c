"""Triggers that fire (issue 17): `trigger_fires`, one row per firing of a trigger, unique per
`(trigger_id, fire_key)` so that of several servers seeing the same schedule tick or the same
signed webhook delivery exactly one starts a run; `triggers.secret_enc`, the webhook secret
encrypted (the HMAC check needs it); `runs.trigger_id`, the trigger that started a run.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "trigger_fires",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("trigger_id", sa.String(length=32), nullable=False),
        sa.Column("fire_key", sa.String(length=160), nullable=False),
        sa.Column("fire_at", sa.Double(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("run_id", sa.String(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["trigger_id"],
            ["triggers.id"],
            name=op.f("fk_trigger_fires_trigger_id_triggers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trigger_fires")),
        sa.UniqueConstraint("trigger_id", "fire_key", name=op.f("uq_trigger_fires_trigger_id_fire_key")),
    )
    op.create_index(
        "ix_trigger_fires_trigger_id_fire_at", "trigger_fires", ["trigger_id", "fire_at"], unique=False
    )
    # Nullable columns without constraints: a plain ALTER TABLE ... ADD COLUMN on both databases
    # (no batch copy of `runs`, see `downgrade`).
    op.add_column("triggers", sa.Column("secret_enc", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("trigger_id", sa.String(length=32), nullable=True))
    op.create_index(op.f("ix_runs_trigger_id"), "runs", ["trigger_id"], unique=False)


def downgrade() -> None:
    # Plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+), not a batch copy: on SQLite, recreating
    # `runs` drops the old table, and its ON DELETE CASCADE would take node runs and events along.
    op.drop_index("ix_trigger_fires_trigger_id_fire_at", table_name="trigger_fires")
    op.drop_table("trigger_fires")
    op.drop_index(op.f("ix_runs_trigger_id"), table_name="runs")
    op.drop_column("runs", "trigger_id")
    op.drop_column("triggers", "secret_enc")
