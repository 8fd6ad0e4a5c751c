"""Per-user components: `components.owner_id` (FK users.id, ON DELETE CASCADE), names unique per
owner instead of globally. Existing rows keep a NULL owner (the deployment-wide owner).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHARED = sa.text("owner_id IS NULL")


def upgrade() -> None:
    with op.batch_alter_table("components", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner_id", sa.String(length=32), nullable=True))
        batch_op.drop_constraint(batch_op.f("uq_components_name"), type_="unique")
        batch_op.create_unique_constraint(batch_op.f("uq_components_owner_id_name"), ["owner_id", "name"])
        batch_op.create_foreign_key(
            batch_op.f("fk_components_owner_id_users"), "users", ["owner_id"], ["id"], ondelete="CASCADE"
        )
    op.create_index(
        "uq_components_name_shared",
        "components",
        ["name"],
        unique=True,
        sqlite_where=SHARED,
        postgresql_where=SHARED,
    )


def downgrade() -> None:
    # Names are unique again across the deployment: components owned by users are dropped.
    op.execute(sa.text("DELETE FROM components WHERE owner_id IS NOT NULL"))
    op.drop_index("uq_components_name_shared", table_name="components")
    with op.batch_alter_table("components", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_components_owner_id_users"), type_="foreignkey")
        batch_op.drop_constraint(batch_op.f("uq_components_owner_id_name"), type_="unique")
        batch_op.create_unique_constraint(batch_op.f("uq_components_name"), ["name"])
        batch_op.drop_column("owner_id")
