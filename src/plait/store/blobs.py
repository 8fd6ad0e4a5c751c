"""Large values stored once: the `blobs` table, content-addressed JSON.

Why: a node's output is kept in its `node_runs` row, and the same value often travels on (an
`output` node passing it through, the run's `outputs`, a map carrying it, a retry reusing it).
Inline, each of those rows held a copy (up to PLAIT_MAX_NODE_OUTPUT_BYTES each). Now a value whose
JSON text is over `INLINE_MAX` characters is written once to `blobs` (key: the SHA-256 of the
text; `INSERT ... ON CONFLICT DO NOTHING`, in the transaction of the row that refers to it) and
the row's column holds `{"$blob": key}`. Small values, nearly all of them, stay inline: on the
SQLite writer's path the check is one `len` of the JSON text it encodes anyway.

A large dict or list (up to `MAX_PARTS` items) is split first: each item over the limit becomes a
blob of its own and the container's blob holds references to them (`refs`), so a value found
inside another one (a run's `{"out": value}`, an HTTP body, a map's list of results) is still
stored once. References are only ever a column's whole value or a direct item of a `refs` blob;
readers look nowhere else. A value that merely looks like a reference (`{"$blob": ...}` as a
column's value, or anything containing `"$blob"` as an item of a split container) is stored as a
blob itself, so it reads back as it was.

Readers (`BlobReader`, used by the checkpointer's `load` and the run and event repositories)
resolve references with one query per nesting level. Blobs are never deleted: runs are not
deleted by plait itself, and a deleted run (`RunRepo.delete`) leaves its blobs behind.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select

from plait.store.db import json_dumps, upsert_for
from plait.store.models import Blob, table_of

BLOB_KEY = "$blob"
INLINE_MAX = 64 * 1024  # characters of JSON text; above this a value is stored in `blobs`
MAX_PARTS = 256  # a larger dict or list is stored whole (splitting it would cost an encode per item)
_REF_TEXT = '"$blob"'

blobs_table = table_of(Blob)


def is_ref(value: Any) -> bool:
    """Whether `value` is a reference `{"$blob": key}`."""
    return type(value) is dict and len(value) == 1 and BLOB_KEY in value


class BlobSink:
    """The blobs a transaction writes: key -> (JSON text, refs)."""

    __slots__ = ("found",)

    def __init__(self) -> None:
        self.found: dict[str, tuple[str, bool]] = {}

    def __bool__(self) -> bool:
        return bool(self.found)

    def rows(self, now: float | None = None) -> list[dict[str, Any]]:
        t = time.time() if now is None else now
        return [
            {"key": key, "data": text, "size": len(text.encode("utf-8")), "refs": refs, "created_at": t}
            for key, (text, refs) in self.found.items()
        ]

    # ------------------------------------------------------------------ packing
    def pack_text(self, value: Any, text: str) -> str:
        """The JSON text to store for `value`, whose JSON text is `text`: `text` itself when
        small, else the text of a reference (the blobs join this sink)."""
        if len(text) <= INLINE_MAX and not is_ref(value):
            return text
        return json_dumps({BLOB_KEY: self._blob(value, text)})

    def pack(self, value: Any) -> Any:
        """`pack_text` for a column SQLAlchemy encodes: the value itself or a reference."""
        if value is None or type(value) in (int, float, bool):
            return value
        text = json_dumps(value)
        if len(text) <= INLINE_MAX and not is_ref(value):
            return value
        return {BLOB_KEY: self._blob(value, text)}

    def _blob(self, value: Any, text: str) -> str:
        refs = False
        if type(value) is dict and 0 < len(value) <= MAX_PARTS:
            parts: dict[Any, Any] = {}
            for k, item in value.items():
                parts[k], split = self._part(item)
                refs = refs or split
            if refs:
                text = json_dumps(parts)
        elif type(value) in (list, tuple) and 0 < len(value) <= MAX_PARTS:
            items: list[Any] = []
            for item in value:
                part, split = self._part(item)
                items.append(part)
                refs = refs or split
            if refs:
                text = json_dumps(items)
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.found.setdefault(key, (text, refs))
        return key

    def _part(self, item: Any) -> tuple[Any, bool]:
        """An item of a split container: a reference when large (or when it holds `"$blob"`)."""
        if item is None or type(item) in (int, float, bool):
            return item, False
        text = json_dumps(item)
        if len(text) > INLINE_MAX or _REF_TEXT in text:
            return {BLOB_KEY: self._blob(item, text)}, True
        return item, False


def insert_statement(dialect: str) -> Any:
    """`INSERT INTO blobs ... ON CONFLICT (key) DO NOTHING` for `dialect` (a dialect name)."""
    return upsert_for(dialect, blobs_table).on_conflict_do_nothing(index_elements=[blobs_table.c.key])


# ---------------------------------------------------------------------- reading
def refs_in(values: Iterable[Any]) -> set[str]:
    """The keys of the references among `values` (column values as read)."""
    return {v[BLOB_KEY] for v in values if is_ref(v)}


class BlobReader:
    """The values of blob keys, read with one query per nesting level (`await load(conn, keys)`),
    then `value(v)`: `v` with a reference replaced by its value."""

    __slots__ = ("_raw", "_done")

    def __init__(self) -> None:
        self._raw: dict[str, tuple[Any, bool]] = {}
        self._done: dict[str, Any] = {}

    async def load(self, conn: Any, keys: Iterable[str]) -> BlobReader:
        """`conn`: an `AsyncConnection` or `AsyncSession`."""
        c = blobs_table.c
        pending = {k for k in keys if k not in self._raw}
        while pending:
            result = await conn.execute(select(c.key, c.data, c.refs).where(c.key.in_(sorted(pending))))
            pending = set()
            for key, data, refs in result.all():
                decoded = json.loads(data)
                self._raw[key] = (decoded, bool(refs))
                if refs:
                    items = decoded.values() if isinstance(decoded, dict) else decoded
                    pending.update(k for k in refs_in(items) if k not in self._raw)
        return self

    def value(self, value: Any) -> Any:
        if not is_ref(value):
            return value
        key = value[BLOB_KEY]
        if key in self._done:
            return self._done[key]
        found = self._raw.get(key)
        if found is None:  # a reference without its blob: shown as it is stored
            return value
        decoded, refs = found
        if refs:
            if isinstance(decoded, dict):
                decoded = {k: self.value(v) for k, v in decoded.items()}
            else:
                decoded = [self.value(v) for v in decoded]
        self._done[key] = decoded
        return decoded


async def read_blobs(conn: Any, values: Iterable[Any]) -> BlobReader | None:
    """A reader holding the blobs `values` refer to (None: they refer to none)."""
    keys = refs_in(values)
    return await BlobReader().load(conn, keys) if keys else None


__all__ = [
    "BLOB_KEY",
    "INLINE_MAX",
    "MAX_PARTS",
    "BlobReader",
    "BlobSink",
    "blobs_table",
    "insert_statement",
    "is_ref",
    "read_blobs",
    "refs_in",
]
