"""The per-request cache of the read-only catalog tools (spec 1.9, B63).

An agent asks `search_components` and `describe_component` the same things several times in one
turn (it searches, describes, builds, fails, describes again). Their answers cannot change within
a request (a `generate_component` that registers a new component clears the cache), so each one
is computed once per request: at most `MAX_CACHE_ENTRIES`, least recently used dropped first.

- The key is the tool name plus its arguments as sorted JSON, so `{"a": 1, "b": 2}` and
  `{"b": 2, "a": 1}` are one entry; arguments that cannot be serialised fall back to `repr`, which
  in effect bypasses the cache.
- Errors are never cached: the exception propagates, and the next call runs the producer again.
  (Tools that report problems as an `{"error": ...}` result say so with `cacheable`.)
- A new request gets a new `ToolCache`; nothing outlives the request.
- Only the tools in `CACHED_TOOLS` go through it; `get_field_value` never does (it reads the
  working flow, which changes).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

MAX_CACHE_ENTRIES = 100
CACHED_TOOLS = frozenset({"search_components", "describe_component"})


def cache_key(tool: str, arguments: Mapping[str, Any]) -> str:
    try:
        return f"{tool}::{json.dumps(arguments, sort_keys=True, default=str)}"
    except (TypeError, ValueError):
        return f"{tool}::{arguments!r}"


class ToolCache:
    """An LRU of tool results for one request."""

    def __init__(self, max_entries: int = MAX_CACHE_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, Any] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> tuple[bool, Any]:
        """(True, value) on a hit, which makes the entry the most recently used; (False, None)."""
        if key not in self._entries:
            return False, None
        self._entries.move_to_end(key)
        return True, self._entries[key]

    def put(self, key: str, value: Any) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    async def get_or_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        producer: Callable[[], Awaitable[Any]],
        *,
        cacheable: Callable[[Any], bool] | None = None,
    ) -> Any:
        """The cached result of `tool(arguments)`, or `await producer()` stored (unless it raises,
        or `cacheable(result)` is false). Tools outside `CACHED_TOOLS` always call the producer."""
        if tool not in CACHED_TOOLS:
            return await producer()
        key = cache_key(tool, arguments)
        hit, value = self.get(key)
        if hit:
            self.hits += 1
            return value
        self.misses += 1
        value = await producer()
        if cacheable is None or cacheable(value):
            self.put(key, value)
        return value


__all__ = ["CACHED_TOOLS", "MAX_CACHE_ENTRIES", "ToolCache", "cache_key"]
