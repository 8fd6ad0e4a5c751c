"""The engine's errors, one place (the tree is in `plait.errors`):

    PlaitError
    ├── RunInputError (ValueError)      run inputs do not match the flow's input schema
    ├── RunNotFoundError (LookupError)  no checkpoint for the run to resume or retry
    └── ResumeError (ValueError)        the answer cannot be delivered (no such waiting node, expired)

The built-in second bases keep `except ValueError` / `except LookupError` callers working.
"""

from __future__ import annotations

from plait.errors import PlaitError
from plait.spec.problems import Problem


class RunInputError(PlaitError, ValueError):
    """Run inputs do not match the flow's input schema; `problems` lists each field."""

    code = "invalid_input"

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("invalid run inputs:\n" + "\n".join(f"  - {p}" for p in problems))


class RunNotFoundError(PlaitError, LookupError):
    code = "not_found"


class ResumeError(PlaitError, ValueError):
    """An answer that cannot be delivered; `expired` when the waiting node's task timed out."""

    code = "conflict"

    def __init__(self, message: str, *, expired: bool = False) -> None:
        super().__init__(message, code="gone" if expired else None)
        self.expired = expired


__all__ = ["ResumeError", "RunInputError", "RunNotFoundError"]
