"""Users, roles and ownership (issue 11):

- `users.role` (`admin`, `editor`, `viewer`; former `is_admin` users become admins) and
  `users.disabled`, replacing `users.is_admin`;
- `api_keys.scopes` (NULL: every scope, as keys had before);
- `auth_tokens`: browser sessions and one-time sign-in link tokens (hashed);
- `flow_shares`: a flow shared with a user as viewer or editor;
- `runs.owner_id`: the user a run acts as;
- `variables` per owner: a surrogate `id` key, `owner_id` (NULL: deployment-wide, which every
  existing variable becomes), names unique per owner.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GLOBAL = sa.text("owner_id IS NULL")


def _variables_table(*, owned: bool) -> list[Any]:
    columns: list[Any] = []
    if owned:
        columns += [
            sa.Column("id", sa.String(length=32), nullable=False),
            sa.Column("owner_id", sa.String(length=32), nullable=True),
        ]
    columns += [
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("is_secret", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
    ]
    if owned:
        columns += [
            sa.ForeignKeyConstraint(
                ["owner_id"], ["users.id"], name=op.f("fk_variables_owner_id_users"), ondelete="CASCADE"
            ),
            sa.PrimaryKeyConstraint("id", name=op.f("pk_variables")),
            sa.UniqueConstraint("owner_id", "name", name=op.f("uq_variables_owner_id_name")),
        ]
    else:
        columns.append(sa.PrimaryKeyConstraint("name", name=op.f("pk_variables")))
    return columns


def _copy_variables(*, owned: bool) -> None:
    """Recreate `variables` in the other shape, keeping its rows (a few per deployment)."""
    conn = op.get_bind()
    rows = [dict(r._mapping) for r in conn.execute(sa.text("SELECT * FROM variables"))]
    if not owned:  # down: only the deployment-wide variables fit the name-keyed table
        rows = [r for r in rows if r.get("owner_id") is None]
    if not owned:
        op.drop_index("uq_variables_name_global", table_name="variables")
    op.drop_table("variables")
    table = op.create_table("variables", *_variables_table(owned=owned))
    if owned:
        op.create_index(
            "uq_variables_name_global",
            "variables",
            ["name"],
            unique=True,
            sqlite_where=GLOBAL,
            postgresql_where=GLOBAL,
        )
    for row in rows:
        row.pop("id", None)
        row.pop("owner_id", None)
        if owned:
            row["id"] = uuid.uuid4().hex
            row["owner_id"] = None
    if rows:
        op.bulk_insert(table, rows)


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("role", sa.String(length=16), server_default="editor", nullable=False))
        batch_op.add_column(sa.Column("disabled", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.execute(sa.text("UPDATE users SET role = 'admin' WHERE is_admin"))
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("is_admin")

    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scopes", sa.JSON(), nullable=True))

    op.create_table(
        "auth_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_auth_tokens_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_auth_tokens")),
    )
    op.create_index(op.f("ix_auth_tokens_user_id"), "auth_tokens", ["user_id"], unique=False)

    op.create_table(
        "flow_shares",
        sa.Column("flow_id", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["flow_id"], ["flows.id"], name=op.f("fk_flow_shares_flow_id_flows"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_flow_shares_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("flow_id", "user_id", name=op.f("pk_flow_shares")),
    )
    op.create_index(op.f("ix_flow_shares_user_id"), "flow_shares", ["user_id"], unique=False)

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner_id", sa.String(length=32), nullable=True))
        batch_op.create_index(batch_op.f("ix_runs_owner_id"), ["owner_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_runs_owner_id_users"), "users", ["owner_id"], ["id"], ondelete="SET NULL"
        )

    _copy_variables(owned=True)


def downgrade() -> None:
    _copy_variables(owned=False)
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_runs_owner_id_users"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_runs_owner_id"))
        batch_op.drop_column("owner_id")
    op.drop_index(op.f("ix_flow_shares_user_id"), table_name="flow_shares")
    op.drop_table("flow_shares")
    op.drop_index(op.f("ix_auth_tokens_user_id"), table_name="auth_tokens")
    op.drop_table("auth_tokens")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_column("scopes")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("is_admin", sa.Boolean(), server_default=sa.false(), nullable=False))
    op.execute(sa.text("UPDATE users SET is_admin = (role = 'admin')"))
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("disabled")
        batch_op.drop_column("role")
