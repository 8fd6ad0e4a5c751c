"""What the nodes that run user code in the sandbox (`code`, `component`) share: their limit
fields, the check of argument names and the shape of their errors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated

from pydantic import Field

from plait.nodes.base import NodeError

TimeoutSeconds = Annotated[
    float, Field(gt=0, le=600, title="Timeout (s)", description="Wall-clock limit of one call.")
]
MemoryMB = Annotated[
    int, Field(ge=32, le=16384, title="Memory (MB)", description="Address-space limit of the process.")
]
NetworkAccess = Annotated[
    bool, Field(title="Network access", description="Allow network access (off by default).")
]

STDERR_TAIL_LINES = 20


def check_identifiers(names: Iterable[str], what: str) -> None:
    """Raise ValueError unless every name can be a Python keyword argument."""
    bad = [name for name in names if not name.isidentifier()]
    if bad:
        raise ValueError(f"{what} names must be Python identifiers: {', '.join(map(repr, bad))}")


def sandbox_node_error(
    message: str,
    *,
    error_kind: str | None,
    traceback_lines: Iterable[str],
    stderr: str,
    hints: Mapping[str, str],
) -> NodeError:
    """The node error for a failed sandbox call: the message, the user's traceback and the tail of
    stderr. Only sandbox trouble (`internal`) is retryable; the user's code fails the same way twice."""
    lines = [message, *traceback_lines]
    tail = stderr.strip()
    if tail:
        lines += ["--- stderr (last lines) ---", *tail.splitlines()[-STDERR_TAIL_LINES:]]
    return NodeError("\n".join(lines), hint=hints.get(error_kind or ""), retryable=error_kind == "internal")
