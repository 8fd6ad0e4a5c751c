"""Files a run produces (a generated PDF, a spreadsheet): the contract nodes use to keep them.

Why not in the node's output: a file is bytes, often large, and a node's output travels in events,
SSE streams, checkpoints and the canvas. So a node hands the bytes to the run's `ArtifactStore`
(`ctx.services.artifacts`) and outputs a small reference instead: `{artifact_id, filename,
mime_type, size, url}`; the URL (`/api/v1/runs/<run>/artifacts/<id>`) downloads it with the same
access as the run. A later node of the same run reads the bytes back with `get`.

`MemoryArtifacts` keeps them in the `RunServices` object (what `plait.run` uses); the server's
runs get the store's (`plait.store.artifacts`). Every file is bounded by
`PLAIT_MAX_ARTIFACT_BYTES` (10 MB by default).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import Any, Protocol

from plait.errors import PlaitError

MAX_BYTES_ENV = "PLAIT_MAX_ARTIFACT_BYTES"
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
_ID = re.compile(r"^[0-9a-f]{64}$")
_UNSAFE_NAME = re.compile(r'[\\/\x00-\x1f\x7f?#%*:|<>"]+')


class ArtifactTooLarge(PlaitError, ValueError):
    code = "artifact_too_large"


def max_artifact_bytes() -> int:
    """The size limit of one file (PLAIT_MAX_ARTIFACT_BYTES, an operator setting)."""
    raw = os.environ.get(MAX_BYTES_ENV, "")
    try:
        value = int(raw) if raw.strip() else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES
    return value if value > 0 else DEFAULT_MAX_BYTES


def safe_filename(name: str, extension: str) -> str:
    """A download name without path separators or control characters, ending in `.extension`."""
    base = _UNSAFE_NAME.sub(" ", str(name or "")).strip(" .")
    base = re.sub(r"\s+", " ", base)[:180].rstrip() or "file"
    stem, dot, ext = base.rpartition(".")
    if dot and ext.lower() == extension.lower():
        base = stem or "file"
    return f"{base}.{extension}"


def artifact_id(run_id: str, node_id: str, filename: str, data: bytes) -> str:
    """A stable id for a file of a run: the same node writing the same file gets the same id
    (a retried node does not pile up copies)."""
    h = hashlib.sha256()
    for part in (run_id, node_id, filename):
        h.update(part.encode())
        h.update(b"\x00")
    h.update(data)
    return h.hexdigest()


def is_artifact_id(value: Any) -> bool:
    return isinstance(value, str) and bool(_ID.match(value))


@dataclass(frozen=True, slots=True)
class Artifact:
    id: str
    run_id: str
    node_id: str
    filename: str
    mime_type: str
    size: int

    def ref(self) -> dict[str, Any]:
        """What a node outputs for this file."""
        return {
            "artifact_id": self.id,
            "filename": self.filename,
            "mime_type": self.mime_type,
            "size": self.size,
            "url": f"/api/v1/runs/{self.run_id}/artifacts/{self.id}",
        }


class ArtifactStore(Protocol):
    """Where a run's files live (`RunServices.artifacts`)."""

    async def put(self, run_id: str, node_id: str, filename: str, mime_type: str, data: bytes) -> Artifact:
        """Keep a file of the run (ArtifactTooLarge over the limit)."""

    async def get(self, run_id: str, artifact_id: str) -> tuple[Artifact, bytes] | None:
        """A file of the run by id (None: no such file in this run)."""


def check_size(filename: str, data: bytes, limit: int | None = None) -> None:
    top = limit or max_artifact_bytes()
    if len(data) > top:
        raise ArtifactTooLarge(
            f"the file {filename!r} is {len(data):,} bytes, over the limit of {top:,} bytes",
            hint=f"make the content shorter, or ask the operator to raise {MAX_BYTES_ENV}",
        )


class MemoryArtifacts:
    """An `ArtifactStore` in memory (runs of `plait.run`; tests)."""

    def __init__(self) -> None:
        self._files: dict[tuple[str, str], tuple[Artifact, bytes]] = {}

    async def put(self, run_id: str, node_id: str, filename: str, mime_type: str, data: bytes) -> Artifact:
        check_size(filename, data)
        art = Artifact(
            artifact_id(run_id, node_id, filename, data), run_id, node_id, filename, mime_type, len(data)
        )
        self._files[(run_id, art.id)] = (art, bytes(data))
        return art

    async def get(self, run_id: str, artifact_id: str) -> tuple[Artifact, bytes] | None:
        return self._files.get((run_id, artifact_id))


__all__ = [
    "Artifact",
    "ArtifactStore",
    "ArtifactTooLarge",
    "MemoryArtifacts",
    "artifact_id",
    "check_size",
    "is_artifact_id",
    "max_artifact_bytes",
    "safe_filename",
]
