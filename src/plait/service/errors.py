"""Errors of the service layer, and how any plait error is answered to a client (`reply_for`:
the status, code, message and details the HTTP API and the WebSocket channel both give).

PlaitError
└── ServiceError        400 bad_request (a request the service refuses)
    ├── Unauthorized    401 unauthorized
    ├── Forbidden       403 forbidden (a scope or access the caller lacks, on what they may see)
    ├── NotFound        404 not_found (also what the caller may not see)
    ├── Conflict        409 conflict
    ├── Gone            410 gone
    ├── Invalid         422 invalid
    └── TooManyAttempts 429 too_many_attempts
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plait.engine.errors import ResumeError, RunInputError
from plait.errors import PlaitError
from plait.nodes.base import NodeError
from plait.spec.problems import FlowValidationError


class ServiceError(PlaitError):
    """A request the service refuses: `status` is the HTTP status, `details` extra data for the body."""

    status = 400
    code = "bad_request"

    def __init__(
        self, message: str, *, details: Any = None, code: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint, code=code)
        self.details = details


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class Gone(ServiceError):
    status = 410
    code = "gone"


class Invalid(ServiceError):
    status = 422
    code = "invalid"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"


class TooManyAttempts(ServiceError):
    """A login for an email that guessed wrong too often lately."""

    status = 429
    code = "too_many_attempts"


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An error as a client gets it: the (HTTP) status and the body's fields."""

    status: int
    code: str
    message: str
    details: Any = None


def _problems(exc: FlowValidationError | RunInputError) -> dict[str, Any]:
    return {"problems": [p.to_dict() for p in exc.problems]}


def reply_for(exc: PlaitError) -> ErrorReply | None:
    """The reply for a plait error that reaches a client; None for one no client should see (a
    bug in the layer that let it through)."""
    if isinstance(exc, ServiceError):  # the service names its own status; its hint says the fix
        details = exc.details
        if exc.hint and details is None:
            details = {"hint": exc.hint}
        elif exc.hint and isinstance(details, dict):
            details = {"hint": exc.hint, **details}
        return ErrorReply(exc.status, exc.code, exc.message, details)
    if isinstance(exc, ResumeError):  # 410 gone when the task expired, else 409 conflict
        return ErrorReply(410 if exc.expired else 409, exc.code, exc.message)
    if isinstance(exc, FlowValidationError):  # the message's first line; every problem in details
        return ErrorReply(422, exc.code, exc.message.splitlines()[0], _problems(exc))
    if isinstance(exc, RunInputError):
        return ErrorReply(422, exc.code, "invalid run inputs", _problems(exc))
    if isinstance(exc, NodeError):  # a node refused the data sent to it (a task's answer)
        return ErrorReply(422, "invalid_input", exc.message, {"hint": exc.hint} if exc.hint else None)
    return None
