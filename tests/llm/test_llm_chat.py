"""Provider resolution (keys by name, auto, scripted) and same-provider model fallback."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from plait.llm import (
    ChatRequest,
    Message,
    MissingKeyError,
    ModelNotFoundError,
    ModelSettings,
    ProviderError,
    ProviderRegistry,
    ScriptedProvider,
    chat,
    resolve,
)
from plait.nodes.base import NodeError
from plait.nodes.llm_errors import as_node_error


class Ctx:
    """The two things `plait.llm.chat` uses: `secret(name)` and `services.providers`."""

    def __init__(self, secrets: dict[str, str] | None = None, providers: Any = None) -> None:
        self._secrets = secrets or {}
        self.services = SimpleNamespace(providers=providers, tools=None)
        self.looked_up: list[str] = []

    def secret(self, name: str) -> str | None:
        self.looked_up.append(name)
        return self._secrets.get(name)


REQ = ChatRequest("", [Message("user", "hi")])


async def test_falls_back_to_the_next_model_only_on_model_not_found() -> None:
    sp = ScriptedProvider(
        [
            {"model": "gpt-9", "error": "model_not_found"},
            {"model": "gpt-8", "error": "model_not_found"},
            {"model": "gpt-4o-mini", "content": "hello"},
        ]
    )
    r = await chat(Ctx(), provider=sp, models=["gpt-9", "gpt-8", "gpt-4o-mini"], request=REQ)
    assert (r.content, r.model) == ("hello", "gpt-4o-mini")
    assert [q.model for q in sp.requests] == ["gpt-9", "gpt-8", "gpt-4o-mini"]


async def test_exhausted_candidates_list_the_models_tried() -> None:
    sp = ScriptedProvider([{"error": "model_not_found", "repeat": True}])
    with pytest.raises(ModelNotFoundError) as info:
        await chat(Ctx(), provider=sp, models=["a", "b"], request=REQ)
    assert info.value.models_tried == ["a", "b"]
    assert "tried a, b" in info.value.message
    err = as_node_error(info.value)
    assert isinstance(err, NodeError) and not err.retryable and "tried: a, b" in (err.hint or "")


@pytest.mark.parametrize("kind", ["auth", "rate_limit", "unavailable"])
async def test_other_errors_do_not_fall_back(kind: str) -> None:
    sp = ScriptedProvider([{"error": kind}, "never reached"])
    with pytest.raises(ProviderError):
        await chat(Ctx(), provider=sp, models=["a", "b"], request=REQ)
    assert [q.model for q in sp.requests] == ["a"]


async def test_a_node_script_builds_a_scripted_provider() -> None:
    r = await chat(Ctx(), provider="scripted", models=[], request=REQ, script=["from the script"])
    assert (r.content, r.model) == ("from the script", "scripted")


async def test_run_providers_are_used_by_name_and_dicts_work() -> None:
    shared = ScriptedProvider(["shared"])
    ctx = Ctx(providers={"scripted": shared})
    assert (await chat(ctx, provider="scripted", models=["x"], request=REQ)).content == "shared"
    registry_ctx = Ctx(providers=ProviderRegistry(providers={"mine": ScriptedProvider(["mine"])}))
    assert (await chat(registry_ctx, provider="mine", models=["x"], request=REQ)).content == "mine"


def test_scripted_without_a_script_says_how_to_give_one() -> None:
    with pytest.raises(ProviderError, match="needs a script"):
        resolve(Ctx(), "scripted", ["m"])


def test_missing_key_names_the_variable() -> None:
    ctx = Ctx()
    with pytest.raises(MissingKeyError) as info:
        resolve(ctx, "openai", ["gpt-4o-mini"])
    assert info.value.variable == "OPENAI_API_KEY"
    assert "OPENAI_API_KEY" in str(info.value)
    assert "OPENAI_API_KEY" in ctx.looked_up
    with pytest.raises(MissingKeyError, match="ANTHROPIC_API_KEY"):
        resolve(Ctx(), "anthropic", ["claude"])
    err = as_node_error(MissingKeyError("GROQ_API_KEY", provider="groq"))
    assert err.hint == "set the variable GROQ_API_KEY" and not err.retryable


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ProviderError, match="unknown provider 'nope'.*openai.*anthropic.*scripted"):
        resolve(Ctx(), "nope", ["m"])


def test_keys_come_from_secrets_and_a_base_url_alone_is_enough() -> None:
    provider, models = resolve(Ctx({"OPENAI_API_KEY": "sk-test"}), "openai", ["gpt-4o-mini"])
    assert provider.name == "openai" and models == ["gpt-4o-mini"]
    local, _ = resolve(Ctx({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}), "openai", ["m"])
    assert local.name == "openai"
    with pytest.raises(ProviderError, match="no model set"):
        resolve(Ctx({"OPENAI_API_KEY": "sk-test"}), "openai", [])


def test_auto_is_openai_when_configured_else_scripted() -> None:
    script = ["scripted answer"]
    p, models = resolve(Ctx(), "auto", ["gpt-4o-mini"], script=script)
    assert isinstance(p, ScriptedProvider) and models == ["gpt-4o-mini"]
    p, models = resolve(
        Ctx({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_MODEL": "smol"}),
        "auto",
        ["gpt"],
        script=script,
    )
    assert p.name == "openai" and not isinstance(p, ScriptedProvider) and models == ["smol"]


def test_model_settings_candidates() -> None:
    s = ModelSettings(provider="openai", model="a", fallback_models=["b", "c"])
    assert s.models() == ["a", "b", "c"]
    with pytest.raises(ValueError):
        ModelSettings(temperature=5)


async def test_registry_builds_sdk_providers_and_reuses_them_per_loop() -> None:
    from plait.llm import Provider
    from plait.llm.anthropic_provider import AnthropicProvider
    from plait.llm.openai_compat import OpenAICompatProvider

    secrets = {"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "sk-ant"}
    registry = ProviderRegistry(secrets.get)
    openai_provider = registry.get("openai")
    assert isinstance(openai_provider, OpenAICompatProvider) and isinstance(openai_provider, Provider)
    assert registry.get("openai") is openai_provider  # same key and URL: one client, one pool
    assert ProviderRegistry({"OPENAI_API_KEY": "sk-2"}.get).get("openai") is not openai_provider
    anthropic_provider = registry.get("anthropic")
    assert isinstance(anthropic_provider, AnthropicProvider) and anthropic_provider.name == "anthropic"
    ollama = ProviderRegistry({}.get).get("ollama")  # local preset: no key needed
    assert str(ollama.client.base_url).startswith("http://127.0.0.1:11434/v1")
