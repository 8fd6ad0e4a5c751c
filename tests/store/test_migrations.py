from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from plait.store import Store, create_engine_from_url, current_revision, head_revision, migrate
from plait.store.migrate import MIGRATIONS_DIR, alembic_config
from plait.store.models import TABLES, Base
from plait.store.repos.knowledge import FTS_NAME

EXPECTED_TABLES = {
    "api_keys",
    "blobs",
    "auth_tokens",
    "components",
    "decisions",
    "flow_shares",
    "flow_restore_points",
    "flow_versions",
    "flows",
    "human_tasks",
    "kb_chunks",
    "kb_documents",
    "knowledge_bases",
    "node_runs",
    "run_events",
    "runs",
    "trigger_fires",
    "triggers",
    "users",
    "variables",
}


async def _tables(url: str) -> set[str]:
    engine = create_engine_from_url(url)
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
            # SQLite's FTS5 index of knowledge chunks (a virtual table and its shadow tables).
            return {n for n in names if not n.startswith(FTS_NAME)}
    finally:
        await engine.dispose()


async def test_migrate_creates_every_table_and_is_idempotent(db_url: str) -> None:
    assert set(TABLES) == EXPECTED_TABLES
    assert await current_revision(db_url) is None
    await migrate(db_url)
    assert await current_revision(db_url) == head_revision() == "0009"
    assert await _tables(db_url) == EXPECTED_TABLES | {"alembic_version"}
    await migrate(db_url)  # second run: nothing to do, no error
    assert await current_revision(db_url) == head_revision()


async def test_models_and_migrations_agree(db_url: str) -> None:
    """Fails when a model changes without a new revision in store/migrations/versions/."""
    await migrate(db_url)
    engine = create_engine_from_url(db_url)

    def diff(conn: object) -> list[object]:
        # The full-text index of knowledge chunks is no model (plait.store.repos.knowledge).
        opts = {"compare_type": True, "include_name": lambda name, *_: not str(name).startswith(FTS_NAME)}
        ctx = MigrationContext.configure(conn, opts=opts)  # type: ignore[arg-type]
        return compare_metadata(ctx, Base.metadata)

    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(diff) == []
    finally:
        await engine.dispose()


async def test_downgrade_to_base_and_upgrade_again(db_url: str) -> None:
    await migrate(db_url)
    engine = create_engine_from_url(db_url)

    def downgrade(conn: object) -> None:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")

    try:
        async with engine.connect() as conn:
            await conn.run_sync(downgrade)
            await conn.commit()
    finally:
        await engine.dispose()
    assert await _tables(db_url) <= {"alembic_version"}
    await migrate(db_url)
    assert await _tables(db_url) == EXPECTED_TABLES | {"alembic_version"}


async def _upgrade_with_data(db_url: str, before: str, insert: str, after: str) -> None:
    """Migrate to `before`, insert a row the old way, then migrate to `after`."""
    engine = create_engine_from_url(db_url)

    def upgrade(conn: object, target: str) -> None:
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, target)

    try:
        async with engine.connect() as conn:
            await conn.run_sync(upgrade, before)
            for statement in insert.split(";"):
                await conn.execute(text(statement))
            await conn.commit()
            await conn.run_sync(upgrade, after)
            await conn.commit()
    finally:
        await engine.dispose()


async def test_upgrade_0001_to_0002_keeps_components_as_shared(db_url: str, box: object) -> None:
    await _upgrade_with_data(
        db_url,
        "0001",
        "INSERT INTO components (id, name, kind, description, code, spec, version,"
        " created_at, updated_at) VALUES ('c1', 'Upper', 'node', 'd', 'code', '{}', 3, 1.0, 2.0)",
        "0002",
    )
    assert await current_revision(db_url) == "0002"
    store = await Store.open(db_url, box=box)  # type: ignore[arg-type]
    try:
        row = await store.components.get("Upper")
        assert row is not None and row.id == "c1" and row.owner_id is None and row.version == 3
        assert row.code == "code" and row.description == "d" and row.updated_at == 2.0
        user = await store.users.create(email="a@example.com")
        mine = await store.components.save("Upper", "mine", owner_id=user.id)  # same name, new owner
        assert mine.id != "c1" and (await store.components.save("Upper", "new")).id == "c1"
    finally:
        await store.close()


async def test_upgrade_0002_to_0003_keeps_runs_without_a_document(db_url: str, box: object) -> None:
    await _upgrade_with_data(
        db_url,
        "0002",
        "INSERT INTO runs (id, flow_id, status, inputs, variables, cancel_requested,"
        " created_at, last_seq) VALUES ('r1', 'f', 'waiting', '{}', '{}', false, 1.0, 4)",
        "0003",
    )
    store = await Store.open(db_url, box=box)  # type: ignore[arg-type]
    try:
        row = await store.runs.get("r1")
        assert row is not None and row.status == "waiting" and row.last_seq == 4 and row.document is None
    finally:
        await store.close()


async def test_upgrade_0003_to_0004_keeps_variables_deployment_wide_and_admins(
    db_url: str, box: object
) -> None:
    store = await Store.open(db_url, box=box, run_migrations=False)  # type: ignore[arg-type]
    try:
        token = store.box.encrypt("s3cret")
    finally:
        await store.close()
    await _upgrade_with_data(
        db_url,
        "0003",
        "INSERT INTO variables (name, value, is_secret, description, created_at, updated_at)"
        f" VALUES ('KEY', '{token}', true, 'd', 1.0, 2.0);"
        " INSERT INTO users (id, email, name, is_admin, created_at) VALUES ('u1', 'a@x', 'A', true, 1.0)",
        "0004",
    )
    store = await Store.open(db_url, box=box)  # type: ignore[arg-type]
    try:
        assert await store.variables.values() == {"KEY": "s3cret"}
        views = await store.variables.list_variables()
        assert [(v.name, v.owner_id, v.is_secret) for v in views] == [("KEY", None, True)]
        user = await store.users.get("u1")
        assert user is not None and user.role == "admin" and not user.disabled
    finally:
        await store.close()


async def test_upgrade_0006_to_0007_keeps_components_as_the_users_own(db_url: str, box: object) -> None:
    await _upgrade_with_data(
        db_url,
        "0006",
        "INSERT INTO users (id, email, name, role, disabled, created_at)"
        " VALUES ('u1', 'a@x', 'A', 'editor', false, 1.0);"
        " INSERT INTO components (id, owner_id, name, kind, description, code, spec, version,"
        " created_at, updated_at) VALUES ('c1', 'u1', 'Upper', 'node', 'd', 'code', '{}', 2, 1.0, 2.0)",
        "0007",
    )
    store = await Store.open(db_url, box=box)  # type: ignore[arg-type]
    try:
        row = await store.components.get("Upper", owner_id="u1")
        assert row is not None and row.id == "c1" and row.session_id is None and row.version == 2
        assert await store.components.delete_session_components("u1") == 0  # the user's own stays
        assert await store.components.get("Upper", owner_id="u1") is not None
    finally:
        await store.close()


async def test_concurrent_migrations_in_one_process(db_url: str) -> None:
    await asyncio.gather(*(migrate(db_url) for _ in range(4)))
    assert await current_revision(db_url) == head_revision()


async def test_concurrent_migrations_in_several_processes(db_url: str, tmp_path: Path) -> None:
    script = "import asyncio, sys\nfrom plait.store import migrate\nasyncio.run(migrate(sys.argv[1]))\n"
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, db_url, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    results = [await p.communicate() for p in procs]
    for proc, (_out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err.decode()
    assert await current_revision(db_url) == head_revision()
    assert await _tables(db_url) == EXPECTED_TABLES | {"alembic_version"}


async def test_store_open_migrates(db_url: str, box: object) -> None:
    store = await Store.open(db_url, box=box)  # type: ignore[arg-type]
    try:
        assert await current_revision(store.engine) == head_revision()
    finally:
        await store.close()


def test_migrations_folder_ships_with_the_package() -> None:
    assert (MIGRATIONS_DIR / "env.py").is_file()
    assert (MIGRATIONS_DIR / "script.py.mako").is_file()
    assert (MIGRATIONS_DIR / "alembic.ini").is_file()
    assert any(p.name.startswith("0001_") for p in (MIGRATIONS_DIR / "versions").iterdir())
