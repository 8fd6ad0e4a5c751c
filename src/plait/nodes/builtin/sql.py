"""The `sql` node: one SQL statement on a database whose URL is a stored variable.

The checks and the drivers live in `plait.tools.sql` (shared with the `sql` agent tool): the
statement is parsed and must only read unless `allow_write`, the connection URL is looked up by
name, rows and time are bounded (3 s by default, RAGFlow's ExeSQL default). Output:
`{columns, rows, row_count, truncated, markdown}`.

Values a template puts into `query` become SQL text; values from users or models belong in
`params` (bound by the driver: `?` placeholders on SQLite, `$1` on PostgreSQL).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from plait.nodes.base import Node, NodeContext, NodeError
from plait.tools.base import ToolError
from plait.tools.sql import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_URL_VARIABLE,
    MAX_ROWS_CAP,
    SqlRefused,
    connection_url,
    run_query,
)

_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


class SqlConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        "",
        title="SQL",
        description="One statement (template). Empty: the node's input is the statement.",
    )
    connection: str = Field(
        DEFAULT_URL_VARIABLE,
        title="Connection variable",
        description=(
            "The NAME of the stored variable holding the connection URL "
            "(sqlite:///file.db or postgresql://user:pass@host:5432/db); never the URL itself."
        ),
    )
    params: list[Any] | None = Field(
        None,
        title="Parameters",
        description="Values bound to the statement's placeholders (? on SQLite, $1 $2 on PostgreSQL); templates.",
    )
    max_rows: int = Field(
        DEFAULT_MAX_ROWS, ge=1, le=MAX_ROWS_CAP, title="Row limit", description="Rows returned at most."
    )
    timeout_s: float = Field(
        DEFAULT_TIMEOUT_S,
        gt=0,
        le=600,
        title="Query timeout (s)",
        description="The statement is stopped after this.",
    )
    allow_write: bool = Field(
        False,
        title="Allow writes",
        description="Off: only reading statements run (checked by parsing, and the connection is read-only).",
    )

    @field_validator("connection")
    @classmethod
    def _a_name_not_a_url(cls, value: str) -> str:
        if "://" in value or not _VARIABLE_NAME.match(value):
            raise ValueError(
                "connection is the name of a stored variable that holds the URL (e.g. SQL_URL), not the "
                "URL: store the URL in Settings > Variables and put its name here"
            )
        return value


class SqlNode(Node[SqlConfig]):
    type_name = "sql"
    title = "SQL"
    description = (
        "Runs one SQL statement (SELECT only unless allowed) on SQLite or PostgreSQL; rows and markdown."
    )
    category = "data"
    Config = SqlConfig
    default_timeout_s = DEFAULT_TIMEOUT_S  # seed 003: ExeSQL's 3 s (a node's timeout_s overrides it)

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        sql = await ctx.arender(cfg.query) if cfg.query.strip() else ctx.input
        if not isinstance(sql, str) or not sql.strip():
            raise NodeError(
                f"sql node {self.id!r}: no statement to run",
                hint="set `query`, or connect a node whose output is the SQL text",
                retryable=False,
            )
        params = await ctx.arender(cfg.params) if cfg.params is not None else None
        try:
            url = connection_url(ctx, cfg.connection)
            return await run_query(
                url,
                sql,
                params=params,
                max_rows=cfg.max_rows,
                timeout_s=cfg.timeout_s,
                allow_write=cfg.allow_write,
            )
        except SqlRefused as exc:
            raise NodeError(
                f"sql node {self.id!r} refused the statement: {exc.message}", hint=exc.hint, retryable=False
            ) from exc
        except ToolError as exc:
            raise NodeError(
                f"sql node {self.id!r}: {exc.message}", hint=exc.hint, retryable=not exc.fatal
            ) from exc
