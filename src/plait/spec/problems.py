"""Validation problems: each names the node and field at fault and how to fix it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from plait.errors import PlaitError


@dataclass(frozen=True, slots=True)
class Problem:
    code: str
    message: str
    node_id: str | None = None
    field: str | None = None
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def __str__(self) -> str:
        where = f"node {self.node_id!r}" if self.node_id else "flow"
        if self.field:
            where += f", field {self.field!r}"
        text = f"{where}: {self.message}"
        return f"{text} (fix: {self.hint})" if self.hint else text


class FlowValidationError(PlaitError, ValueError):
    """Raised when a flow document has problems; carries all of them, not just the first."""

    code = "invalid_flow"

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"flow is invalid ({len(problems)} problem{'s' * (len(problems) != 1)}):\n{lines}")
