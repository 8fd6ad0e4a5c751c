"""Providers by name: the default `ProviderSource` of a run.

A node names its provider (`openai`, `anthropic`, `scripted`, or an OpenAI-compatible preset such
as `groq` or `ollama`); the registry builds the SDK-backed provider with the key and base URL it
looks up *by name* through `secret` (a run's stored variables, then the environment). Keys never
appear in the flow document, and a missing key is a `MissingKeyError` naming the variable to set.

Built providers are cached per event loop and (key, base URL), so repeated calls reuse the SDK's
connection pool instead of opening a new one per node. The presets themselves (which names a flow
may use, which variables configure them) are document vocabulary: plait.spec.model_settings.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from plait.llm.base import MissingKeyError, Provider, ProviderError
from plait.llm.scripted import ScriptedProvider
from plait.spec.model_settings import PRESETS, PROVIDER_NAMES, Preset

SecretLookup = Callable[[str], str | None]


# loop -> {(name, base_url, key digest): provider}
_CACHE: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, str], Provider]] = (
    weakref.WeakKeyDictionary()
)


def _loop_cache() -> dict[tuple[str, str, str], Provider]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return {}
    return _CACHE.setdefault(loop, {})


def _build(preset: Preset, name: str, key: str, base_url: str | None) -> Provider:
    # Imported here, not at the top, for start-up time only (no cycle): each SDK takes a noticeable
    # time to import, and a run loads just the one its nodes use.
    if preset.kind == "anthropic":
        from plait.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(api_key=key, base_url=base_url, name=name)
    from plait.llm.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(api_key=key, base_url=base_url, name=name)


class ProviderRegistry:
    """A `ProviderSource`: `get(name)` returns a ready provider.

    `secret` looks keys up by name (default: the environment). `providers` adds or overrides
    providers by name (e.g. a shared `ScriptedProvider` in tests).
    """

    def __init__(
        self, secret: SecretLookup | None = None, *, providers: Mapping[str, Provider] | None = None
    ) -> None:
        self._secret = secret or os.environ.get
        self._providers = dict(providers or {})

    def get(self, name: str) -> Provider:
        if name in self._providers:
            return self._providers[name]
        if name == "scripted":
            raise ProviderError(
                "the scripted provider needs a script: give the node a `script` "
                "(or pass a ScriptedProvider with plait.run(..., providers=...))",
                provider="scripted",
            )
        preset = PRESETS.get(name)
        if preset is None:
            raise ProviderError(
                f"unknown provider {name!r}; use one of: {', '.join(PROVIDER_NAMES)}, or 'openai' with "
                "OPENAI_BASE_URL for any OpenAI-compatible server",
                provider=name,
            )
        base_url = self._secret(preset.base_url_var) or preset.default_base_url
        key = self._secret(preset.key_var)
        if not key:
            # A custom base URL usually means a local OpenAI-compatible server that needs no key.
            if preset.key_optional or (preset.kind == "openai" and self._secret(preset.base_url_var)):
                key = "not-needed"
            else:
                raise MissingKeyError(preset.key_var, provider=name)
        cache = _loop_cache()
        cache_key = (name, base_url or "", hashlib.sha256(key.encode()).hexdigest())
        provider = cache.get(cache_key)
        if provider is None:
            provider = cache[cache_key] = _build(preset, name, key, base_url)
        return provider


def default_providers(secret: SecretLookup | None = None) -> ProviderRegistry:
    return ProviderRegistry(secret)


def lookup(source: Any, name: str) -> Provider | None:
    """`source.get(name)`, tolerating plain dicts (None or KeyError mean "not there")."""
    try:
        found: Provider | None = source.get(name)
    except KeyError:
        return None
    return found


def scripted(script: Any, *, name: str = "scripted") -> ScriptedProvider:
    return ScriptedProvider(script, name=name)
