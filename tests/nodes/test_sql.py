"""The `sql` node and tool on real databases: a SQLite file and PostgreSQL (PLAIT_TEST_POSTGRES_URL).

Writes are refused by parsing (DELETE, UPDATE, `SELECT 1; DROP TABLE`, a CTE that writes), the
connection URL comes from a stored variable, rows and time are bounded.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from urllib.parse import urlsplit

import asyncpg
import pytest

import plait
from plait.tools import default_tools
from plait.tools import sql as sql_module
from plait.tools.base import ToolError
from plait.tools.sql import SqlRefused, check_statement, run_query

POSTGRES_URL = os.environ.get("PLAIT_TEST_POSTGRES_URL")


def flow(query: str, **config) -> dict:
    return {
        "schema": "plait/flow@1",
        "id": "sql-test",
        "nodes": [{"id": "q", "type": "sql", "config": {"query": query, **config}}],
        "edges": [],
    }


@pytest.fixture
def sqlite_db(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAIT_SQL_SQLITE_DIRS", str(tmp_path))
    path = tmp_path / "shop.db"
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL);
        INSERT INTO items (name, price) VALUES ('apple', 1.5), ('pear', 2.25), ('fig | dried', 4.0);
        """
    )
    con.commit()
    con.close()
    return f"sqlite:///{path}"


async def test_select_returns_rows_and_markdown(sqlite_db):
    result = await plait.run(
        flow("SELECT name, price FROM items WHERE price > ? ORDER BY id", params=[2]),
        env={"SQL_URL": sqlite_db},
    )
    assert result.status == "completed", result.error
    out = result.nodes["q"].output
    assert out["columns"] == ["name", "price"]
    assert out["rows"] == [{"name": "pear", "price": 2.25}, {"name": "fig | dried", "price": 4.0}]
    assert out["row_count"] == 2 and out["truncated"] is False
    assert out["markdown"].splitlines() == [
        "| name | price |",
        "|---|---|",
        "| pear | 2.25 |",
        "| fig \\| dried | 4.0 |",
    ]


async def test_row_limit_truncates(sqlite_db):
    result = await plait.run(flow("SELECT * FROM items ORDER BY id", max_rows=2), env={"SQL_URL": sqlite_db})
    out = result.nodes["q"].output
    assert [r["name"] for r in out["rows"]] == ["apple", "pear"]
    assert out["truncated"] is True


@pytest.mark.parametrize(
    ("statement", "says"),
    [
        ("DELETE FROM items", "not DELETE"),
        ("UPDATE items SET price = 0", "not UPDATE"),
        ("UPDATE items SET price = 0; DROP TABLE items", "2 statements"),
        ("SELECT 1; DROP TABLE items", "2 statements"),
        ("WITH gone AS (DELETE FROM items RETURNING *) SELECT * FROM gone", "DELETE (in a WITH clause)"),
        ("WITH a AS (SELECT 1) INSERT INTO items (name) SELECT 'x' FROM a", "not INSERT"),
        ("SELECT * INTO copy FROM items", "SELECT ... INTO"),
        ("PRAGMA writable_schema = 1", "not PRAGMA"),
    ],
)
async def test_writes_are_refused_by_parsing_naming_the_node_and_the_fix(sqlite_db, statement, says):
    result = await plait.run(flow(statement), env={"SQL_URL": sqlite_db})
    assert result.status == "failed"
    text = str(result.nodes["q"].error)
    assert "sql node 'q' refused the statement" in text
    assert says in text
    con = sqlite3.connect(sqlite_db.removeprefix("sqlite:///"))
    assert con.execute("SELECT count(*) FROM items").fetchone() == (3,)  # nothing ran
    con.close()


async def test_allow_write_runs_a_write(sqlite_db):
    result = await plait.run(
        flow("UPDATE items SET price = 9 WHERE name = 'apple'", allow_write=True), env={"SQL_URL": sqlite_db}
    )
    assert result.status == "completed", result.error
    con = sqlite3.connect(sqlite_db.removeprefix("sqlite:///"))
    assert con.execute("SELECT price FROM items WHERE name = 'apple'").fetchone() == (9.0,)
    con.close()


async def test_the_connection_is_read_only_even_if_the_parser_were_fooled(sqlite_db):
    # Below the parser: the file is opened read-only, so a write the checks missed still fails.
    db = sql_module.parse_url(sqlite_db)
    with pytest.raises(SqlRefused, match="refused a write"):
        await sql_module._run_sqlite(db, "DELETE FROM items", None, 10, 3.0, False)


async def test_missing_variable_and_url_in_config_are_clear(sqlite_db):
    result = await plait.run(flow("SELECT 1"), env={})
    assert result.status == "failed"
    assert "the variable 'SQL_URL' is not set" in str(result.error)
    with pytest.raises(plait.FlowValidationError) as exc:
        await plait.run(flow("SELECT 1", connection=sqlite_db), env={})
    assert "name of a stored variable" in str(exc.value)


async def test_sqlite_files_outside_the_allowed_directories_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAIT_SQL_SQLITE_DIRS", str(tmp_path / "allowed"))
    (tmp_path / "allowed").mkdir()
    other = tmp_path / "other.db"
    sqlite3.connect(other).close()
    with pytest.raises(ToolError, match="outside the directories"):
        await run_query(f"sqlite:///{other}", "SELECT 1")
    monkeypatch.delenv("PLAIT_SQL_SQLITE_DIRS")
    with pytest.raises(ToolError, match="PLAIT_SQL_SQLITE_DIRS"):
        await run_query(f"sqlite:///{other}", "SELECT 1")


async def test_timeout_stops_a_long_sqlite_query(sqlite_db):
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    with pytest.raises(ToolError, match="longer than 0.3 s"):
        await run_query(sqlite_db, slow, timeout_s=0.3)


def test_a_model_s_code_fence_is_removed():
    assert sql_module.strip_fence("```sql\nSELECT 1\n```") == "SELECT 1"
    assert sql_module.strip_fence("  ```\nSELECT 1;\n```  ") == "SELECT 1;"
    assert sql_module.strip_fence("SELECT '```'") == "SELECT '```'"


def test_parser_accepts_reads():
    for ok in ("SELECT 1", "select a from t union select b from u", "WITH x AS (SELECT 1) SELECT * FROM x"):
        assert check_statement(ok, "postgres") == ok
    with pytest.raises(SqlRefused, match="does not parse|not"):
        check_statement("SELEC x FROM", "postgres")
    with pytest.raises(SqlRefused, match="empty"):
        check_statement("  ;", "sqlite")


async def test_agent_tool_reads_and_refuses(sqlite_db):
    class Ctx:
        run_id = "r"
        node_id = "n"

        def secret(self, name):
            return {"SQL_URL": sqlite_db}.get(name)

    tool = default_tools().get("sql")
    out = await tool.call({"sql": "SELECT count(*) AS n FROM items"}, Ctx())
    assert out["rows"] == [{"n": 3}]
    with pytest.raises(SqlRefused, match="not DELETE"):
        await tool.call({"sql": "DELETE FROM items"}, Ctx())


@pytest.mark.skipif(not POSTGRES_URL, reason="set PLAIT_TEST_POSTGRES_URL to test PostgreSQL")
async def test_postgresql(monkeypatch):
    host = urlsplit(POSTGRES_URL).hostname or "localhost"
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", f"{host},127.0.0.1,localhost")
    dsn = "postgresql://" + POSTGRES_URL.split("://", 1)[1]
    table = f"sql_node_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"CREATE TABLE {table} (id serial PRIMARY KEY, name text, price numeric(6,2))")
        await conn.execute(f"INSERT INTO {table} (name, price) VALUES ('apple', 1.50), ('pear', 2.25)")
        env = {"DB": POSTGRES_URL}
        result = await plait.run(
            flow(
                f"SELECT name, price FROM {table} WHERE price > $1 ORDER BY id", params=[1], connection="DB"
            ),
            env=env,
        )
        assert result.status == "completed", result.error
        assert result.nodes["q"].output["rows"] == [
            {"name": "apple", "price": 1.5},
            {"name": "pear", "price": 2.25},
        ]
        for bad in (f"DELETE FROM {table}", f"UPDATE {table} SET price = 0; DROP TABLE {table}",
                    f"WITH d AS (DELETE FROM {table} RETURNING *) SELECT * FROM d"):  # fmt: skip
            failed = await plait.run(flow(bad, connection="DB"), env=env)
            assert failed.status == "failed"
            assert "refused the statement" in str(failed.error)
        # The database refuses writes too (read-only transaction), below the parser.
        with pytest.raises(SqlRefused, match="refused a write"):
            await sql_module._run_postgres(
                sql_module.parse_url(POSTGRES_URL), f"DELETE FROM {table}", None, 10, 3.0, False
            )
        with pytest.raises(ToolError, match="longer than 0.5 s"):
            await run_query(POSTGRES_URL, "SELECT pg_sleep(3)", timeout_s=0.5)
        assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 2
    finally:
        await conn.execute(f"DROP TABLE IF EXISTS {table}")
        await conn.close()


async def test_postgres_host_passes_the_ssrf_guard(monkeypatch):
    monkeypatch.delenv("PLAIT_HTTP_ALLOW", raising=False)
    with pytest.raises(ToolError, match="database host refused"):
        await run_query("postgresql://u:p@127.0.0.1:5/db", "SELECT 1")
