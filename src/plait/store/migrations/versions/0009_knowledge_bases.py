"""Knowledge bases (issue 16): bases, their documents and chunks, and the full-text index the
`retrieval` node searches without any model.

The full-text index is the database's own: on SQLite an FTS5 table over `kb_chunks.content`
(external content, porter stemming) kept in step by three triggers; on PostgreSQL a GIN index on
`to_tsvector('english', content)`. Neither is a model (see `plait.store.repos.knowledge`), so the
models/migrations comparison leaves out names starting with `kb_chunks_fts`.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHARED = sa.text("owner_id IS NULL")
AUTO_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

SQLITE_FTS = (
    "CREATE VIRTUAL TABLE kb_chunks_fts USING fts5("
    "content, content='kb_chunks', content_rowid='id', tokenize='porter unicode61')",
    "CREATE TRIGGER kb_chunks_fts_ai AFTER INSERT ON kb_chunks BEGIN "
    "INSERT INTO kb_chunks_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER kb_chunks_fts_ad AFTER DELETE ON kb_chunks BEGIN "
    "INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, content) VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER kb_chunks_fts_au AFTER UPDATE ON kb_chunks BEGIN "
    "INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, content) VALUES ('delete', old.id, old.content); "
    "INSERT INTO kb_chunks_fts(rowid, content) VALUES (new.id, new.content); END",
)
SQLITE_FTS_DROP = (
    "DROP TRIGGER IF EXISTS kb_chunks_fts_au",
    "DROP TRIGGER IF EXISTS kb_chunks_fts_ad",
    "DROP TRIGGER IF EXISTS kb_chunks_fts_ai",
    "DROP TABLE IF EXISTS kb_chunks_fts",
)
PG_FTS = "CREATE INDEX kb_chunks_fts ON kb_chunks USING gin (to_tsvector('english', content))"
PG_FTS_DROP = "DROP INDEX IF EXISTS kb_chunks_fts"


def upgrade() -> None:
    op.create_table(
        "knowledge_bases",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("owner_id", sa.String(length=32), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("embedding_url", sa.String(length=2048), nullable=True),
        sa.Column("embedding_model", sa.String(length=255), nullable=True),
        sa.Column("embedding_key_variable", sa.String(length=255), nullable=True),
        sa.Column("chunk_chars", sa.Integer(), nullable=False),
        sa.Column("overlap_chars", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["users.id"], name=op.f("fk_knowledge_bases_owner_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_bases")),
        sa.UniqueConstraint("owner_id", "name", name=op.f("uq_knowledge_bases_owner_id_name")),
    )
    op.create_index(
        "uq_knowledge_bases_name_shared",
        "knowledge_bases",
        ["name"],
        unique=True,
        sqlite_where=SHARED,
        postgresql_where=SHARED,
    )
    op.create_table(
        "kb_documents",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("kb_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name=op.f("fk_kb_documents_kb_id_knowledge_bases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_kb_documents")),
    )
    op.create_index(op.f("ix_kb_documents_kb_id"), "kb_documents", ["kb_id"], unique=False)
    op.create_table(
        "kb_chunks",
        sa.Column("id", AUTO_ID, autoincrement=True, nullable=False),
        sa.Column("kb_id", sa.String(length=32), nullable=False),
        sa.Column("document_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("embedding", sa.JSON(none_as_null=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["kb_id"],
            ["knowledge_bases.id"],
            name=op.f("fk_kb_chunks_kb_id_knowledge_bases"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["kb_documents.id"],
            name=op.f("fk_kb_chunks_document_id_kb_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_kb_chunks")),
    )
    op.create_index(op.f("ix_kb_chunks_kb_id"), "kb_chunks", ["kb_id"], unique=False)
    op.create_index(op.f("ix_kb_chunks_document_id"), "kb_chunks", ["document_id"], unique=False)
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for statement in SQLITE_FTS:
            op.execute(statement)
    elif dialect == "postgresql":
        op.execute(PG_FTS)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for statement in SQLITE_FTS_DROP:
            op.execute(statement)
    elif dialect == "postgresql":
        op.execute(PG_FTS_DROP)
    op.drop_index(op.f("ix_kb_chunks_document_id"), table_name="kb_chunks")
    op.drop_index(op.f("ix_kb_chunks_kb_id"), table_name="kb_chunks")
    op.drop_table("kb_chunks")
    op.drop_index(op.f("ix_kb_documents_kb_id"), table_name="kb_documents")
    op.drop_table("kb_documents")
    op.drop_index("uq_knowledge_bases_name_shared", table_name="knowledge_bases")
    op.drop_table("knowledge_bases")
