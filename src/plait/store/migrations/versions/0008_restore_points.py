"""Restore points (issue 13): a flow's draft as it was before the assistant changed it, kept
apart from the published versions (a restore point is never what a run of "latest" uses).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "flow_restore_points",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("flow_id", sa.String(length=255), nullable=False),
        sa.Column("document", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["flow_id"], ["flows.id"], name=op.f("fk_flow_restore_points_flow_id_flows"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flow_restore_points")),
    )
    op.create_index(op.f("ix_flow_restore_points_flow_id"), "flow_restore_points", ["flow_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_flow_restore_points_flow_id"), table_name="flow_restore_points")
    op.drop_table("flow_restore_points")
