"""SQL queries against a database named by a stored variable: the `sql` node and the `sql` tool.

Why a module of its own: a flow (or a model, through the agent tool) sends a statement to a real
database, so three things must hold whatever the text says.

- **Read-only unless asked.** The statement is *parsed* (sqlglot, in the database's dialect), never
  matched with a regular expression: exactly one statement, a SELECT / UNION / VALUES at the top,
  and nothing anywhere inside that writes or locks (a `WITH d AS (DELETE ... RETURNING *)`, a
  `SELECT ... INTO`, `FOR UPDATE`, PRAGMA, an unparsed command). The database is asked for the same
  thing on its own terms: SQLite files open `mode=ro`, PostgreSQL runs the statement in a
  read-only transaction. `allow_write=True` lifts both (still one statement).
- **Credentials never sit in a flow.** The connection URL is read by *name* from the run's stored
  variables (`ctx.secret`), so documents, exports and events only carry the name.
- **Bounded.** A row limit (the rest is not fetched) and a time limit (3 s by default, as RAGFlow's
  ExeSQL): SQLite's progress handler stops the query at the deadline; PostgreSQL gets a
  `statement_timeout`.

Databases: SQLite (`sqlite:///path.db`, aiosqlite) and PostgreSQL (`postgresql://...`, asyncpg).
SQLite files are server files, so only those under a directory listed in `PLAIT_SQL_SQLITE_DIRS`
(an operator setting, read from the process environment) may be opened; PostgreSQL hosts pass the
SSRF guard (`PLAIT_HTTP_ALLOW` opts internal hosts in), and the connection goes to the checked
address. The result is `{columns, rows (objects), row_count, truncated, markdown}`.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import decimal
import logging
import os
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import aiosqlite
import asyncpg  # type: ignore[import-untyped]

from plait.net.guard import BlockedURLError, allowlist_from_env, aresolve_checked
from plait.tools.base import Tool, ToolCallContext, ToolError

DEFAULT_URL_VARIABLE = "SQL_URL"
DEFAULT_TIMEOUT_S = 3.0
DEFAULT_MAX_ROWS = 1024
MAX_ROWS_CAP = 10_000
MAX_CELL_CHARS = 10_000
SQLITE_DIRS_ENV = "PLAIT_SQL_SQLITE_DIRS"
WRITE_HINT = "set allow_write: true on the node to run statements that change data"

# Expression types that write, lock or escape the parser; none may appear in a read-only statement.
_WRITE_NAMES = (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "AlterTable", "TruncateTable",
    "Into", "Lock", "Command", "Pragma", "Copy", "Set", "Transaction", "Commit", "Rollback", "Grant",
    "Revoke", "Attach", "Detach", "Use", "Analyze",
)  # fmt: skip
_READ_TOP_NAMES = ("Select", "SetOperation", "Union", "Values")

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # it warns when it falls back to a Command


class SqlRefused(ToolError):
    """A statement the node will not run (a write without allow_write, several statements...)."""

    code = "sql_refused"


@dataclass(frozen=True, slots=True)
class Database:
    kind: str  # "sqlite" | "postgresql"
    target: str  # the file path or the asyncpg DSN
    host: str | None = None
    port: int | None = None

    @property
    def dialect(self) -> str:
        return "sqlite" if self.kind == "sqlite" else "postgres"


def parse_url(url: str) -> Database:
    """Which database a connection URL names (SQLAlchemy-style URLs are accepted)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    base = scheme.split("+", 1)[0]
    if base == "sqlite":
        # SQLAlchemy's form: sqlite:///relative.db, sqlite:////absolute/path.db
        path = unquote(parts.path)[1:] if parts.path.startswith("/") else unquote(parts.path)
        if not path or path == ":memory:":
            raise ToolError(
                "an in-memory SQLite database holds no data to query",
                hint="use sqlite:///path/to/file.db",
                fatal=True,
            )
        return Database("sqlite", path)
    if base in ("postgresql", "postgres", "pgsql"):
        dsn = "postgresql://" + url.strip().split("://", 1)[1]
        return Database("postgresql", dsn, parts.hostname or "localhost", parts.port or 5432)
    shown = scheme or "(none)"
    raise ToolError(
        f"unsupported database URL scheme {shown!r}",
        hint="use sqlite:///path.db or postgresql://user:password@host:5432/dbname",
        fatal=True,
    )


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n?\s*```\s*$", re.S)


def strip_fence(sql: str) -> str:
    """The SQL inside a markdown code fence (what a model often writes), else `sql` unchanged."""
    found = _FENCE.match(sql)
    return found.group("body") if found else sql


@lru_cache(maxsize=1)
def _expression_types() -> tuple[tuple[type[Any], ...], tuple[type[Any], ...]]:
    """(writing, reading-top) sqlglot expression classes; sqlglot is loaded on first use (it costs
    a quarter of a second at import, which every `import plait` would pay)."""
    from sqlglot import exp  # noqa: PLC0415

    def classes(names: tuple[str, ...]) -> tuple[type[Any], ...]:
        return tuple(t for t in (getattr(exp, n, None) for n in names) if isinstance(t, type))

    return classes(_WRITE_NAMES), classes(_READ_TOP_NAMES)


def check_statement(sql: str, dialect: str, *, allow_write: bool = False) -> str:
    """The statement to run, after checking it parses to exactly one statement that (unless
    `allow_write`) only reads; raises SqlRefused saying why and what to do."""
    import sqlglot  # noqa: PLC0415 - see _expression_types
    from sqlglot import exp  # noqa: PLC0415
    from sqlglot.errors import SqlglotError  # noqa: PLC0415

    writes, read_tops = _expression_types()
    try:
        parsed = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SqlRefused(
            f"the statement does not parse as {dialect} SQL: {first[:200]}",
            hint="fix the SQL (one SELECT statement)",
        ) from exc
    if not parsed:
        raise SqlRefused("the statement is empty", hint="write a SELECT statement")
    if len(parsed) > 1:
        raise SqlRefused(
            f"{len(parsed)} statements were given; a sql node runs exactly one",
            hint="remove the other statements (and any trailing `; ...`), or use one node per statement",
        )
    statement = parsed[0]
    if allow_write:
        return sql
    if not isinstance(statement, read_tops):
        kind = statement.key.upper() if statement.key else type(statement).__name__.upper()
        raise SqlRefused(f"only SELECT statements are allowed, not {kind}", hint=WRITE_HINT)
    for node in statement.walk():
        if isinstance(node, writes):
            kind = "SELECT ... INTO" if isinstance(node, exp.Into) else node.key.upper()
            where = " (in a WITH clause)" if node.find_ancestor(exp.CTE) is not None else ""
            raise SqlRefused(
                f"only reading statements are allowed: the statement contains {kind}{where}",
                hint=WRITE_HINT,
            )
    return sql


# --------------------------------------------------------------------------- results


def jsonable(value: Any) -> Any:
    """A database value as JSON data (decimals as numbers, dates as ISO text, bytes as base64)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value if not isinstance(value, str) or len(value) <= MAX_CELL_CHARS else value[:MAX_CELL_CHARS]
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)[:MAX_CELL_CHARS]).decode()
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)


def markdown_table(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    """Rows as a GitHub-style markdown table ("No rows." when there are none)."""
    if not columns:
        return "No rows."

    def cell(v: Any) -> str:
        text = "" if v is None else v if isinstance(v, str) else str(v)
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")

    lines = ["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    if not rows:
        lines.append("")
        lines.append("No rows.")
    return "\n".join(lines)


def _result(columns: list[str], raw_rows: Sequence[Sequence[Any]], max_rows: int) -> dict[str, Any]:
    truncated = len(raw_rows) > max_rows
    names = _unique_names(columns)
    rows = [dict(zip(names, (jsonable(v) for v in r), strict=False)) for r in raw_rows[:max_rows]]
    return {
        "columns": names,
        "rows": rows,
        "row_count": len(rows),
        "truncated": truncated,
        "markdown": markdown_table(names, rows),
    }


def _unique_names(columns: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for c in columns:
        name = c or "column"
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 1
        out.append(name)
    return out


# --------------------------------------------------------------------------- execution


def _sqlite_path(path: str) -> Path:
    dirs = [d for d in os.environ.get(SQLITE_DIRS_ENV, "").split(os.pathsep) if d.strip()]
    resolved = Path(path).expanduser().resolve()
    if not dirs:
        raise ToolError(
            "SQLite files are not enabled on this server",
            hint=f"the operator lists the directories queries may open in {SQLITE_DIRS_ENV}",
            fatal=True,
        )
    for d in dirs:
        root = Path(d).expanduser().resolve()
        if resolved == root or root in resolved.parents:
            if not resolved.is_file():
                raise ToolError(f"the SQLite file {path!r} does not exist", hint="check the URL", fatal=True)
            return resolved
    raise ToolError(
        f"the SQLite file {path!r} is outside the directories this server allows",
        hint=f"move it under one of {SQLITE_DIRS_ENV} ({os.pathsep.join(dirs)})",
        fatal=True,
    )


async def _run_sqlite(
    db: Database, sql: str, params: Any, max_rows: int, timeout_s: float, allow_write: bool
) -> dict[str, Any]:
    path = _sqlite_path(db.target)
    uri = f"{path.as_uri()}?mode={'rw' if allow_write else 'ro'}"
    deadline = time.monotonic() + timeout_s
    conn = await aiosqlite.connect(uri, uri=True)
    try:
        await conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
        try:
            async with asyncio.timeout(timeout_s + 0.5):
                cursor = await conn.execute(sql, params if params is not None else ())
                raw = [tuple(r) for r in await cursor.fetchmany(max_rows + 1)]
                columns = [d[0] for d in cursor.description or ()]
                await cursor.close()
                if allow_write:
                    await conn.commit()
        except TimeoutError:
            await conn.interrupt()
            raise
    except aiosqlite.OperationalError as exc:
        if "interrupted" in str(exc).lower():
            raise TimeoutError from exc
        if "readonly" in str(exc).lower():
            raise SqlRefused(f"the database refused a write: {exc}", hint=WRITE_HINT) from exc
        raise ToolError(f"SQLite error: {exc}", hint="check the statement against the schema") from exc
    except aiosqlite.Error as exc:
        raise ToolError(f"SQLite error: {exc}", hint="check the statement and its parameters") from exc
    finally:
        await conn.close()
    return _result(columns, raw, max_rows)


async def _run_postgres(
    db: Database, sql: str, params: Any, max_rows: int, timeout_s: float, allow_write: bool
) -> dict[str, Any]:
    try:
        addresses = await aresolve_checked(db.host or "localhost", db.port or 5432, allowlist_from_env())
    except BlockedURLError as exc:
        raise ToolError(f"database host refused: {exc.message}", hint=exc.hint, fatal=True) from exc
    except OSError as exc:
        raise ToolError(f"database host {db.host!r} does not resolve: {exc}", fatal=True) from exc
    args: list[Any] = (
        list(params) if isinstance(params, (list, tuple)) else ([] if params is None else [params])
    )
    try:
        conn = await asyncpg.connect(
            db.target,
            host=str(addresses[0]),
            port=db.port,
            timeout=timeout_s,
            server_settings={"statement_timeout": str(max(1, int(timeout_s * 1000)))},
        )
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise ToolError(
            f"cannot connect to PostgreSQL at {db.host}:{db.port}: {type(exc).__name__}: {exc}",
            hint="check the connection URL in the variable",
            fatal=True,
        ) from exc
    try:
        async with asyncio.timeout(timeout_s + 0.5):
            async with conn.transaction(readonly=not allow_write):
                statement = await conn.prepare(sql)
                columns = [a.name for a in statement.get_attributes()]
                if columns:
                    cursor = await statement.cursor(*args)
                    raw = [tuple(r.values()) for r in await cursor.fetch(max_rows + 1)]
                else:
                    await statement.fetch(*args)
                    raw = []
    except asyncpg.QueryCanceledError as exc:
        raise TimeoutError from exc
    except asyncpg.ReadOnlySQLTransactionError as exc:
        raise SqlRefused(f"the database refused a write: {exc}", hint=WRITE_HINT) from exc
    except asyncpg.PostgresError as exc:
        raise ToolError(f"PostgreSQL error: {exc}", hint="check the statement against the schema") from exc
    except (asyncpg.InterfaceError, ValueError, TypeError) as exc:
        raise ToolError(f"PostgreSQL error: {exc}", hint="check the statement and its parameters") from exc
    finally:
        await conn.close(timeout=2)
    return _result(columns, raw, max_rows)


async def run_query(
    url: str,
    sql: str,
    *,
    params: Any = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    allow_write: bool = False,
) -> dict[str, Any]:
    """Check and run one statement on the database at `url`; see the module docstring."""
    db = parse_url(url)
    statement = check_statement(strip_fence(sql), db.dialect, allow_write=allow_write)
    max_rows = max(1, min(int(max_rows), MAX_ROWS_CAP))
    runner = _run_sqlite if db.kind == "sqlite" else _run_postgres
    try:
        return await runner(db, statement, params, max_rows, timeout_s, allow_write)
    except TimeoutError as exc:
        raise ToolError(
            f"the query took longer than {timeout_s:g} s and was stopped",
            hint="make the query cheaper (a WHERE clause, an index, a LIMIT) or raise timeout_s",
        ) from exc


def connection_url(ctx: ToolCallContext, variable: str) -> str:
    """The connection URL stored in the variable `variable` (a clear error when it is not set)."""
    url = ctx.secret(variable) if ctx is not None else None
    if not url:
        raise ToolError(
            f"no database connection: the variable {variable!r} is not set",
            hint=f"store the connection URL (sqlite:///file.db or postgresql://user:pass@host/db) "
            f"as the variable {variable} (Settings > Variables)",
            fatal=True,
        )
    return url


def sql_tool(*, url_variable: str = DEFAULT_URL_VARIABLE, max_rows: int = 100) -> Tool:
    """The agent tool: one read-only statement on the database in the variable `url_variable`."""

    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        sql = args.get("sql")
        if not isinstance(sql, str) or not sql.strip():
            raise ToolError("sql must be a non-empty SQL string")
        limit = args.get("max_rows", max_rows)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ToolError(f"max_rows must be a positive integer, got {limit!r}")
        return await run_query(
            connection_url(ctx, url_variable), sql, max_rows=min(limit, MAX_ROWS_CAP), allow_write=False
        )

    return Tool(
        name="sql",
        description=(
            "Run one read-only SQL SELECT statement on the configured database and return the rows "
            "(as objects and as a markdown table). Writes and multiple statements are refused."
        ),
        parameters={
            "type": "object",
            "properties": {
                "sql": {"type": "string", "description": "One SELECT statement."},
                "max_rows": {"type": "integer", "minimum": 1, "maximum": MAX_ROWS_CAP, "default": max_rows},
            },
            "required": ["sql"],
        },
        call=call,
    )
