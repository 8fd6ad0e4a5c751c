"""SQLAlchemy 2 models of the plait database (ARCHITECTURE section 9).

Conventions:
- timestamps are epoch seconds in double-precision columns (the engine's own clock format: exact
  round trips, no time-zone handling differences between SQLite and PostgreSQL);
- documents and payloads are `JSON` (plain `json` on PostgreSQL, not `jsonb`, so key order and
  `\\u0000` survive a round trip exactly); Python `None` is stored as SQL NULL;
- autoincrement ids are BIGINT on PostgreSQL and INTEGER (rowid) on SQLite.

Any change here needs a new Alembic revision in `migrations/versions/`
(`tests/store/test_migrations.py` fails while the models and the migrations differ).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from plait.engine.status import RunStatus, TaskStatus

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONValue = JSON(none_as_null=True)
AutoId = BigInteger().with_variant(Integer(), "sqlite")
ID_LEN = 255


def new_id() -> str:
    return uuid.uuid4().hex


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        dict[str, Any]: JSONValue,
        list[Any]: JSONValue,
        Any: JSONValue,
        float: Double(),
        str: String(ID_LEN),
        bool: Boolean(),
        int: Integer(),
    }

    def __repr__(self) -> str:
        pk = ", ".join(f"{c.key}={getattr(self, str(c.key))!r}" for c in self.__mapper__.primary_key)
        return f"{type(self).__name__}({pk})"


class User(Base):
    """A person (or the local admin `plait serve` creates). `role` is `admin`, `editor` or
    `viewer`; a disabled user's keys and sessions stop working. `password_hash` is argon2 (NULL:
    no password, sign-in links and keys only)."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    email: Mapped[str | None] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(default="")
    password_hash: Mapped[str | None] = mapped_column(Text)
    role: Mapped[str] = mapped_column(String(16), default="editor", server_default="editor")
    disabled: Mapped[bool] = mapped_column(default=False, server_default=false())
    created_at: Mapped[float] = mapped_column(default=time.time)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(default="")
    prefix: Mapped[str] = mapped_column(String(32), index=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[Any] | None]  # read, write, run, admin; NULL: every scope (keys made before scopes)
    created_at: Mapped[float] = mapped_column(default=time.time)
    last_used_at: Mapped[float | None]
    revoked: Mapped[bool] = mapped_column(default=False, server_default=false())
    revoked_at: Mapped[float | None]


class AuthToken(Base):
    """A browser session (`kind` "session", the cookie) or a one-time sign-in link token (`kind`
    "signin", deleted when used). Only the SHA-256 of the token is kept."""

    __tablename__ = "auth_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[float] = mapped_column(default=time.time)
    expires_at: Mapped[float]


class FlowRow(Base):
    __tablename__ = "flows"

    id: Mapped[str] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(default="")
    description: Mapped[str] = mapped_column(Text, default="")
    draft: Mapped[dict[str, Any]]
    latest_version: Mapped[int] = mapped_column(default=0, server_default="0")
    owner_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    created_at: Mapped[float] = mapped_column(default=time.time)
    updated_at: Mapped[float] = mapped_column(default=time.time)


class FlowShare(Base):
    """A flow shared with a user as `viewer` or `editor` (its versions, runs and tasks follow)."""

    __tablename__ = "flow_shares"

    flow_id: Mapped[str] = mapped_column(ForeignKey("flows.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[float] = mapped_column(default=time.time)


class FlowVersion(Base):
    __tablename__ = "flow_versions"
    __table_args__ = (UniqueConstraint("flow_id", "version"),)

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    flow_id: Mapped[str] = mapped_column(ForeignKey("flows.id", ondelete="CASCADE"))
    version: Mapped[int]
    document: Mapped[dict[str, Any]]
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(default=time.time)


class FlowRestorePoint(Base):
    """A flow's draft as it was before the assistant changed it (migration 0008): what "Undo the
    assistant's changes" puts back. Not a published version; pruned to the newest few per flow."""

    __tablename__ = "flow_restore_points"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    flow_id: Mapped[str] = mapped_column(ForeignKey("flows.id", ondelete="CASCADE"), index=True)
    document: Mapped[dict[str, Any]]
    note: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str | None]  # the user whose request made it
    created_at: Mapped[float] = mapped_column(default=time.time)


class Run(Base):
    """One run. `flow_id` is not a foreign key: runs of flows that are not in the library (a file
    run from the CLI, a test) are stored too. `variables` are the flow variables the run started
    with (what the engine replays deltas onto); `context` is the live state, `{"vars": {...}}`.
    `document` is the flow document of a run of a draft (None for a published version).
    `owner_id` is the user the run acts as (who started it; its variables are the run's `env`)."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_flow_id_created_at", "flow_id", "created_at"),
        Index("ix_runs_status_lease_until", "status", "lease_until"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    flow_id: Mapped[str]
    owner_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    version: Mapped[int | None]
    document: Mapped[dict[str, Any] | None]
    status: Mapped[str] = mapped_column(String(16), default=RunStatus.QUEUED.value)
    inputs: Mapped[dict[str, Any]] = mapped_column(default=dict)
    variables: Mapped[dict[str, Any]] = mapped_column(default=dict)
    context: Mapped[dict[str, Any] | None]
    outputs: Mapped[dict[str, Any] | None]
    error: Mapped[str | None] = mapped_column(Text)
    usage: Mapped[dict[str, Any] | None]
    parent_run_id: Mapped[str | None] = mapped_column(index=True)
    lease_owner: Mapped[str | None]
    lease_until: Mapped[float | None]
    cancel_requested: Mapped[bool] = mapped_column(default=False, server_default=false())
    created_at: Mapped[float] = mapped_column(default=time.time)
    started_at: Mapped[float | None]
    finished_at: Mapped[float | None]
    last_seq: Mapped[int] = mapped_column(default=0, server_default="0")
    # The trigger that started the run (a schedule or a webhook; None: a direct call). Not a
    # foreign key: deleting a trigger keeps its runs' history.
    trigger_id: Mapped[str | None] = mapped_column(String(32), index=True)


class NodeRunRow(Base):
    """One node transition (ok, error, waiting, resumed) of a run: the engine's `NodeDelta`, in
    the order the engine saved them (`id`). `event_seq` is the run's last event seq at that save."""

    __tablename__ = "node_runs"
    __table_args__ = (Index("ix_node_runs_run_id_id", "run_id", "id"),)

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    node_id: Mapped[str]
    status: Mapped[str] = mapped_column(String(16))
    attempt: Mapped[int] = mapped_column(default=1)
    input: Mapped[Any | None]
    output: Mapped[Any | None]
    ports: Mapped[list[Any] | None]
    vars: Mapped[dict[str, Any] | None]
    error: Mapped[str | None] = mapped_column(Text)
    usage: Mapped[dict[str, Any] | None]
    interrupt: Mapped[dict[str, Any] | None]
    resume: Mapped[Any | None]
    started_at: Mapped[float | None]
    duration_ms: Mapped[float | None]
    reused: Mapped[bool] = mapped_column(default=False, server_default=false())
    event_seq: Mapped[int | None]
    recorded_at: Mapped[float] = mapped_column(default=time.time)


class RunEvent(Base):
    __tablename__ = "run_events"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    type: Mapped[str] = mapped_column(String(64))
    node_id: Mapped[str | None]
    data: Mapped[dict[str, Any] | None]
    ts: Mapped[float]


class Blob(Base):
    """A large JSON value stored once (see `plait.store.blobs`): `key` is the SHA-256 of `data`,
    its JSON text; rows refer to it as `{"$blob": key}`. `refs`: `data` is a dict or list some of
    whose items are such references themselves."""

    __tablename__ = "blobs"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    data: Mapped[str] = mapped_column(Text)
    size: Mapped[int] = mapped_column(BigInteger)
    refs: Mapped[bool] = mapped_column(default=False, server_default=false())
    created_at: Mapped[float] = mapped_column(default=time.time)


class HumanTask(Base):
    __tablename__ = "human_tasks"
    __table_args__ = (
        Index("ix_human_tasks_run_id_node_id", "run_id", "node_id"),
        Index("ix_human_tasks_status_expires_at", "status", "expires_at"),
    )

    token: Mapped[str] = mapped_column(String(64), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    node_id: Mapped[str]
    kind: Mapped[str] = mapped_column(String(32), default="human")
    status: Mapped[str] = mapped_column(String(16), default=TaskStatus.PENDING.value)
    message: Mapped[str] = mapped_column(Text, default="")
    fields: Mapped[list[Any]] = mapped_column(default=list)
    prefill: Mapped[dict[str, Any]] = mapped_column(default=dict)
    actions: Mapped[list[Any]] = mapped_column(default=list)
    assignees: Mapped[list[Any]] = mapped_column(default=list)
    result: Mapped[dict[str, Any] | None]
    blocking: Mapped[bool] = mapped_column(default=True)
    expires_at: Mapped[float | None]
    created_at: Mapped[float] = mapped_column(default=time.time)
    resolved_at: Mapped[float | None]


class Decision(Base):
    """One decision of the edge-LLM policy (`{mode, next, skips, reason}`), in step order."""

    __tablename__ = "decisions"
    __table_args__ = (Index("ix_decisions_run_id_step", "run_id", "step"),)

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    step: Mapped[int]
    node_id: Mapped[str | None]
    data: Mapped[dict[str, Any]]
    created_at: Mapped[float] = mapped_column(default=time.time)


class Variable(Base):
    """A variable flows read as `{{env.NAME}}`; `value` is a Fernet token of the JSON value (every
    value is encrypted, `is_secret` only decides whether listings redact it). `owner_id` is the user
    it belongs to; NULL: deployment-wide (admins set it; every run reads it as a default). Names are
    unique per owner, as for components."""

    __tablename__ = "variables"
    __table_args__ = (
        UniqueConstraint("owner_id", "name"),
        Index(
            "uq_variables_name_global",
            "name",
            unique=True,
            sqlite_where=text("owner_id IS NULL"),
            postgresql_where=text("owner_id IS NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str]
    value: Mapped[str] = mapped_column(Text)
    is_secret: Mapped[bool] = mapped_column(default=False, server_default=false())
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[float] = mapped_column(default=time.time)
    updated_at: Mapped[float] = mapped_column(default=time.time)


class Component(Base):
    """A custom component (user code run in the sandbox); `spec` holds ports and config schema.

    Components belong to an owner (`owner_id`, a user; NULL: the deployment-wide owner, i.e. API
    keys without a user). Names are unique per owner: (owner_id, name) for users, and a partial
    unique index on `name` where `owner_id IS NULL` (SQL treats NULLs as distinct in a unique
    constraint, so the pair alone would allow duplicate deployment-wide names).

    `session_id` is the assistant session that registered the component (a generated component,
    wiped when that session is reset); NULL for the owner's own components (saved through the API
    or the canvas), which a reset never touches."""

    __tablename__ = "components"
    __table_args__ = (
        UniqueConstraint("owner_id", "name"),
        Index("ix_components_owner_id_session_id", "owner_id", "session_id"),
        Index(
            "uq_components_name_shared",
            "name",
            unique=True,
            sqlite_where=text("owner_id IS NULL"),
            postgresql_where=text("owner_id IS NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str]
    kind: Mapped[str] = mapped_column(String(32), default="node")
    description: Mapped[str] = mapped_column(Text, default="")
    code: Mapped[str] = mapped_column(Text)
    spec: Mapped[dict[str, Any]] = mapped_column(default=dict)
    version: Mapped[int] = mapped_column(default=1)
    session_id: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[float] = mapped_column(default=time.time)
    updated_at: Mapped[float] = mapped_column(default=time.time)


class Trigger(Base):
    """What starts runs of a flow besides a direct call: `webhook`, `schedule`, ..."""

    __tablename__ = "triggers"
    __table_args__ = (Index("ix_triggers_enabled_next_fire_at", "enabled", "next_fire_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    flow_id: Mapped[str] = mapped_column(ForeignKey("flows.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    enabled: Mapped[bool] = mapped_column(default=True)
    secret_hash: Mapped[str | None] = mapped_column(String(64))
    # The webhook secret encrypted with the store's key (`SecretBox`): the HMAC signature check
    # needs the secret itself; `secret_hash` checks a secret sent as a bearer token.
    secret_enc: Mapped[str | None] = mapped_column(Text)
    last_fired_at: Mapped[float | None]
    next_fire_at: Mapped[float | None]
    created_at: Mapped[float] = mapped_column(default=time.time)
    updated_at: Mapped[float] = mapped_column(default=time.time)


class TriggerFire(Base):
    """One firing of a trigger, the arbiter of "exactly once": the row `(trigger_id, fire_key)` is
    unique, so of the servers that see the same schedule tick (`fire_key` "at:<epoch>") or the same
    signed webhook delivery ("sig:<signature>", "key:<idempotency key>") only the one whose INSERT
    wins starts a run. `status`: `started` (`run_id` set), `skipped` (overlap or missed-run
    policy), `failed` (the run could not start: `error`)."""

    __tablename__ = "trigger_fires"
    __table_args__ = (
        UniqueConstraint("trigger_id", "fire_key"),
        Index("ix_trigger_fires_trigger_id_fire_at", "trigger_id", "fire_at"),
    )

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    trigger_id: Mapped[str] = mapped_column(ForeignKey("triggers.id", ondelete="CASCADE"))
    fire_key: Mapped[str] = mapped_column(String(160))
    fire_at: Mapped[float]
    status: Mapped[str] = mapped_column(String(16))
    run_id: Mapped[str | None]
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(default=time.time)


class KnowledgeBase(Base):
    """A knowledge base (issue 16): documents cut into chunks that `retrieval` nodes search.

    Owned like components: by a user (`owner_id`), or deployment-wide (NULL); names are unique per
    owner. Embeddings are optional: with `embedding_url` and `embedding_model` set, every chunk
    gets a vector from that OpenAI-compatible endpoint (the API key is read from the owner's
    variable named `embedding_key_variable`, never stored here); without them search is full-text
    only. `chunk_chars` / `overlap_chars` are how new documents are cut."""

    __tablename__ = "knowledge_bases"
    __table_args__ = (
        UniqueConstraint("owner_id", "name"),
        Index(
            "uq_knowledge_bases_name_shared",
            "name",
            unique=True,
            sqlite_where=text("owner_id IS NULL"),
            postgresql_where=text("owner_id IS NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str]
    description: Mapped[str] = mapped_column(Text, default="")
    embedding_url: Mapped[str | None] = mapped_column(String(2048))
    embedding_model: Mapped[str | None]
    embedding_key_variable: Mapped[str | None]
    chunk_chars: Mapped[int] = mapped_column(default=800)
    overlap_chars: Mapped[int] = mapped_column(default=120)
    created_at: Mapped[float] = mapped_column(default=time.time)
    updated_at: Mapped[float] = mapped_column(default=time.time)


class KnowledgeDocument(Base):
    """An uploaded document of a knowledge base: its name, type, size and how many chunks it
    gave. The file itself is not kept, only its chunks."""

    __tablename__ = "kb_documents"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    kb_id: Mapped[str] = mapped_column(ForeignKey("knowledge_bases.id", ondelete="CASCADE"), index=True)
    name: Mapped[str]
    kind: Mapped[str] = mapped_column(String(16))
    size: Mapped[int] = mapped_column(BigInteger)
    chunk_count: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[float] = mapped_column(default=time.time)


class KnowledgeChunk(Base):
    """One chunk of a document. The full-text index over `content` is not a model: an FTS5 table
    (`kb_chunks_fts`, kept in step by triggers) on SQLite, a GIN index on the `english` tsvector
    on PostgreSQL (migration 0009). `embedding` is the chunk's vector (JSON list; NULL without
    embeddings)."""

    __tablename__ = "kb_chunks"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    kb_id: Mapped[str] = mapped_column(ForeignKey("knowledge_bases.id", ondelete="CASCADE"), index=True)
    document_id: Mapped[str] = mapped_column(ForeignKey("kb_documents.id", ondelete="CASCADE"), index=True)
    position: Mapped[int]
    content: Mapped[str] = mapped_column(Text)
    embedding: Mapped[list[Any] | None] = mapped_column(JSONValue)


TABLES = sorted(Base.metadata.tables)


def table_of(model: type[Base]) -> Table:
    """The Core table of a model, for statements built without the ORM (`Model.__table__` is
    typed as a FromClause)."""
    table = model.__table__
    assert isinstance(table, Table)
    return table
