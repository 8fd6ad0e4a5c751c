"""What every route depends on: the services, the caller (`Principal`: from an API key, the
deployment key or the session cookie), the scope a route needs, the access checks on the flow or
run a path names, path ids, and the error responses routes document. Routers import this module;
it imports no router, so `app.py` can assemble them without import cycles.

Every route declares what it needs: a scope (`READ`, `WRITE`, `RUN`, `ADMIN` in its
`dependencies`) and, when a path names a flow or run, the access to it (`ViewFlow`, `EditFlow`,
`OwnFlow`, `ViewRun`, `ControlRun`). The rules themselves are in `plait.service.access`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.params import Depends as DependsParam
from fastapi.security import APIKeyCookie, APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

import plait.api.schemas as s
from plait.service import NotFound, Services, Unauthorized
from plait.service.access import Access, Principal, Scope
from plait.store.models import FlowRow, Run

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorBody} for code in (401, 403, 404, 409, 410, 422)
}
VERSION_RE = r"^(latest|draft|[0-9]{1,9})$"
MAX_VERSION = 2**31 - 1
SESSION_COOKIE = "plait_session"

api_key_header = APIKeyHeader(name="x-api-key", auto_error=False, description="An API key.")
bearer = HTTPBearer(auto_error=False, description="An API key as a bearer token.")
session_cookie = APIKeyCookie(name=SESSION_COOKIE, auto_error=False, description="A browser session.")


async def services(request: Request) -> Services:
    # async: FastAPI runs a sync dependency in a worker thread, a thread hop per request.
    svc: Services = request.app.state.services  # set by create_app
    return svc


Svc = Annotated[Services, Depends(services)]


async def caller(
    request: Request,
    key: Annotated[str | None, Security(api_key_header)] = None,
    cred: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)] = None,
    session: Annotated[str | None, Security(session_cookie)] = None,
) -> Principal:
    """Who is calling: an API key (header or bearer) first, else the session cookie; 401 without
    either. With auth off every request is the local admin. FastAPI caches it per request."""
    svc: Services = request.app.state.services
    who = await svc.users.resolve(key or (cred.credentials if cred else None), session)
    if who is None:
        await svc.users.check_key(None)  # raises the 401 that says how to sign in
        raise Unauthorized("sign in")  # pragma: no cover - check_key(None) always raises
    return who


Caller = Annotated[Principal, Depends(caller)]


def _scope(scope: Scope) -> Callable[[Principal], Awaitable[Principal]]:
    async def need(who: Caller) -> Principal:
        who.require(scope)
        return who

    need.__name__ = f"need_{scope}"
    return need


READ: DependsParam = Depends(_scope(Scope.READ))
WRITE: DependsParam = Depends(_scope(Scope.WRITE))
RUN: DependsParam = Depends(_scope(Scope.RUN))
ADMIN: DependsParam = Depends(_scope(Scope.ADMIN))


def path_id(value: str, what: str) -> str:
    """A path parameter used as an id: one no row can have (a NUL byte, over 255 chars) is a 404."""
    if "\x00" in value or len(value) > 255:
        raise NotFound(f"no {what} {value!r}")
    return value


def _flow(need: Access) -> Callable[..., Awaitable[FlowRow]]:
    async def flow(svc: Svc, who: Caller, flow_id: str) -> FlowRow:
        return await svc.access.flow(who, path_id(flow_id, "flow"), need)

    return flow


def _run(control: bool) -> Callable[..., Awaitable[Run]]:
    async def run(svc: Svc, who: Caller, run_id: str) -> Run:
        return await svc.access.run(who, path_id(run_id, "run"), control=control)

    return run


ViewFlow = Annotated[FlowRow, Depends(_flow(Access.VIEW))]
EditFlow = Annotated[FlowRow, Depends(_flow(Access.EDIT))]
OwnFlow = Annotated[FlowRow, Depends(_flow(Access.OWN))]
ViewRun = Annotated[Run, Depends(_run(False))]
ControlRun = Annotated[Run, Depends(_run(True))]
