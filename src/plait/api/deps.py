"""What every route depends on: the services, the caller's API key (and so its owner), path ids,
and the error responses routes document. Routers import this module; it imports no router, so
`app.py` can assemble them without import cycles.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

import plait.api.schemas as s
from plait.service import NotFound, Services

ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": s.ErrorBody} for code in (401, 404, 409, 410, 422)}
VERSION_RE = r"^(latest|draft|[0-9]{1,9})$"
MAX_VERSION = 2**31 - 1

api_key_header = APIKeyHeader(name="x-api-key", auto_error=False, description="An API key.")
bearer = HTTPBearer(auto_error=False, description="An API key as a bearer token.")


async def services(request: Request) -> Services:
    # async: FastAPI runs a sync dependency in a worker thread, a thread hop per request.
    svc: Services = request.app.state.services  # set by create_app
    return svc


Svc = Annotated[Services, Depends(services)]


async def require_key(
    request: Request,
    key: Annotated[str | None, Security(api_key_header)] = None,
    cred: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)] = None,
) -> str | None:
    """Verify the API key; the caller's owner (the key's user id; None: deployment-wide, also
    when auth is off). FastAPI caches it per request, so routes can depend on it again (`Owner`)."""
    services: Services = request.app.state.services
    if not services.settings.require_auth:
        return None
    return await services.check_key(key or (cred.credentials if cred else None))


Owner = Annotated[str | None, Depends(require_key)]


def path_id(value: str, what: str) -> str:
    """A path parameter used as an id: one no row can have (a NUL byte, over 255 chars) is a 404."""
    if "\x00" in value or len(value) > 255:
        raise NotFound(f"no {what} {value!r}")
    return value
