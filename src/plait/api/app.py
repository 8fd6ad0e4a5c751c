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

from fastapi import FastAPI, Request
from fastapi.responses import Response

import plait
from plait.api.deps import Svc
from plait.api.errors import install_error_handlers
from plait.api.routes import ROUTERS
from plait.api.ui import WebUI
from plait.service import Services, Settings

log = logging.getLogger("plait.api")


def create_app(settings: Settings | None = None) -> FastAPI:
    """The ASGI app. Its lifespan opens the store (migrating it), bootstraps an API key, recovers
    runs whose owner died, and starts the lease keeper and the human-task sweeper."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = await Services.open(settings)
        app.state.services = services
        # Start-up objects (modules, schemas, compiled plans) live as long as the process: keep
        # them out of the collector's full passes, which otherwise pause every request in flight.
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await services.close()

    app = FastAPI(
        title="plait",
        version=plait.__version__,
        description="A visual, durable orchestrator for AI agent flows.",
        lifespan=lifespan,
    )
    install_error_handlers(app)

    @app.get("/healthz", tags=["meta"])
    async def healthz(svc: Svc) -> dict[str, Any]:
        return svc.health()

    app.state.ui = WebUI()

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def root(request: Request) -> Response:
        """The web UI (or a page saying how to build it); client routes: see `_http` in errors.py."""
        ui: WebUI = app.state.ui
        page = ui.response(request)
        assert page is not None
        return page

    for router in ROUTERS:
        app.include_router(router)
    return app
