"""The HTTP API (FastAPI): `create_app(settings)`; thin routes over `plait.service`.

uvicorn plait.api.app:create_app --factory        # settings from PLAIT_* variables
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, FastAPI, Header, Path, Query, Request, Security
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

import plait
from plait.api import schemas as s
from plait.api.ui import WebUI
from plait.engine.api import RunInputError
from plait.engine.events import Event
from plait.engine.runner import ResumeError
from plait.nodes.base import NodeError
from plait.service import NotFound, ServiceError, Services, Settings
from plait.spec.problems import FlowValidationError

log = logging.getLogger("plait.api")

ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": s.ErrorBody} for code in (401, 404, 409, 410, 422)}
VERSION_RE = r"^(latest|draft|[0-9]{1,9})$"
MAX_VERSION = 2**31 - 1

api_key_header = APIKeyHeader(name="x-api-key", auto_error=False, description="An API key.")
bearer = HTTPBearer(auto_error=False, description="An API key as a bearer token.")


# ---------------------------------------------------------------------------------------- helpers
def error_response(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details}}
    return JSONResponse(jsonable_encoder(body), status_code=status)


async def _services(request: Request) -> Services:
    # async: FastAPI runs a sync dependency in a worker thread, a thread hop per request.
    return request.app.state.services


Svc = Annotated[Services, Depends(_services)]


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


def _id(value: str, what: str) -> str:
    if "\x00" in value or len(value) > 255:
        raise NotFound(f"no {what} {value!r}")
    return value


def sse_event(e: Event) -> str:
    data = json.dumps(e.to_dict(), ensure_ascii=False, default=str, separators=(",", ":"))
    return f"id: {e.seq}\nevent: {e.type}\ndata: {data}\n\n"


async def _sse(
    services: Services, run_id: str, after: int, until: str, heartbeat_s: float | None = None
) -> AsyncIterator[str]:
    yield ": stream opened\n\n"
    async for e in services.runs.stream(run_id, after, until=until, heartbeat_s=heartbeat_s):
        yield ": heartbeat\n\n" if e is None else sse_event(e)


SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _last_event_id(header: str | None, after: int | None) -> int:
    if after is not None:
        return after
    if header:
        try:
            return max(0, int(header.strip()))
        except ValueError:
            return 0
    return 0


# ----------------------------------------------------------------------------------------- routes
flows = APIRouter(
    prefix="/api/v1/flows", tags=["flows"], dependencies=[Depends(require_key)], responses=ERRORS
)


@flows.get("", response_model=list[s.FlowSummary])
async def list_flows(
    svc: Svc,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Any:
    return await svc.flows.list(limit=limit, offset=offset)


@flows.post("", status_code=201, response_model=s.FlowOut)
async def create_flow(svc: Svc, owner: Owner, body: s.FlowCreate) -> Any:
    return await svc.flows.create(
        body.document, flow_id=body.id, name=body.name, description=body.description, owner_id=owner
    )


@flows.post("/import", status_code=201, response_model=s.FlowOut)
async def import_flow(svc: Svc, owner: Owner, body: s.FlowImport) -> Any:
    source: Any = body.document if body.document is not None else body.content
    if source is None:
        raise ServiceError("give the flow as `content` (JSON/YAML text) or `document`", code="invalid")
    return await svc.flows.import_document(
        source, overwrite=body.overwrite, publish=body.publish, owner_id=owner
    )


@flows.get("/{flow_id}", response_model=s.FlowOut)
async def get_flow(svc: Svc, flow_id: str) -> Any:
    return await svc.flows.get(_id(flow_id, "flow"))


@flows.put("/{flow_id}", response_model=s.FlowOut)
async def update_flow(svc: Svc, flow_id: str, body: s.FlowUpdate) -> Any:
    return await svc.flows.update(
        _id(flow_id, "flow"), body.document, name=body.name, description=body.description
    )


@flows.delete("/{flow_id}", status_code=204)
async def delete_flow(svc: Svc, flow_id: str) -> Response:
    await svc.flows.delete(_id(flow_id, "flow"))
    return Response(status_code=204)


@flows.get("/{flow_id}/export", response_class=PlainTextResponse)
async def export_flow(
    svc: Svc,
    flow_id: str,
    version: Annotated[str | None, Query(pattern=VERSION_RE)] = None,
    format: Literal["json", "yaml"] = "json",  # noqa: A002
) -> Response:
    text = await svc.flows.export(_id(flow_id, "flow"), version, format)
    media = "application/json" if format == "json" else "application/yaml"
    return Response(text, media_type=media)


@flows.post("/{flow_id}/versions", status_code=201, response_model=s.VersionOut)
async def publish_version(
    svc: Svc, flow_id: str, body: Annotated[s.PublishBody | None, Body()] = None
) -> Any:
    return await svc.flows.publish(_id(flow_id, "flow"), note=body.note if body else "")


@flows.get("/{flow_id}/versions", response_model=list[s.VersionOut])
async def list_versions(svc: Svc, flow_id: str) -> Any:
    return await svc.flows.list_versions(_id(flow_id, "flow"))


@flows.get("/{flow_id}/versions/{version}", response_model=s.VersionOut)
async def get_version(svc: Svc, flow_id: str, version: Annotated[int, Path(ge=1, le=MAX_VERSION)]) -> Any:
    return await svc.flows.get_version(_id(flow_id, "flow"), version)


@flows.delete("/{flow_id}/versions/{version}", status_code=204)
async def delete_version(
    svc: Svc, flow_id: str, version: Annotated[int, Path(ge=1, le=MAX_VERSION)]
) -> Response:
    await svc.flows.delete_version(_id(flow_id, "flow"), version)
    return Response(status_code=204)


@flows.post(
    "/{flow_id}/runs",
    response_model=s.RunResultOut,
    responses={202: {"model": s.RunStarted}, 200: {"content": {"text/event-stream": {}}}},
)
async def start_run(
    svc: Svc,
    flow_id: str,
    body: Annotated[s.RunBody | None, Body()] = None,
    mode: Literal["sync", "stream", "background"] = "sync",
    version: Annotated[str | None, Query(pattern=VERSION_RE, description="N, latest or draft")] = None,
) -> Any:
    """Start a run. sync: wait and return the result; background: 202 `{id}`; stream: SSE of its events
    (ends at its `run_finished`, also when the run pauses for input)."""
    inputs = body.inputs if body else {}
    run_id, _task = await svc.runs.start(_id(flow_id, "flow"), inputs, version=version)
    if mode == "background":
        return JSONResponse({"id": run_id}, status_code=202)
    if mode == "stream":
        return StreamingResponse(
            _sse(svc, run_id, 0, "finished"),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, "X-Run-Id": run_id},
        )
    await svc.runs.wait(run_id)
    return await svc.runs.result_view(run_id)


runs = APIRouter(prefix="/api/v1/runs", tags=["runs"], dependencies=[Depends(require_key)], responses=ERRORS)


@runs.get("", response_model=list[s.RunSummary])
async def list_runs(
    svc: Svc,
    flow_id: str | None = None,
    status: Literal["queued", "running", "waiting", "completed", "failed", "cancelled"] | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> Any:
    if flow_id is not None and "\x00" in flow_id:
        return []
    return await svc.runs.list(flow_id=flow_id, status=status, limit=limit, offset=offset)


@runs.get("/{run_id}", response_model=s.RunDetail)
async def get_run(svc: Svc, run_id: str) -> Any:
    return await svc.runs.get(_id(run_id, "run"))


@runs.get(
    "/{run_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def run_events(
    svc: Svc,
    run_id: str,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Replay events after this seq")] = None,
) -> StreamingResponse:
    """SSE: `id:` = event seq, `event:` = type, `data:` = JSON. Replays stored events, then tails the
    live run; re-attach with `Last-Event-ID`. Heartbeat comments keep idle connections open. Ends after
    the `run_finished` of a completed, failed or cancelled run."""
    await svc.runs.require(_id(run_id, "run"))
    start = _last_event_id(last_event_id, after)
    return StreamingResponse(
        _sse(svc, run_id, start, "terminal"), media_type="text/event-stream", headers=SSE_HEADERS
    )


@runs.post("/{run_id}/cancel", response_model=s.RunSummary)
async def cancel_run(svc: Svc, run_id: str) -> Any:
    return await svc.runs.cancel(_id(run_id, "run"))


@runs.post("/{run_id}/resume", status_code=202, response_model=s.TaskOut)
async def resume_run(svc: Svc, run_id: str, body: s.ResumeBody) -> Any:
    return await svc.runs.resume(_id(run_id, "run"), body.node_id, body.data)


@runs.post("/{run_id}/retry", status_code=202, response_model=s.RunStarted)
async def retry_run(svc: Svc, run_id: str, body: s.RetryBody) -> Any:
    return {"id": await svc.runs.retry(_id(run_id, "run"), body.from_node)}


@runs.get("/{run_id}/decisions", response_model=list[s.DecisionOut])
async def run_decisions(svc: Svc, run_id: str) -> Any:
    return await svc.runs.decisions(_id(run_id, "run"))


tasks = APIRouter(prefix="/api/v1/human-tasks", tags=["human tasks"], responses=ERRORS)


@tasks.get("/{token}", response_model=s.TaskOut)
async def get_task(svc: Svc, token: str) -> Any:
    """The form of a human task (no API key: the token is the credential)."""
    return await svc.runs.get_task(_id(token, "task"))


@tasks.post("/{token}/submit", response_model=s.TaskOut)
async def submit_task(svc: Svc, token: str, data: Annotated[dict[str, Any], Body()]) -> Any:
    """Answer the task: `{"action": a, "values": {...}}` or a flat object of field values.
    422 with the field problems when invalid, 409 when already answered, 410 when expired."""
    return await svc.runs.submit_task(_id(token, "task"), data)


hooks = APIRouter(
    prefix="/api/v1/webhooks", tags=["webhooks"], dependencies=[Depends(require_key)], responses=ERRORS
)


@hooks.post("/{flow_id}", status_code=202, response_model=s.RunStarted)
async def webhook(svc: Svc, flow_id: str, payload: Annotated[dict[str, Any] | None, Body()] = None) -> Any:
    """Start the latest published version of the flow in the background, the JSON body as inputs."""
    run_id, _ = await svc.runs.start(_id(flow_id, "flow"), payload or {}, version="latest")
    return {"id": run_id}


components = APIRouter(
    prefix="/api/v1/components", tags=["components"], dependencies=[Depends(require_key)], responses=ERRORS
)


@components.get("", response_model=list[s.ComponentSummary])
async def list_components(svc: Svc, owner: Owner) -> Any:
    return await svc.components.list(owner_id=owner)


@components.post("", status_code=201, response_model=s.ComponentOut)
async def create_component(svc: Svc, owner: Owner, body: s.ComponentBody) -> Any:
    """Validate (AST scan + load in the sandbox) and register the component under its class name,
    replacing an existing one (its version goes up). 422 `invalid_component` with the validation
    result as `details` when invalid."""
    return await svc.components.create(body.source, body.class_name, owner_id=owner)


@components.post("/validate", response_model=s.ComponentValidationOut)
async def validate_component(svc: Svc, body: s.ComponentBody) -> Any:
    """Validate only: `{valid, class_name, inputs, outputs, error, ...}` (200 also when invalid)."""
    return await svc.components.validate(body.source, body.class_name)


@components.get("/{name}", response_model=s.ComponentOut)
async def get_component(svc: Svc, owner: Owner, name: str) -> Any:
    return await svc.components.get_view(_id(name, "component"), owner_id=owner)


@components.delete("/{name}", status_code=204)
async def delete_component(svc: Svc, owner: Owner, name: str) -> Response:
    await svc.components.delete(_id(name, "component"), owner_id=owner)
    return Response(status_code=204)


# -------------------------------------------------------------------------------------------- app
def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(_: Request, exc: ServiceError) -> JSONResponse:
        response = error_response(exc.status, exc.code, exc.message, exc.details)
        if exc.status == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        return response

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        ui = getattr(request.app.state, "ui", None)
        if exc.status_code == 404 and ui is not None:  # a client-side route of the web UI?
            page = ui.response(request)
            if page is not None:
                return page
        codes = {
            400: "bad_request",
            401: "unauthorized",
            403: "forbidden",
            404: "not_found",
            405: "method_not_allowed",
        }
        return error_response(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {"loc": list(e.get("loc", ())), "message": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        return error_response(422, "invalid_request", "the request is invalid", details)

    @app.exception_handler(FlowValidationError)
    async def _flow(_: Request, exc: FlowValidationError) -> JSONResponse:
        return error_response(
            422,
            "invalid_flow",
            exc.args[0].splitlines()[0],
            {"problems": [p.to_dict() for p in exc.problems]},
        )

    @app.exception_handler(RunInputError)
    async def _inputs(_: Request, exc: RunInputError) -> JSONResponse:
        return error_response(
            422, "invalid_input", "invalid run inputs", {"problems": [p.to_dict() for p in exc.problems]}
        )

    @app.exception_handler(NodeError)
    async def _node(_: Request, exc: NodeError) -> JSONResponse:
        return error_response(422, "invalid_input", exc.message, {"hint": exc.hint} if exc.hint else None)

    @app.exception_handler(ResumeError)
    async def _resume(_: Request, exc: ResumeError) -> JSONResponse:
        return error_response(410 if exc.expired else 409, "gone" if exc.expired else "conflict", str(exc))


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
        """The web UI (or a page saying how to build it); client routes: see `_http` below."""
        page = app.state.ui.response(request)
        assert page is not None
        return page

    for router in (flows, runs, tasks, hooks, components):
        app.include_router(router)
    from plait.api import editor, ws  # the canvas' routes (they import this module's dependencies)

    for router in (*editor.routers, ws.router):
        app.include_router(router)
    return app
