"""The assistant's component registry (plait.service.assistant_components) over the real store."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from plait.assistant.ports import ComponentRegistry
from plait.sandbox import SandboxPool
from plait.sandbox.components import ComponentValidation
from plait.service.assistant_components import AssistantComponents
from plait.service.components import ComponentService
from plait.store import SecretBox, Store
from scratch_db import BACKENDS, database_for


def source(name: str, output: str = "result") -> str:
    return (
        "from plait.sdk import Component, Input, Output\n\n\n"
        f"class {name}(Component):\n"
        '    inputs = [Input("text", "string", "The text")]\n'
        f'    outputs = [Output("{output}", "string")]\n\n'
        "    def run(self, text):\n"
        f'        return {{"{output}": text}}\n'
    )


def validation(name: str, output: str = "result") -> ComponentValidation:
    return ComponentValidation(
        True,
        class_name=name,
        display_name=name,
        description=f"{name} does things",
        inputs=[
            {"name": "text", "type": "string", "description": "The text", "required": True, "default": None}
        ],
        outputs=[{"name": output, "type": "string", "description": ""}],
    )


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    box = SecretBox(Fernet.generate_key().decode())
    async with database_for(request.param, tmp_path, sqlite_file="db/plait.db") as url:
        s = await Store.open(url, box=box)
        try:
            yield s
        finally:
            await s.close()


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    p = SandboxPool(size=1).start()
    yield p
    p.close()


@pytest.fixture
async def users(store: Store) -> tuple[str, str]:
    alice = await store.users.create(email="alice@example.com")
    bob = await store.users.create(email="bob@example.com")
    return alice.id, bob.id


async def names(store: Store, owner_id: str) -> dict[str, str | None]:
    """The owner's components: name -> the session that registered it (None: the owner's own)."""
    return {r.name: r.session_id for r in await store.components.list_components(owner_id=owner_id)}


def test_it_is_a_component_registry(store: Store) -> None:
    registry: ComponentRegistry = AssistantComponents(store)
    assert registry is not None


async def test_register_saves_for_the_user_and_session(
    store: Store, users: tuple[str, str], pool: SandboxPool, caplog: pytest.LogCaptureFixture
) -> None:
    alice, _ = users
    registry = AssistantComponents(store)
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        assert await registry.register(alice, "s1", validation("SumComponent"), source("SumComponent"))
    row = await store.components.get("SumComponent", owner_id=alice)
    assert row is not None and row.session_id == "s1" and row.kind == "node"
    assert row.code == source("SumComponent") and row.description == "SumComponent does things"
    assert row.spec == validation("SumComponent").spec()
    assert "assistant.user_component.registered class_name=SumComponent session_id=s1" in caplog.messages
    # The `component` node finds it by owner and name, like a component saved through the API.
    service = ComponentService(store, pool)
    assert await service.get_source("SumComponent", owner_id=alice) == (
        source("SumComponent"),
        "SumComponent",
    )
    assert [v["name"] for v in await service.list(owner_id=alice)] == ["SumComponent"]


async def test_registering_the_same_name_again_replaces_it(store: Store, users: tuple[str, str]) -> None:
    alice, _ = users
    registry = AssistantComponents(store)
    assert await registry.register(alice, "s1", validation("Echo"), source("Echo"))
    assert await registry.register(alice, "s2", validation("Echo", "text"), source("Echo", "text"))
    row = await store.components.get("Echo", owner_id=alice)
    assert row is not None and row.session_id == "s2" and row.version == 2
    assert row.code == source("Echo", "text")


async def test_a_name_the_user_saved_is_not_replaced(
    store: Store, users: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    alice, _ = users
    await store.components.save("Echo", "mine", owner_id=alice)
    refused: list[str] = []
    registry = AssistantComponents(store, on_refused=refused.append)
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        assert not await registry.register(alice, "s1", validation("Echo"), source("Echo"))
    row = await store.components.get("Echo", owner_id=alice)
    assert row is not None and row.code == "mine" and row.session_id is None and row.version == 1
    assert refused == ["name_taken"]
    warning = next(r for r in caplog.records if r.levelno == logging.WARNING)
    assert (
        warning.getMessage() == "assistant.user_component.register_refused reason=name_taken class_name=Echo"
    )


async def test_an_anonymous_user_gets_nothing_written(store: Store) -> None:
    refused: list[str] = []
    registry = AssistantComponents(store, on_refused=refused.append)
    assert not await registry.register(None, "s1", validation("Echo"), source("Echo"))
    assert await store.components.list_components() == []  # not even deployment-wide
    assert refused == ["anonymous_user"]
    assert await registry.clear(None, "s1") == 0
    assert await registry.clear(None, None) == 0


async def test_clear_wipes_one_session_and_keeps_the_rest(store: Store, users: tuple[str, str]) -> None:
    alice, _ = users
    registry = AssistantComponents(store)
    await store.components.save("Mine", "mine", owner_id=alice)
    assert await registry.register(alice, "s1", validation("One"), source("One"))
    assert await registry.register(alice, "s1", validation("Two"), source("Two"))
    assert await registry.register(alice, "s2", validation("Other"), source("Other"))
    assert await registry.clear(alice, "s1") == 2
    assert await names(store, alice) == {"Mine": None, "Other": "s2"}
    assert await registry.clear(alice, "s1") == 0  # idempotent
    assert await registry.clear(alice, None) == 1  # every session
    assert await names(store, alice) == {"Mine": None}


async def test_clear_with_nothing_registered_is_zero(store: Store, users: tuple[str, str]) -> None:
    alice, _ = users
    registry = AssistantComponents(store)
    assert await registry.clear(alice, "fresh") == 0
    assert await registry.clear(alice, None) == 0


async def test_other_users_are_not_affected(store: Store, users: tuple[str, str]) -> None:
    alice, bob = users
    registry = AssistantComponents(store)
    assert await registry.register(alice, "s1", validation("Foo"), source("Foo"))
    assert await registry.register(bob, "s1", validation("Foo"), source("Foo", "text"))  # same session id
    await store.components.save("Bar", "bob's own", owner_id=bob)
    assert await registry.register(alice, "s1", validation("Bar"), source("Bar"))  # bob's name, not alice's
    assert await registry.clear(alice, "s1") == 2
    assert await names(store, alice) == {}
    assert await names(store, bob) == {"Bar": None, "Foo": "s1"}
    bob_foo = await store.components.get("Foo", owner_id=bob)
    assert bob_foo is not None and bob_foo.code == source("Foo", "text")


async def test_saving_by_hand_makes_it_the_users_own(
    store: Store, users: tuple[str, str], pool: SandboxPool
) -> None:
    alice, _ = users
    registry = AssistantComponents(store)
    assert await registry.register(alice, "s1", validation("Keep"), source("Keep"))
    view = await ComponentService(store, pool).create(source("Keep"), owner_id=alice)
    assert view["name"] == "Keep" and view["version"] == 2
    assert await names(store, alice) == {"Keep": None}
    assert await registry.clear(alice, "s1") == 0
    assert await registry.clear(alice, None) == 0
    assert await store.components.get("Keep", owner_id=alice) is not None
    # ... and the assistant can no longer replace it.
    assert not await registry.register(alice, "s2", validation("Keep"), source("Keep", "text"))


async def test_deleting_the_user_deletes_their_generated_components(
    store: Store, users: tuple[str, str]
) -> None:
    alice, bob = users
    registry = AssistantComponents(store)
    assert await registry.register(alice, "s1", validation("Gone"), source("Gone"))
    assert await registry.register(bob, "s1", validation("Stays"), source("Stays"))
    await store.users.delete(alice)
    assert await names(store, bob) == {"Stays": "s1"}
    assert await registry.clear(alice, None) == 0
