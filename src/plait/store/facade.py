"""`Store`: one object holding the engine, the session factory and every repository.

On a SQLite file the store owns one `SqliteWriter`, shared by the checkpointer and `RunRepo`:
checkpoints and run-row writes of this process go through one connection and commit together."""

from __future__ import annotations

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from plait.store.artifacts import SqlArtifacts
from plait.store.checkpointer import SqlCheckpointer
from plait.store.crypto import SecretBox
from plait.store.db import create_engine_from_url, database_url, make_sessionmaker, sqlite_path
from plait.store.migrate import migrate
from plait.store.repos import (
    ApiKeyRepo,
    AuthTokenRepo,
    ComponentRepo,
    DecisionRepo,
    EventRepo,
    FlowRepo,
    HumanTaskRepo,
    KnowledgeRepo,
    RestorePointRepo,
    RunRepo,
    ShareRepo,
    TriggerFireRepo,
    TriggerRepo,
    UserRepo,
    VariableRepo,
)
from plait.store.sqlite_writer import SqliteWriter


class Store:
    """`store = await Store.open()` (migrates first); `await store.close()` at shutdown."""

    def __init__(self, engine: AsyncEngine, *, box: SecretBox | None = None, url: str | None = None) -> None:
        self.engine = engine
        self.url = url or engine.url.render_as_string(hide_password=False)
        self.sessionmaker: async_sessionmaker[AsyncSession] = make_sessionmaker(engine)
        self.box = box or SecretBox.from_env(self.url)
        sm = self.sessionmaker
        path = sqlite_path(engine.url) if engine.dialect.name == "sqlite" else None
        self.sqlite_writer: SqliteWriter | None = SqliteWriter(str(path)) if path is not None else None
        self.users = UserRepo(sm)
        self.api_keys = ApiKeyRepo(sm)
        self.auth_tokens = AuthTokenRepo(sm)
        self.flows = FlowRepo(sm)
        self.shares = ShareRepo(sm)
        self.runs = RunRepo(sm, self.sqlite_writer)
        self.events = EventRepo(sm)
        self.human_tasks = HumanTaskRepo(sm)
        self.decisions = DecisionRepo(sm)
        self.variables = VariableRepo(sm, self.box)
        self.components = ComponentRepo(sm)
        self.triggers = TriggerRepo(sm)
        self.restore_points = RestorePointRepo(sm)
        self.trigger_fires = TriggerFireRepo(sm)
        self.artifacts = SqlArtifacts(sm)  # the files runs produce (document / spreadsheet nodes)
        self.knowledge = KnowledgeRepo(sm)  # knowledge bases, documents, chunks (issue 16)
        self._checkpointer: SqlCheckpointer | None = None

    @classmethod
    async def open(
        cls, url: str | URL | None = None, *, run_migrations: bool = True, box: SecretBox | None = None
    ) -> Store:
        """Connect to `url` (default: `PLAIT_DATABASE_URL`, else `./.plait/plait.db`), migrating first."""
        resolved = database_url(url)
        engine = create_engine_from_url(resolved)
        try:
            if run_migrations:
                await migrate(engine)
            return cls(engine, box=box, url=resolved)
        except BaseException:
            await engine.dispose()
            raise

    @property
    def checkpointer(self) -> SqlCheckpointer:
        """The store's checkpointer (one per store: it caches the live variables of active runs)."""
        if self._checkpointer is None:
            self._checkpointer = SqlCheckpointer(self.sessionmaker, writer=self.sqlite_writer)
        return self._checkpointer

    async def close(self) -> None:
        if self._checkpointer is not None:
            await self._checkpointer.close()
        if self.sqlite_writer is not None:
            await self.sqlite_writer.close()
        await self.engine.dispose()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
