"""Use cases shared by the HTTP API and the CLI: flows, versions, runs, human tasks."""

from plait.service.core import Services
from plait.service.errors import (
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServiceError,
    TooManyAttempts,
    Unauthorized,
)
from plait.service.flows import FlowService
from plait.service.runs import RunService
from plait.service.settings import Settings

__all__ = [
    "Conflict",
    "FlowService",
    "Forbidden",
    "Gone",
    "Invalid",
    "NotFound",
    "RunService",
    "ServiceError",
    "Services",
    "Settings",
    "TooManyAttempts",
    "Unauthorized",
]
