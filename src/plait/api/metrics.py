"""`GET /metrics`: the Prometheus text of this process (plait.service.metrics).

Who may read it is the deployment's choice, `PLAIT_METRICS`:

    public  (default) anyone who can reach the server, like /healthz: Prometheus scrapes without
            credentials, `plait serve` listens on 127.0.0.1, and the metrics name no flow, run,
            node or user (only statuses, node types, provider and model names, trigger kinds)
    admin   an admin's API key (`Authorization: Bearer <key>` in the scrape config)
    off     no route (404), and nothing is counted

The route is left out of the OpenAPI document, like `/`: it is not part of the JSON API (its body
is Prometheus' text format) and its access depends on this setting, so the access matrix
(tests/api/test_access_matrix.py) cannot give it one fixed rule; tests/api/test_metrics_route.py
checks each mode.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from plait.api.deps import ADMIN
from plait.service.metrics import METRICS_ENV, METRICS_MODES, metrics_mode_from_env
from plait.service.observability import Observability


async def _metrics(request: Request) -> Response:
    observability: Observability = request.app.state.observability
    return Response(await observability.scrape(), media_type=CONTENT_TYPE_LATEST)


def install_metrics_route(app: FastAPI, mode: str | None = None) -> None:
    """Mount `GET /metrics` as `mode` says (None: `PLAIT_METRICS`)."""
    mode = mode or metrics_mode_from_env()
    if mode == "off":
        return
    dependencies = [ADMIN] if mode == "admin" else []
    app.add_api_route(
        "/metrics", _metrics, methods=["GET"], include_in_schema=False, dependencies=dependencies
    )


__all__ = ["METRICS_ENV", "METRICS_MODES", "install_metrics_route", "metrics_mode_from_env"]
