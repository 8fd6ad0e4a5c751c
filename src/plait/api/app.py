"""The HTTP API (FastAPI): `create_app(settings)` assembles the app from thin routers over
`plait.service`.

    uvicorn plait.api.app:create_app --factory        # settings from PLAIT_* variables

Dependencies (services, API key, path ids) are in `deps.py`, one router module per resource group
in `routes/`, the error shape in `errors.py`; this module only puts them together.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import RedirectResponse, Response

import plait
from plait.api.body_limit import BodyLimit
from plait.api.deps import ERRORS, READ, SESSION_COOKIE, Caller, Svc
from plait.api.errors import install_error_handlers
from plait.api.log_redaction import install_log_redaction
from plait.api.metrics import install_metrics_route
from plait.api.routes import ROUTERS
from plait.api.routes.users import set_session_cookie
from plait.api.ui import WebUI
from plait.mcp.http import MCPHttp
from plait.service import ServiceError, Services, Settings
from plait.service.log_format import install_log_format, log_format_from_env
from plait.service.observability import Observability

log = logging.getLogger("plait.api")


def create_app(settings: Settings | None = None) -> FastAPI:
    """The ASGI app. Its lifespan opens the store (migrating it), bootstraps an API key, recovers
    runs whose owner died, and starts the lease keeper and the human-task sweeper."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = await Services.open(settings)
        app.state.services = services
        # Metrics, spans (OTEL_EXPORTER_OTLP_ENDPOINT) and the log context, from the run events.
        try:
            observability = Observability.from_env(services)
        except BaseException:
            await services.close()
            raise
        observability.attach()
        app.state.observability = observability
        # Start-up objects (modules, schemas, compiled plans) live as long as the process: keep
        # them out of the collector's full passes, which otherwise pause every request in flight.
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await services.close()
            await observability.close()

    app = FastAPI(
        title="plait",
        version=plait.__version__,
        description="A visual, durable orchestrator for AI agent flows.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    install_log_redaction()
    install_log_format(log_format_from_env())  # PLAIT_LOG_FORMAT=json: JSON lines
    app.add_middleware(BodyLimit)

    @app.get("/healthz", tags=["meta"])
    async def healthz(svc: Svc, request: Request) -> dict[str, Any]:
        """`{"status": "ok"}`; an admin's credential also gets what this process executes."""
        return svc.health(detailed=await _is_admin(svc, request))

    install_metrics_route(app)  # GET /metrics, as PLAIT_METRICS says (public, admin or off)

    app.state.ui = WebUI()

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def root(request: Request, token: str | None = None) -> Response:
        """The web UI (or a page saying how to build it); client routes: see `_http` in errors.py.
        `?token=` is a sign-in link (`plait serve`, `plait admin link`): it is used up, the
        browser gets its session cookie and comes back here without the token in the URL."""
        if token is not None:
            svc: Services = request.app.state.services
            session = await svc.users.redeem_signin(token)
            if session is None:
                return RedirectResponse("/?signin=expired", status_code=303)
            response = RedirectResponse("/", status_code=303)
            set_session_cookie(request, response, session)
            return response
        ui: WebUI = app.state.ui
        page = ui.response(request)
        assert page is not None
        return page

    for router in ROUTERS:
        app.include_router(router)
    app.include_router(_mcp_router())
    return app


def _mcp_router() -> APIRouter:
    """`POST /mcp`: plait as an MCP server (streamable HTTP, plait.mcp), as the request's caller.
    Its transport starts with the app (the router's lifespan, after the app's own)."""
    transport = MCPHttp()
    router = APIRouter(lifespan=transport.lifespan, tags=["mcp"])

    @router.post("/mcp", dependencies=[READ], response_class=Response, responses=ERRORS)
    async def mcp(who: Caller, request: Request) -> Response:
        """One MCP message (JSON-RPC) over streamable HTTP, answered as JSON: the flow-builder
        tools on your flows, the flow library, and each published flow you may run as a tool."""
        return transport.response(who, request.headers.get("content-type"))

    return router


async def _is_admin(svc: Services, request: Request) -> bool:
    """Whether the request carries an admin's credential (a bad one is just not an admin's)."""
    key = request.headers.get("x-api-key")
    auth = request.headers.get("authorization", "")
    if not key and auth.lower().startswith("bearer "):
        key = auth[7:].strip()
    try:
        who = await svc.users.resolve(key, request.cookies.get(SESSION_COOKIE))
    except ServiceError:
        return False
    return who is not None and who.is_admin
