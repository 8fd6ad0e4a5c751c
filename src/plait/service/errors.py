"""Errors of the service layer; the HTTP layer maps them to status codes (`status`).

PlaitError
└── ServiceError        400 bad_request (a request the service refuses)
    ├── Unauthorized    401 unauthorized
    ├── NotFound        404 not_found
    ├── Conflict        409 conflict
    ├── Gone            410 gone
    └── Invalid         422 invalid
"""

from __future__ import annotations

from typing import Any

from plait.errors import PlaitError


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
