"""Components the assistant generated (issue 12): `components.session_id`, the assistant session
that registered the component (NULL: the owner's own component, saved through the API or the
canvas), and an index on `(owner_id, session_id)` for the wipe on a session reset.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A nullable column without constraints: a plain ALTER TABLE ... ADD COLUMN on both databases.
    # No batch copy of `components` on SQLite: recreating the table from reflection would have to
    # carry the partial unique index `uq_components_name_shared` over with its WHERE clause.
    op.add_column("components", sa.Column("session_id", sa.String(length=128), nullable=True))
    op.create_index(
        "ix_components_owner_id_session_id", "components", ["owner_id", "session_id"], unique=False
    )


def downgrade() -> None:
    # Before this revision nothing wipes a session's components: they would stay for good and
    # pass for the user's own. They were temporary, so they go.
    op.execute(sa.text("DELETE FROM components WHERE session_id IS NOT NULL"))
    op.drop_index("ix_components_owner_id_session_id", table_name="components")
    # Plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+), as in 0006.
    op.drop_column("components", "session_id")
