"""The API maps `PlaitError` once (`plait.api.errors.reply_for`): each error class to the status and
body fields the routes have always answered with; an error it does not expect stays a 500."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from plait.api.errors import install_error_handlers
from plait.engine.errors import ResumeError, RunInputError, RunNotFoundError
from plait.errors import PlaitError
from plait.nodes import NodeError
from plait.service.errors import Conflict, ErrorReply, NotFound, ServiceError, Unauthorized, reply_for
from plait.spec.problems import FlowValidationError, Problem

PROBLEM = Problem("bad", "is bad", "n1", "config.x")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (NotFound("no flow 'x'"), ErrorReply(404, "not_found", "no flow 'x'")),
        (Conflict("busy", details={"a": 1}), ErrorReply(409, "conflict", "busy", {"a": 1})),
        (ServiceError("give content", code="invalid"), ErrorReply(400, "invalid", "give content")),
        (
            NotFound("no flow 'x'", hint="create it"),
            ErrorReply(404, "not_found", "no flow 'x'", {"hint": "create it"}),
        ),
        (
            Conflict("busy", details={"a": 1}, hint="wait"),
            ErrorReply(409, "conflict", "busy", {"hint": "wait", "a": 1}),
        ),
        (ResumeError("not waiting"), ErrorReply(409, "conflict", "not waiting")),
        (ResumeError("expired", expired=True), ErrorReply(410, "gone", "expired")),
        (
            FlowValidationError([PROBLEM]),
            ErrorReply(
                422, "invalid_flow", "flow is invalid (1 problem):", {"problems": [PROBLEM.to_dict()]}
            ),
        ),
        (
            RunInputError([PROBLEM]),
            ErrorReply(422, "invalid_input", "invalid run inputs", {"problems": [PROBLEM.to_dict()]}),
        ),
        (
            NodeError("bad answer", hint="say yes"),
            ErrorReply(422, "invalid_input", "bad answer", {"hint": "say yes"}),
        ),
        (NodeError("bad answer"), ErrorReply(422, "invalid_input", "bad answer")),
        (RunNotFoundError("no run"), None),
        (PlaitError("unexpected"), None),
    ],
)
def test_reply_for(exc: PlaitError, expected: ErrorReply | None) -> None:
    assert reply_for(exc) == expected


def _app(exc: Exception) -> TestClient:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/boom")
    async def boom() -> None:
        raise exc

    return TestClient(app, raise_server_exceptions=False)


def test_one_handler_answers_the_error_body_and_the_auth_header() -> None:
    response = _app(Unauthorized("an API key is required")).get("/boom")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    body = {"error": {"code": "unauthorized", "message": "an API key is required", "details": None}}
    assert response.json() == body


def test_an_unexpected_plait_error_is_a_server_error() -> None:
    assert _app(RunNotFoundError("no run")).get("/boom").status_code == 500
