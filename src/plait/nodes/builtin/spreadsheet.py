"""The `spreadsheet` node: read or write xlsx and csv (sheets, ranges, rows as objects).

`read` takes a file from `source`: an artifact of the same run (the output of a `document` or
`spreadsheet` node, or its `artifact_id`), base64 bytes (`{"base64": ..., "filename": ...}` or a
`data:` URL), or CSV text. It outputs `{sheets: {name: rows}, sheet, columns, rows, row_count,
truncated, markdown, summary}` for the chosen sheet (default: the first) and range (`A1:D20`);
with `header` the first row names the columns and rows are objects, else rows are lists.

`write` takes `data`: a list of objects (or lists) for one sheet, or `{sheet name: rows}`, and
stores an xlsx or csv file as a run artifact (`plait.nodes.artifacts`): `{artifact_id, filename,
mime_type, size, url, sheets: {name: row count}}`.

Bounded: the input file by PLAIT_MAX_ARTIFACT_BYTES, rows by `max_rows`, cells read by value
(formulas are not evaluated: xlsx files keep the value last computed by the program that saved them).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import csv
import datetime as dt
import io
import json
import re
from typing import Any, Literal
from zipfile import BadZipFile

from pydantic import BaseModel, ConfigDict, Field

from plait.nodes.artifacts import (
    ArtifactTooLarge,
    check_size,
    is_artifact_id,
    max_artifact_bytes,
    safe_filename,
)
from plait.nodes.base import Node, NodeContext, NodeError
from plait.nodes.builtin.document import artifact_store
from plait.tools.sql import markdown_table

XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
CSV_MIME = "text/csv; charset=utf-8"
MAX_ROWS_CAP = 100_000
MARKDOWN_ROWS = 50
_SHEET_BAD = re.compile(r"[\\/*?:\[\]]")
_URL_RUN = re.compile(r"^/api/v1/runs/([^/]+)/artifacts/([0-9a-f]{64})$")


class SpreadsheetError(Exception):
    """Bad input for the node (turned into a NodeError naming the node)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class SpreadsheetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    operation: Literal["read", "write"] = Field("read", title="Operation")
    source: Any = Field(
        None,
        title="Source (read)",
        description="The file: an artifact of this run ({{node}} of a document/spreadsheet node), "
        "{base64, filename}, a data: URL, or CSV text. Empty: the node's input.",
    )
    file_format: Literal["auto", "xlsx", "csv"] = Field(
        "auto",
        title="File format",
        description="auto: from the file name or its first bytes (read); xlsx (write).",
    )
    sheet: str = Field("", title="Sheet", description="Sheet name (read); empty: the first sheet.")
    range: str = Field("", title="Range", description="Cells to read, e.g. A1:D20; empty: the whole sheet.")
    header: bool = Field(
        True, title="Header row", description="The first row names the columns: rows are objects."
    )
    max_rows: int = Field(10_000, ge=1, le=MAX_ROWS_CAP, title="Row limit", description="Rows read at most.")
    data: Any = Field(
        None,
        title="Data (write)",
        description="Rows (list of objects or lists) or {sheet: rows} (template). Empty: the node's input.",
    )
    filename: str = Field(
        "spreadsheet", title="File name (write)", description="Download name; the extension is added."
    )


# --------------------------------------------------------------------------- reading


def _cell(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _decode_source(value: Any) -> tuple[bytes | str, str]:
    """(bytes or text, file name) of a source that is not an artifact."""
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        try:
            return base64.b64decode(value["base64"], validate=True), str(value.get("filename") or "")
        except (binascii.Error, ValueError) as exc:
            raise SpreadsheetError(
                "source.base64 is not valid base64", "encode the file's bytes as base64"
            ) from exc
    if isinstance(value, str) and value.startswith("data:"):
        head, _, payload = value.partition(",")
        try:
            data = base64.b64decode(payload, validate=True) if ";base64" in head else payload.encode()
        except (binascii.Error, ValueError) as exc:
            raise SpreadsheetError("the data: URL holds invalid base64") from exc
        return data, "upload.csv" if "csv" in head else "upload.xlsx"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value), ""
    if isinstance(value, str):
        return value, "input.csv"
    raise SpreadsheetError(
        f"cannot read a spreadsheet from a {type(value).__name__}",
        "give an artifact of this run, {base64, filename}, a data: URL or CSV text",
    )


def _kind(data: bytes | str, filename: str, wanted: str) -> str:
    if wanted != "auto":
        return wanted
    if isinstance(data, str):
        return "csv"
    if data[:2] == b"PK":
        return "xlsx"
    if filename.lower().endswith((".xlsx", ".xlsm")):
        return "xlsx"
    return "csv"


def _read_grid(
    data: bytes | str, kind: str, sheet: str, cells: str, max_rows: int
) -> tuple[dict[str, list[list[Any]]], str, bool]:
    """({sheet: rows as lists}, the chosen sheet, truncated): the chosen sheet only, in `cells`."""
    # openpyxl is loaded on first use, not with the node registry (about half a second at import).
    from openpyxl import load_workbook  # noqa: PLC0415
    from openpyxl.utils.cell import range_boundaries  # noqa: PLC0415
    from openpyxl.utils.exceptions import InvalidFileException  # noqa: PLC0415

    bounds = None
    if cells:
        try:
            bounds = range_boundaries(cells.upper())
        except (ValueError, TypeError) as exc:
            raise SpreadsheetError(f"range {cells!r} is not a cell range", "write it like A1:D20") from exc
    if kind == "csv":
        text = data.decode("utf-8-sig", errors="replace") if isinstance(data, bytes) else data
        try:
            dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
        grid: list[list[Any]] = []
        truncated = False
        for i, row in enumerate(csv.reader(io.StringIO(text), dialect)):
            if bounds is not None:
                min_col, min_row, max_col, max_row = bounds
                if i + 1 < (min_row or 1) or (max_row is not None and i + 1 > max_row):
                    continue
                row = row[(min_col or 1) - 1 : max_col]
            if len(grid) > max_rows:
                truncated = True
                break
            grid.append(row)
        return {"Sheet1": grid}, "Sheet1", truncated
    assert isinstance(data, bytes)
    try:
        book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (InvalidFileException, BadZipFile, KeyError, ValueError, OSError) as exc:
        raise SpreadsheetError(f"the file is not a readable xlsx workbook ({type(exc).__name__})") from exc
    try:
        names = list(book.sheetnames)
        chosen = sheet or (names[0] if names else "")
        if chosen not in names:
            raise SpreadsheetError(f"the workbook has no sheet {chosen!r}", f"use one of: {', '.join(names)}")
        ws = book[chosen]
        kwargs: dict[str, Any] = {"values_only": True}
        if bounds is not None:
            min_col, min_row, max_col, max_row = bounds
            kwargs.update(min_col=min_col, min_row=min_row, max_col=max_col, max_row=max_row)
        rows: list[list[Any]] = []
        truncated = False
        for row in ws.iter_rows(**kwargs):
            if len(rows) > max_rows:
                truncated = True
                break
            rows.append([_cell(v) for v in row])
        while rows and all(v is None for v in rows[-1]):
            rows.pop()
        return {chosen: rows}, chosen, truncated
    finally:
        book.close()


def _as_table(grid: list[list[Any]], header: bool, max_rows: int) -> tuple[list[str], list[Any]]:
    if not grid:
        return [], []
    if not header:
        width = max(len(r) for r in grid)
        return [f"column_{i + 1}" for i in range(width)], grid[:max_rows]
    names: list[str] = []
    for i, v in enumerate(grid[0]):
        name = str(v).strip() if v not in (None, "") else f"column_{i + 1}"
        while name in names:
            name += "_"
        names.append(name)
    body = grid[1 : max_rows + 1]
    return names, [dict(zip(names, r + [None] * (len(names) - len(r)), strict=False)) for r in body]


# --------------------------------------------------------------------------- writing


def _sheets_of(data: Any) -> dict[str, list[Any]]:
    if isinstance(data, list):
        return {"Sheet1": data}
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        return {str(k): v for k, v in data.items()}
    if isinstance(data, dict) and isinstance(data.get("rows"), list):  # a read / sql node's output
        return {str(data.get("sheet") or "Sheet1"): data["rows"]}
    raise SpreadsheetError(
        f"data must be a list of rows or {{sheet: rows}}, not a {type(data).__name__}",
        "give rows as a list of objects (or of lists), e.g. the rows of a sql node",
    )


def _grid(rows: list[Any]) -> list[list[Any]]:
    if rows and all(isinstance(r, dict) for r in rows):
        columns: list[str] = []
        for r in rows:
            columns.extend(str(k) for k in r if str(k) not in columns)
        return [columns] + [[_scalar(r.get(c)) for c in columns] for r in rows]
    out = []
    for r in rows:
        out.append([_scalar(v) for v in r] if isinstance(r, (list, tuple)) else [_scalar(r)])
    return out


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        if isinstance(value, str) and value[:1] in ("=", "+", "-", "@") and not _is_number(value):
            return "'" + value  # never a formula from data (CSV/formula injection)
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _write(sheets: dict[str, list[Any]], kind: str) -> bytes:
    if kind == "csv":
        if len(sheets) > 1:
            raise SpreadsheetError("a csv file holds one sheet", "write xlsx, or give one list of rows")
        out = io.StringIO()
        csv.writer(out).writerows(_grid(next(iter(sheets.values()))))
        return out.getvalue().encode("utf-8")
    from openpyxl import Workbook  # noqa: PLC0415 - see _read_grid

    book = Workbook()
    book.remove(book.active)
    used: set[str] = set()
    for name, rows in sheets.items():
        title = _SHEET_BAD.sub("_", name).strip("'")[:31] or "Sheet"
        base, n = title, 2
        while title.casefold() in used:
            title = f"{base[: 31 - len(str(n)) - 1]}_{n}"
            n += 1
        used.add(title.casefold())
        ws = book.create_sheet(title)
        for row in _grid(rows):
            ws.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


class SpreadsheetNode(Node[SpreadsheetConfig]):
    type_name = "spreadsheet"
    title = "Spreadsheet"
    description = "Reads or writes xlsx/csv files: sheets, ranges, rows as objects."
    category = "data"
    Config = SpreadsheetConfig

    async def run(self, ctx: NodeContext) -> Any:
        try:
            if self.config.operation == "write":
                return await self._write(ctx)
            return await self._read(ctx)
        except SpreadsheetError as exc:
            raise NodeError(
                f"spreadsheet node {self.id!r}: {exc.message}", hint=exc.hint, retryable=False
            ) from exc
        except ArtifactTooLarge as exc:
            raise NodeError(
                f"spreadsheet node {self.id!r}: {exc.message}", hint=exc.hint, retryable=False
            ) from exc

    async def _source(self, ctx: NodeContext) -> tuple[bytes | str, str]:
        cfg = self.config
        value = await ctx.arender(cfg.source) if cfg.source not in (None, "") else ctx.input
        if value in (None, "", {}):
            raise SpreadsheetError("no file to read", "set `source`, or connect the node that made the file")
        ref = value.get("artifact_id") if isinstance(value, dict) else value
        if is_artifact_id(ref):
            store = artifact_store(ctx)
            found = await store.get(ctx.run_id, str(ref))
            origin = _URL_RUN.match(str(value.get("url") or "")) if isinstance(value, dict) else None
            if found is None and origin is not None and origin.group(2) == ref:
                # A reference reused from the run this one retries (retry from a node): the file
                # is that run's; its id (a SHA-256 of the run and the content) is the capability.
                found = await store.get(origin.group(1), str(ref))
            if found is None:
                raise SpreadsheetError(
                    f"no file {str(ref)[:12]}... in this run",
                    "give the output of a document or spreadsheet node of this run",
                )
            artifact, stored = found
            return stored, artifact.filename
        data, filename = _decode_source(value)
        limit = max_artifact_bytes()
        if len(data) > limit:
            raise SpreadsheetError(f"the file is {len(data):,} bytes, over the limit of {limit:,} bytes")
        return data, filename

    async def _read(self, ctx: NodeContext) -> dict[str, Any]:
        cfg = self.config
        data, filename = await self._source(ctx)
        kind = _kind(data, filename, cfg.file_format)
        grids, chosen, truncated = await asyncio.to_thread(
            _read_grid, data, kind, cfg.sheet, cfg.range, cfg.max_rows + 1
        )
        columns, rows = _as_table(grids[chosen], cfg.header, cfg.max_rows)
        truncated = truncated or len(grids[chosen]) - (1 if cfg.header else 0) > cfg.max_rows
        shown = rows[:MARKDOWN_ROWS]
        as_objects = shown if cfg.header else [dict(zip(columns, r, strict=False)) for r in shown]
        return {
            "sheets": {chosen: rows},
            "sheet": chosen,
            "columns": columns,
            "rows": rows,
            "row_count": len(rows),
            "truncated": truncated,
            "markdown": markdown_table(columns, as_objects),
            "summary": f"{filename or chosen}: {len(rows)} rows, {len(columns)} columns ({', '.join(columns[:5])}"
            + ("...)" if len(columns) > 5 else ")"),
        }

    async def _write(self, ctx: NodeContext) -> dict[str, Any]:
        cfg = self.config
        value = await ctx.arender(cfg.data) if cfg.data not in (None, "") else ctx.input
        sheets = _sheets_of(value)
        kind = "csv" if cfg.file_format == "csv" else "xlsx"
        total = sum(len(rows) for rows in sheets.values())
        if total > MAX_ROWS_CAP:
            raise SpreadsheetError(f"{total:,} rows is over the limit of {MAX_ROWS_CAP:,}")
        payload = await asyncio.to_thread(_write, sheets, kind)
        name = await ctx.arender(cfg.filename) if cfg.filename else "spreadsheet"
        filename = safe_filename(str(name), kind)
        check_size(filename, payload)
        artifact = await artifact_store(ctx).put(
            ctx.run_id, ctx.node_id, filename, CSV_MIME if kind == "csv" else XLSX_MIME, payload
        )
        return {**artifact.ref(), "format": kind, "sheets": {k: len(v) for k, v in sheets.items()}}
