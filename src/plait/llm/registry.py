"""Providers by name: the default `ProviderSource` of a run.

A node names its provider (`openai`, `anthropic`, `scripted`, or an OpenAI-compatible preset such
as `groq` or `ollama`); the registry builds the SDK-backed provider with the key and base URL it
looks up *by name* through `secret` (a run's stored variables, then the environment). Keys never
appear in the flow document, and a missing key is a `MissingKeyError` naming the variable to set.

Which endpoints a provider may reach (`ModelEgress`): a registry without a policy (a library
caller of `plait.run`, who is the operator) calls whatever base URL it is given. The server gives
each run a policy (`RunServices.providers = ModelEgress(...)`, plait.service.runs.launcher): then a
base URL chosen by a user's variables goes through the SSRF guard, with `PLAIT_HTTP_ALLOW`, plus
loopback when the run's owner is an administrator (a llama.cpp on 127.0.0.1 on the local start).
The operator's own endpoint (the variable's value is the one in the server's environment) is
trusted: loopback and its host are allowed. This is the policy of the Models page's model list
(plait.service.model_settings), so a test connection and a run agree on what may be reached. The
guarded requests connect to the checked address (plait.net.sdk_client), not to a second lookup.

Built providers are cached per event loop and (key, base URL, allowlist), so repeated calls reuse
the SDK's connection pool instead of opening a new one per node, and a client built for an
administrator (loopback allowed) is never reused for another user. The presets themselves (which names a flow
may use, which variables configure them) are document vocabulary: plait.spec.model_settings.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from plait.llm.base import MissingKeyError, Provider, ProviderError
from plait.llm.scripted import ScriptedProvider
from plait.net.guard import allowlist_from_env
from plait.net.sdk_client import guarded_sdk_client
from plait.spec.model_settings import PRESETS, PROVIDER_NAMES, Preset

SecretLookup = Callable[[str], str | None]
LOOPBACK = ("127.0.0.0/8", "::1/128")
CacheKey = tuple[str, str, str, tuple[str, ...] | None]

# loop -> {(name, base_url, key digest, allowlist or None when unguarded): provider}
_CACHE: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[CacheKey, Provider]] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True, slots=True)
class ModelEgress:
    """The SSRF policy of a run's model calls (see the module docstring): endpoints from the run's
    variables go through the guard; `owner_is_admin` also allows loopback. As a `ProviderSource`
    (`RunServices.providers`) it hands out guarded providers; `registry(secret)` is the same with
    the run's own variables, which is what `plait.llm.chat.resolve` uses."""

    owner_is_admin: bool = False
    environ: Mapping[str, str] | None = None  # the operator's environment; None: os.environ

    def registry(self, secret: SecretLookup) -> ProviderRegistry:
        return ProviderRegistry(secret, egress=self)

    def get(self, name: str) -> Provider:
        return self.registry(self._env().get).get(name)

    def _env(self) -> Mapping[str, str]:
        return os.environ if self.environ is None else self.environ

    def allowlist(self, preset: Preset, base_url: str | None, stored: str | None) -> tuple[str, ...]:
        """The allowlist for an endpoint: `PLAIT_HTTP_ALLOW`, loopback for an administrator or
        the operator's endpoint, and the operator's endpoint's host."""
        env = self._env()
        allow = list(allowlist_from_env(env))
        trusted = stored is not None and env.get(preset.base_url_var) == stored
        if self.owner_is_admin or trusted:
            allow.extend(LOOPBACK)
        if trusted and base_url:
            host = httpx.URL(base_url).host
            if host:
                allow.append(host)
        return tuple(allow)


def _loop_cache() -> dict[CacheKey, Provider]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return {}
    return _CACHE.setdefault(loop, {})


def _build(
    preset: Preset, name: str, key: str, base_url: str | None, allow: tuple[str, ...] | None
) -> Provider:
    # Imported here, not at the top, for start-up time only (no cycle): each SDK takes a noticeable
    # time to import, and a run loads just the one its nodes use.
    client = guarded_sdk_client(allow) if allow is not None else None
    variable = preset.base_url_var
    if preset.kind == "anthropic":
        from plait.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            api_key=key, base_url=base_url, name=name, http_client=client, base_url_var=variable
        )
    from plait.llm.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(
        api_key=key, base_url=base_url, name=name, http_client=client, base_url_var=variable
    )


class ProviderRegistry:
    """A `ProviderSource`: `get(name)` returns a ready provider.

    `secret` looks keys up by name (default: the environment). `providers` adds or overrides
    providers by name (e.g. a shared `ScriptedProvider` in tests). `egress`: the run's SSRF policy
    (None: unguarded, the caller is the operator).
    """

    def __init__(
        self,
        secret: SecretLookup | None = None,
        *,
        providers: Mapping[str, Provider] | None = None,
        egress: ModelEgress | None = None,
    ) -> None:
        self._secret = secret or os.environ.get
        self._providers = dict(providers or {})
        self._egress = egress

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
        stored = self._secret(preset.base_url_var) or None
        base_url = stored or preset.default_base_url
        key = self._secret(preset.key_var)
        if not key:
            # A custom base URL usually means a local OpenAI-compatible server that needs no key.
            if preset.key_optional or (preset.kind == "openai" and self._secret(preset.base_url_var)):
                key = "not-needed"
            else:
                raise MissingKeyError(preset.key_var, provider=name)
        allow = self._egress.allowlist(preset, base_url, stored) if self._egress is not None else None
        cache = _loop_cache()
        cache_key = (name, base_url or "", hashlib.sha256(key.encode()).hexdigest(), allow)
        provider = cache.get(cache_key)
        if provider is None:
            provider = cache[cache_key] = _build(preset, name, key, base_url, allow)
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
