"""How failures leave the API: one JSON shape, `{"error": {"code", "message", "details"}}`, for
service errors, plait's own errors that reach a route, HTTP errors and invalid requests."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from plait.engine.api import RunInputError
from plait.engine.errors import ResumeError
from plait.nodes.base import NodeError
from plait.service import ServiceError
from plait.spec.problems import FlowValidationError


def error_response(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details}}
    return JSONResponse(jsonable_encoder(body), status_code=status)


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
