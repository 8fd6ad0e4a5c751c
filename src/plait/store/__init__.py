"""Persistence: SQLAlchemy models, Alembic migrations, repositories and the SQL checkpointer.

Used by `service/` and `workers/` only (the engine talks to the `Checkpointer` protocol).

    store = await Store.open()                 # PLAIT_DATABASE_URL or ./.plait/plait.db, migrated
    result = await plait.run(flow, inputs, checkpointer=store.checkpointer)
    await store.close()
"""

from plait.store.checkpointer import SqlCheckpointer
from plait.store.crypto import DecryptionError, SecretBox, SecretKeyError
from plait.store.db import DEFAULT_URL, create_engine_from_url, database_url, make_sessionmaker
from plait.store.facade import Store
from plait.store.fencing import LeaseLost
from plait.store.migrate import current_revision, head_revision, migrate
from plait.store.repos import (
    ApiKeyRepo,
    ComponentRepo,
    DecisionRepo,
    EventRepo,
    FlowRepo,
    Heartbeat,
    HumanTaskRepo,
    RunRepo,
    TriggerRepo,
    UserRepo,
    VariableRepo,
    VariableView,
)
from plait.store.run_rows import NewRunFields

__all__ = [
    "DEFAULT_URL",
    "ApiKeyRepo",
    "ComponentRepo",
    "DecisionRepo",
    "DecryptionError",
    "EventRepo",
    "FlowRepo",
    "Heartbeat",
    "HumanTaskRepo",
    "LeaseLost",
    "NewRunFields",
    "RunRepo",
    "SecretBox",
    "SecretKeyError",
    "SqlCheckpointer",
    "Store",
    "TriggerRepo",
    "UserRepo",
    "VariableRepo",
    "VariableView",
    "create_engine_from_url",
    "current_revision",
    "database_url",
    "head_revision",
    "make_sessionmaker",
    "migrate",
]
