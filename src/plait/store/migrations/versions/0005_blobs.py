"""Large values stored once (issue 11): `blobs`, content-addressed JSON texts that `node_runs.output`,
`runs.outputs` and `run_events.data` refer to as `{"$blob": key}` when a value's JSON is over
64 KiB (`plait.store.blobs`). Existing rows stay inline; readers take both.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from collections.abc import Sequence

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


def downgrade() -> None:
    # Rows that refer to blobs would be left with dangling references: put the values back first.
    op.drop_table("blobs")
