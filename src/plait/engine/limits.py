"""Run budgets: how large one node's output may be, how deep sub-flows nest, how many node
executions one run may make.

A flow is code someone else wrote, run on a shared server: without budgets one node can return
15 MiB that is stored and streamed several times, and a sub-flow that calls itself twice makes
thousands of child runs from one request. So every run has three limits (`RunLimits`, carried by
`RunServices.limits`; the server sets them from `PLAIT_MAX_NODE_OUTPUT_BYTES`,
`PLAIT_MAX_SUBFLOW_DEPTH` and `PLAIT_MAX_NODE_EXECUTIONS`). Breaking one fails the node that broke
it with a message naming the size or count, the limit, and the fix; nothing is global.

- **Output size** is the size of the output's JSON encoding (UTF-8, compact), which is what is
  stored and streamed. `output_size_over` answers "certainly within the limit" with a cheap walk
  that over-estimates (small outputs cost a few type checks) and encodes only when the estimate
  says the output might be too large. A run's `OutputBudget` also remembers the last output found
  within the limit, so the many in-memory nodes that pass a value on unchanged cost one identity
  test.
- **Node executions** are counted over the whole run tree: every node start (retries and
  re-runs after a crash included) of the run, of its loop and map bodies and of its sub-flow
  children, which share one `ExecutionCount`.
- **Sub-flow depth** is checked when a sub-flow starts a child run (`SubflowResolver`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from plait.nodes.base import NodeError

DEFAULT_MAX_NODE_OUTPUT_BYTES = 1 << 20  # 1 MiB
DEFAULT_MAX_SUBFLOW_DEPTH = 16
DEFAULT_MAX_NODE_EXECUTIONS = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class RunLimits:
    """The budgets of a run (and of the sub-flow runs and bodies inside it). 0 turns a limit off."""

    max_node_output_bytes: int = DEFAULT_MAX_NODE_OUTPUT_BYTES
    max_subflow_depth: int = DEFAULT_MAX_SUBFLOW_DEPTH
    max_node_executions: int = DEFAULT_MAX_NODE_EXECUTIONS


DEFAULT_LIMITS = RunLimits()


class ExecutionCount:
    """The node executions of one run tree so far (shared by its bodies and sub-flow children)."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        self.used = 0

    def __repr__(self) -> str:
        return f"ExecutionCount(used={self.used})"


def too_many_executions(limit: int) -> NodeError:
    return NodeError(
        f"the run reached its limit of {limit:,} node executions (counted over the whole run: "
        "loop and map iterations, retries and sub-flow runs included)",
        hint="bound the loop, map or sub-flow recursion that keeps starting nodes, or raise "
        "PLAIT_MAX_NODE_EXECUTIONS",
        retryable=False,
    )


def subflow_too_deep(limit: int) -> NodeError:
    return NodeError(
        f"sub-flows are nested deeper than {limit} levels",
        hint="check for a flow that calls itself without an end, or raise PLAIT_MAX_SUBFLOW_DEPTH",
        retryable=False,
    )


def output_too_large(node_id: str, size: int, limit: int) -> NodeError:
    return NodeError(
        f"the output of node {node_id!r} is {_amount(size)} as JSON, over the limit of "
        f"{_amount(limit)} per node output",
        hint="return less (keep large data in a file or a store and return a reference to it, or "
        "select the fields you need), or raise PLAIT_MAX_NODE_OUTPUT_BYTES",
        retryable=False,
    )


def _amount(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB ({n:,} bytes)"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB ({n:,} bytes)"
    return f"{n:,} bytes"


# ------------------------------------------------------------------------------- output size
class OutputBudget:
    """The output size limit of one run (> 0), and the last value found within it."""

    __slots__ = ("limit", "_fits")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._fits: Any = _NOTHING

    def over(self, value: Any) -> int | None:
        """As `output_size_over` (the size when `value` is over the limit, else None)."""
        if value is self._fits:
            return None
        size = output_size_over(value, self.limit)
        if size is None:
            self._fits = value
        return size


_NOTHING = object()
_SMALL = frozenset({type(None), bool, float})
_SMALL_BYTES = 32  # an upper bound for the JSON of None, a bool, a float or an int of 64 bits
_PER_CHAR = 6  # the most one character of a string can take in JSON (`\u001f`)


def output_size_over(value: Any, limit: int) -> int | None:
    """The size in bytes of `value`'s JSON encoding when it is over `limit`, else None.

    Cheap for small outputs: an over-estimate (every character of a string counted as the six
    bytes an escape takes) accepts most values after a short walk; only a value that might be too
    large is encoded (as the store does: compact, UTF-8, anything not JSON as its `str`)."""
    if limit <= 0 or (type(value) in _SMALL and limit >= _SMALL_BYTES):
        return None
    try:
        if _bound(value, limit) >= 0:
            return None
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())
    except (RecursionError, ValueError, TypeError):
        return None  # not JSON (nested too deep, circular): not this check's business
    return size if size > limit else None


def _bound(value: Any, budget: int) -> int:
    """`budget` minus an upper bound of `value`'s JSON size, stopping once below 0."""
    t = type(value)
    if t is str:
        return budget - _PER_CHAR * len(value) - 2
    if t in _SMALL or (t is int and value.bit_length() <= 64):
        return budget - _SMALL_BYTES
    if t is dict:
        budget -= 2
        for k, v in value.items():
            budget -= _PER_CHAR * len(k) + 4 if type(k) is str else _SMALL_BYTES + 4
            budget = _bound(v, budget)
            if budget < 0:
                return budget
        return budget
    if t is list or t is tuple:
        budget -= 2
        for v in value:
            budget = _bound(v, budget - 1)
            if budget < 0:
                return budget
        return budget
    return -1  # anything else: encode it to know


__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_NODE_EXECUTIONS",
    "DEFAULT_MAX_NODE_OUTPUT_BYTES",
    "DEFAULT_MAX_SUBFLOW_DEPTH",
    "ExecutionCount",
    "OutputBudget",
    "RunLimits",
    "output_size_over",
    "output_too_large",
    "subflow_too_deep",
    "too_many_executions",
]
