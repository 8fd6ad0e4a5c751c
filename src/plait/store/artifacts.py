"""The server's `ArtifactStore` (plait.nodes.artifacts): a run's files, kept in the `blobs` table.

Why the blobs table and not one of its own: it already is where plait keeps large values once,
content-addressed, on SQLite and PostgreSQL alike, and every process of a deployment (server,
queue workers) reaches it. An artifact is one blob whose JSON text is `{"plait_artifact": 1,
run_id, node_id, filename, mime_type, size, base64}`; its key (the SHA-256 of that text, as for
every blob) is the artifact's id. The run id inside the blob is what `get` checks, so an id only
opens a file of the run it belongs to (the API checks the caller may see that run). No row ever
refers to it as `{"$blob": ...}`, so blob readers never load it by accident. Like every blob, it is
not deleted with its run.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from plait.nodes.artifacts import Artifact, check_size, is_artifact_id
from plait.store.blobs import blobs_table
from plait.store.db import json_dumps, upsert_for
from plait.store.repos.base import sha256_hex

MARK = "plait_artifact"


class SqlArtifacts:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self.sessionmaker = sessionmaker

    async def put(self, run_id: str, node_id: str, filename: str, mime_type: str, data: bytes) -> Artifact:
        check_size(filename, data)
        record: dict[str, Any] = {
            MARK: 1,
            "run_id": run_id,
            "node_id": node_id,
            "filename": filename,
            "mime_type": mime_type,
            "size": len(data),
            "base64": base64.b64encode(data).decode("ascii"),
        }
        text = json_dumps(record)
        key = sha256_hex(text)
        async with self.sessionmaker.begin() as session:
            dialect = session.bind.dialect.name if session.bind is not None else ""
            stmt = upsert_for(dialect, blobs_table).values(
                key=key, data=text, size=len(text.encode("utf-8")), refs=False, created_at=time.time()
            )
            await session.execute(stmt.on_conflict_do_nothing(index_elements=[blobs_table.c.key]))
        return Artifact(key, run_id, node_id, filename, mime_type, len(data))

    async def get(self, run_id: str, artifact_id: str) -> tuple[Artifact, bytes] | None:
        if not is_artifact_id(artifact_id):
            return None
        async with self.sessionmaker() as session:
            text = (
                await session.execute(select(blobs_table.c.data).where(blobs_table.c.key == artifact_id))
            ).scalar_one_or_none()
        if text is None:
            return None
        try:
            record = json.loads(text)
        except ValueError:
            return None
        if not isinstance(record, dict) or record.get(MARK) != 1 or record.get("run_id") != run_id:
            return None
        data = base64.b64decode(record["base64"])
        artifact = Artifact(
            artifact_id,
            run_id,
            str(record["node_id"]),
            str(record["filename"]),
            str(record["mime_type"]),
            len(data),
        )
        return artifact, data
