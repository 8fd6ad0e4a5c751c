"""The per-request tool cache (plait.assistant.tool_cache), alone and behind the toolkit (spec 1.9)."""

from __future__ import annotations

from typing import Any

import pytest

from plait.assistant.catalog import ComponentInfo, RegistryCatalog
from plait.assistant.tool_cache import MAX_CACHE_ENTRIES, ToolCache, cache_key
from plait.assistant.toolkit import Toolkit
from plait.assistant.working_flow import WorkingFlow


class CountingCatalog(RegistryCatalog):
    """The real catalog, counting how often the toolkit asks it."""

    def __init__(self) -> None:
        super().__init__()
        self.gets: list[str] = []
        self.searches: list[str | None] = []

    def get(self, name: str) -> ComponentInfo | None:
        self.gets.append(name)
        return super().get(name)

    def search(self, query: str | None = None) -> list[ComponentInfo]:
        self.searches.append(query)
        return super().search(query)


def toolkit(catalog: RegistryCatalog, cache: ToolCache | None = None) -> Toolkit:
    return Toolkit(WorkingFlow(None, catalog), catalog, cache=cache)


async def test_m_s48_a_second_describe_component_does_not_read_the_registry_again() -> None:
    catalog = CountingCatalog()
    tools = toolkit(catalog)
    first = await tools.call("describe_component", {"component_type": "start"})
    second = await tools.call("describe_component", {"component_type": "start"})
    assert first == second and first["name"] == "start"
    assert catalog.gets == ["start"]
    assert tools.cache.hits == 1 and tools.cache.misses == 1


async def test_m_s49_separate_keys_then_a_hit() -> None:
    catalog = CountingCatalog()
    tools = toolkit(catalog)
    await tools.call("describe_component", {"component_type": "start"})
    await tools.call("describe_component", {"component_type": "output"})
    await tools.call("describe_component", {"component_type": "output"})
    assert catalog.gets == ["start", "output"]
    await tools.call("search_components", {"query": "model"})
    await tools.call("search_components", {"query": "model"})
    assert catalog.searches == ["model"]


async def test_m_s50_errors_are_not_cached() -> None:
    catalog = CountingCatalog()
    tools = toolkit(catalog)
    first = await tools.call("describe_component", {"component_type": "Nope"})
    second = await tools.call("describe_component", {"component_type": "Nope"})
    assert "not found in registry" in first["error"] and first == second
    assert catalog.gets == ["Nope", "Nope"]
    assert len(tools.cache) == 0

    cache = ToolCache()
    calls = 0

    async def boom() -> Any:
        nonlocal calls
        calls += 1
        raise RuntimeError("registry down")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            await cache.get_or_call("describe_component", {"component_type": "x"}, boom)
    assert calls == 2


async def test_m_s51_a_new_request_starts_with_an_empty_cache() -> None:
    catalog = CountingCatalog()
    await toolkit(catalog).call("describe_component", {"component_type": "start"})
    fresh = toolkit(catalog)
    assert len(fresh.cache) == 0
    await fresh.call("describe_component", {"component_type": "start"})
    assert catalog.gets == ["start", "start"]


async def test_m_s52_get_field_value_reads_the_current_value() -> None:
    catalog = RegistryCatalog()
    tools = toolkit(catalog)
    await tools.call("add_component", {"component_type": "message", "config": {"text": "one"}})
    first = await tools.call("get_field_value", {"component_id": "message", "field_name": "text"})
    await tools.call("configure_component", {"component_id": "message", "params": {"text": "two"}})
    second = await tools.call("get_field_value", {"component_id": "message", "field_name": "text"})
    assert (first["value"], second["value"]) == ("one", "two")
    assert len(tools.cache) == 0


async def test_results_are_copies_callers_cannot_change_the_cache() -> None:
    tools = toolkit(RegistryCatalog())
    first = await tools.call("describe_component", {"component_type": "message"})
    first["fields"].clear()
    assert (await tools.call("describe_component", {"component_type": "message"}))["fields"]


async def test_lru_bound_and_key_order() -> None:
    cache = ToolCache()
    for i in range(MAX_CACHE_ENTRIES + 1):

        async def produce(i: int = i) -> int:
            return i

        await cache.get_or_call("search_components", {"query": str(i)}, produce)
    assert len(cache) == MAX_CACHE_ENTRIES
    assert cache_key("search_components", {"query": "0"}) not in cache  # the oldest went first
    assert cache_key("t", {"a": 1, "b": 2}) == cache_key("t", {"b": 2, "a": 1})
    hit, _ = cache.get(cache_key("search_components", {"query": "1"}))
    assert hit
    await cache.get_or_call("search_components", {"query": "new"}, produce)
    assert cache_key("search_components", {"query": "1"}) in cache  # refreshed by the hit
    assert cache_key("search_components", {"query": "2"}) not in cache


async def test_unsortable_arguments_and_uncached_tools() -> None:
    cache = ToolCache()
    calls = 0

    async def produce() -> int:
        nonlocal calls
        calls += 1
        return calls

    assert cache_key("t", {"x": {1, 2}}).startswith("t::")  # default=str serialises sets
    assert cache_key("t", {1: "a", "b": 2}) == "t::" + repr({1: "a", "b": 2})  # unsortable keys: repr
    await cache.get_or_call("get_field_value", {"component_id": "a"}, produce)
    await cache.get_or_call("get_field_value", {"component_id": "a"}, produce)
    assert calls == 2 and len(cache) == 0
