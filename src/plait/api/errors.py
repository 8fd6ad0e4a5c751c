"""How failures leave the API: one JSON shape, `{"error": {"code", "message", "details"}}`, for
plait's errors, HTTP errors and invalid requests.

Every error plait raises for a person derives from `PlaitError`, so the API maps that base once
(`plait.service.errors.reply_for`, which the WebSocket channel shares): the class gives the HTTP status, the error its code, message and details. A
`PlaitError` the table does not know is a bug in the layer that let it through (the service
translates what it expects), so it stays a 500 and the server logs it with its cause.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from plait.api.ui import WebUI
from plait.errors import PlaitError
from plait.service.errors import reply_for

# The codes of the HTTP errors Starlette raises (unknown path, wrong method...).
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
}


def error_response(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details}}
    return JSONResponse(jsonable_encoder(body), status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(PlaitError)
    async def _plait(_: Request, exc: PlaitError) -> JSONResponse:
        reply = reply_for(exc)
        if reply is None:
            raise exc  # an unexpected error: a 500, logged with its traceback
        response = error_response(reply.status, reply.code, reply.message, reply.details)
        if reply.status == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        return response

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        ui: WebUI | None = getattr(request.app.state, "ui", None)
        if exc.status_code == 404 and ui is not None:  # a client-side route of the web UI?
            page = ui.response(request)
            if page is not None:
                return page
        code = HTTP_CODES.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = [
            {"loc": list(e.get("loc", ())), "message": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        return error_response(422, "invalid_request", "the request is invalid", details)
