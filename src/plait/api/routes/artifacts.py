"""`/api/v1/runs/{run_id}/artifacts/{artifact_id}`: download a file a run produced (a `document`
or `spreadsheet` node's output names this URL). Whoever may see the run may download its files;
an id opens only a file of that run (plait.store.artifacts).

Files are served as attachments with `nosniff` and a sandboxing CSP: a generated HTML document
cannot run script in plait's origin even when opened in the browser."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path
from fastapi.responses import Response

from plait.api.deps import ERRORS, READ, Svc, ViewRun, caller
from plait.service.errors import NotFound

router = APIRouter(prefix="/api/v1/runs", tags=["runs"], dependencies=[Depends(caller)], responses=ERRORS)
ArtifactId = Annotated[str, Path(min_length=1, max_length=64)]


@router.get(
    "/{run_id}/artifacts/{artifact_id}",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}}},
    dependencies=[READ],
)
async def download_artifact(svc: Svc, run: ViewRun, artifact_id: ArtifactId) -> Response:
    """The file's bytes, with its media type and file name."""
    found = await svc.store.artifacts.get(run.id, artifact_id)
    if found is None:
        raise NotFound(f"run {run.id!r} has no file {artifact_id[:16]!r}")
    artifact, data = found
    ascii_name = artifact.filename.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
    return Response(
        content=data,
        media_type=artifact.mime_type,
        headers={
            "Content-Disposition": f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(artifact.filename)}",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "sandbox; default-src 'none'",
            "Cache-Control": "private, max-age=3600",
        },
    )
