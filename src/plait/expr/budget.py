"""Render budgets: how long a template may run and how much it may write or build.

A template is code written by whoever wrote the flow, run inside the server. Jinja's sandbox stops
escapes, not resource use: nested `{% for %}` loops spin for minutes, `'x'.ljust(400000000)` or
`'%400000000s' % 1` allocate hundreds of MB in one call, and `[[x] * 1000] * 1000` is small in
memory but huge once written out. So every Jinja render runs under a `Budget`:

- **time**: a deadline checked at every loop iteration, call, filter and output (`tick`), plus a
  cancel flag the awaiting side sets when the node is cancelled or times out;
- **size**: every value the template builds and all it writes are measured before (or, for
  operations whose result is at most a small multiple of their inputs, right after) they are
  allocated, against one limit in characters (`max_chars`).

Breaking a budget raises a `TemplateLimitError` (a `TemplateError`) naming the limit and the
setting that raises it. The limits come from the environment (`TemplateLimits.from_env`):
PLAIT_TEMPLATE_TIMEOUT_S (default 2 s), PLAIT_TEMPLATE_MAX_CHARS (default 1 MiB of characters),
PLAIT_TEMPLATE_INLINE_TIMEOUT_S (default 0.02 s: a template rendered synchronously on the event
loop, see template.py) and PLAIT_TEMPLATE_WORKERS (default 2 render threads).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from plait.expr.refs import TemplateError

DEFAULT_TIMEOUT_S = 2.0
DEFAULT_MAX_CHARS = 1 << 20
DEFAULT_INLINE_TIMEOUT_S = 0.02
DEFAULT_WORKERS = 2
MAX_DEPTH = 256  # nesting of a value a template builds or writes
# A render thread gives up the GIL this often, so the event loop thread waits well under the
# interpreter's 5 ms switch interval each time it needs the GIL (measured: median loop lag 5 ms
# without, 0.2 ms with).
YIELD_EVERY_S = 0.0002
_CONTAINERS = (list, tuple, dict, set, frozenset)
_SCALARS = frozenset({int, float, bool, type(None)})
_TEXTS = frozenset({str, bytes})


class TemplateLimitError(TemplateError):
    """A template broke its time or size budget; the message names the limit, the hint the fix."""

    code = "template_limit"


@dataclass(frozen=True, slots=True)
class TemplateLimits:
    """The budgets of one render; `from_env` reads the PLAIT_TEMPLATE_* settings."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_chars: int = DEFAULT_MAX_CHARS
    inline_timeout_s: float = DEFAULT_INLINE_TIMEOUT_S
    workers: int = DEFAULT_WORKERS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> TemplateLimits:
        def number(name: str, default: float, low: float) -> float:
            try:
                value = float(environ.get(name, "") or default)
            except ValueError:
                return default
            return value if value >= low else default

        return cls(
            timeout_s=number("PLAIT_TEMPLATE_TIMEOUT_S", DEFAULT_TIMEOUT_S, 0.001),
            max_chars=int(number("PLAIT_TEMPLATE_MAX_CHARS", DEFAULT_MAX_CHARS, 1)),
            inline_timeout_s=number("PLAIT_TEMPLATE_INLINE_TIMEOUT_S", DEFAULT_INLINE_TIMEOUT_S, 0.001),
            workers=int(number("PLAIT_TEMPLATE_WORKERS", DEFAULT_WORKERS, 1)),
        )


_limits = TemplateLimits.from_env()


def limits() -> TemplateLimits:
    """The process-wide template limits."""
    return _limits


def set_limits(new: TemplateLimits | None = None, **changes: Any) -> TemplateLimits:
    """Replace the process-wide limits (the server's settings, tests); returns the previous ones."""
    global _limits
    previous = _limits
    _limits = replace(new or previous, **changes)
    return previous


class Budget:
    """The time and size budget of one render (or of one `render` call over a whole value).

    `setting` names the setting that holds its time limit (for the timeout message); `polite`
    (a render off the event loop) makes `tick` give up the GIL now and then.
    """

    __slots__ = (
        "deadline",
        "timeout_s",
        "max_chars",
        "written",
        "cancelled",
        "setting",
        "polite",
        "_next_yield",
        "_weights",
    )

    def __init__(
        self,
        timeout_s: float | None,
        max_chars: int,
        *,
        setting: str = "PLAIT_TEMPLATE_TIMEOUT_S",
        polite: bool = False,
    ) -> None:
        now = time.monotonic() if timeout_s is not None or polite else 0.0
        self.timeout_s = timeout_s
        self.deadline = None if timeout_s is None else now + timeout_s
        self.max_chars = max_chars
        self.written = 0
        self.cancelled = False
        self.setting = setting
        self.polite = polite
        self._next_yield = now + YIELD_EVERY_S
        self._weights: dict[int, tuple[Any, int]] = {}  # id -> (value kept alive, weight)

    def tick(self) -> None:
        """Fail once the deadline has passed or the render was cancelled."""
        if self.cancelled:
            raise TemplateLimitError("template rendering was stopped (the node was cancelled or timed out)")
        if self.deadline is None and not self.polite:
            return
        now = time.monotonic()
        if self.polite and now >= self._next_yield:
            time.sleep(0)  # let the event loop thread have the GIL
            self._next_yield = now + YIELD_EVERY_S
        if self.deadline is not None and now > self.deadline:
            raise TemplateLimitError(
                f"template took longer than {self.timeout_s:g}s to render",
                hint=f"make its loops shorter or do the work in a code node (the limit is {self.setting})",
            )

    def cancel(self) -> None:
        self.cancelled = True

    def too_large(self, what: str, size: int | None = None) -> TemplateLimitError:
        amount = f" ({size:,} characters)" if size is not None and size > self.max_chars else ""
        return TemplateLimitError(
            f"template would build {what} larger than {self.max_chars:,} characters{amount}",
            hint="render less text (truncate or filter the data first) or raise PLAIT_TEMPLATE_MAX_CHARS",
        )

    def check_size(self, size: int, what: str) -> None:
        if size > self.max_chars:
            raise self.too_large(what, size)

    def write(self, text: str) -> str:
        """Count text the template writes (to its output or to a captured block)."""
        self.written += len(text)
        if self.written > self.max_chars:
            raise self.too_large("an output", self.written)
        return text

    def check_value(self, value: Any, what: str = "a value") -> Any:
        """Check a value the template built against the size limit; returns it."""
        kind = type(value)
        if kind is str or kind is bytes or isinstance(value, (str, bytes)):
            if len(value) > self.max_chars:
                raise self.too_large(what, len(value))
        elif isinstance(value, _CONTAINERS):
            self.check_size(self.weight(value), what)
        return value

    def weight(self, value: Any, cap: int | None = None) -> int:
        """How large `value` is once written out, in characters (strings count their length,
        everything else 1, containers 1 plus their items), counting shared items every time they
        occur. Stops early: a result above `cap` (default `max_chars`) only means "too large".
        Results are remembered per object for this budget, so values built from checked values
        cost a shallow walk.
        """
        kind = type(value)
        if kind is str or kind is bytes or isinstance(value, (str, bytes)):
            return len(value)
        if not isinstance(value, _CONTAINERS):
            return 1
        limit = self.max_chars if cap is None else cap
        seen = self._weights.get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
        total = self._walk(value, limit, 0)
        if total <= limit:
            self._weights[id(value)] = (value, total)
        return total

    def remember(self, value: Any, weight: int) -> Any:
        """Record the weight of a value built from measured parts (so it is not walked again)."""
        if isinstance(value, _CONTAINERS):
            self._weights[id(value)] = (value, weight)
        return value

    def _walk(self, value: Any, limit: int, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise TemplateLimitError(
                f"template would build a value nested more than {MAX_DEPTH} levels deep",
                hint="build flatter data",
            )
        if len(value) > limit:
            return limit + 1
        if isinstance(value, Mapping):
            total = 1 + self._items(value.keys(), limit - 1, depth)
            if total > limit:
                return total
            return total + self._items(value.values(), limit - total, depth)
        return 1 + self._items(value, limit - 1, depth)

    def _items(self, items: Any, limit: int, depth: int) -> int:
        kinds = set(map(type, items))  # one C-speed pass: most data is flat
        if kinds <= _SCALARS:
            return len(items)
        if kinds <= _TEXTS:
            return sum(map(len, items))
        if kinds <= _SCALARS | _TEXTS:
            return sum(len(item) if type(item) in _TEXTS else 1 for item in items)
        total = 0
        cache = self._weights
        for item in items:
            kind = type(item)
            if kind is str or kind is bytes:
                total += len(item)
            elif isinstance(item, _CONTAINERS):
                seen = cache.get(id(item))
                if seen is not None and seen[0] is item:
                    total += seen[1]
                else:
                    size = self._walk(item, limit - total, depth + 1)
                    if size <= limit:
                        cache[id(item)] = (item, size)
                    total += size
            elif isinstance(item, (str, bytes)):
                total += len(item)
            else:
                total += 1
            if total > limit:
                return total
        return total


_current: ContextVar[Budget | None] = ContextVar("plait_template_budget", default=None)


def current() -> Budget | None:
    """The budget of the render running in this thread/context, if any."""
    return _current.get()


def active() -> Budget:
    """The running render's budget; outside a render (Jinja folding constants at compile time,
    a filter called directly) a budget with the size limit and no deadline."""
    budget = _current.get()
    if budget is None:
        return Budget(None, _limits.max_chars)
    return budget


def enter(budget: Budget) -> Any:
    """Make `budget` the running render's budget; pass the token to `leave`."""
    return _current.set(budget)


def leave(token: Any) -> None:
    _current.reset(token)


__all__ = [
    "Budget",
    "TemplateLimitError",
    "TemplateLimits",
    "active",
    "current",
    "enter",
    "leave",
    "limits",
    "set_limits",
]
