"""The model providers a user can call, as the Models page and the node forms show them.

A provider is configured by variables, exactly as a run of that user reads them (the user's
variables over the deployment's, then the operator's environment for model settings:
`plait.engine.context.lookup_secret`): a key (`OPENAI_API_KEY`...), a base URL
(`OPENAI_BASE_URL`...: an OpenAI-compatible server needs no key) and a default model
(`OPENAI_MODEL`...). The Models page writes those variables through the variables API (keys as
secrets), so a run, the assistant and this listing can never disagree about what is configured.

Model lists come from the endpoint itself (`GET {base}/models`, plait.llm.model_list), cached
briefly per (endpoint, key), else from the models plait knows for the provider.

Which hosts a listing may reach: the SSRF guard with `PLAIT_HTTP_ALLOW`, plus loopback for an
administrator (the local start's user is one: a llama.cpp or Ollama on 127.0.0.1 must work there)
and the operator's own endpoint (a base URL set in the server's environment). Other users reach
private and loopback addresses only through `PLAIT_HTTP_ALLOW`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx

from plait.assistant.models import ASSISTANT_MODELS
from plait.engine.context import lookup_secret
from plait.llm.model_list import ModelListError, list_models
from plait.net.guard import allowlist_from_env
from plait.service.access import Principal
from plait.service.errors import Invalid
from plait.service.runs.secrets import RunSecrets
from plait.spec.model_settings import PRESETS, SCRIPTED, SCRIPTED_LABEL, Preset

SecretLookup = Callable[[str], str | None]
LOOPBACK = ("127.0.0.0/8", "::1/128")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One provider's endpoint as a user's runs would call it."""

    provider: str
    preset: Preset
    base_url: str | None  # None: the SDK's default (api.openai.com, api.anthropic.com)
    base_url_set: bool  # someone set the base URL variable (not the preset's default)
    key: str | None
    default_model: str | None
    trusted: bool  # the operator configured it (its base URL comes from the environment)

    @property
    def configured(self) -> bool:
        """A key, or (OpenAI-compatible) a base URL someone set: a local server needs no key
        (the same rule as the assistant's, plait.assistant.models.is_configured)."""
        return bool(self.key) or (self.preset.kind == "openai" and self.base_url_set)


def endpoint_of(name: str, secret: SecretLookup, env: Mapping[str, str]) -> Endpoint:
    """The endpoint of provider `name` as `secret` resolves it; `env` is the operator's
    environment (an endpoint whose base URL is the operator's is trusted)."""
    preset = PRESETS[name]
    stored_base = secret(preset.base_url_var) or None
    model = (secret(preset.model_var) or "").strip() if preset.model_var else ""
    return Endpoint(
        provider=name,
        preset=preset,
        base_url=stored_base or preset.default_base_url,
        base_url_set=stored_base is not None,
        key=secret(preset.key_var) or None,
        default_model=model or None,
        trusted=stored_base is not None and env.get(preset.base_url_var) == stored_base,
    )


class ModelSettingsService:
    """Providers per user (`providers`) and the model list of an endpoint (`test`)."""

    def __init__(
        self,
        secrets: RunSecrets,
        *,
        environ: Mapping[str, str] | None = None,
        timeout_s: float = 5.0,
        list_timeout_s: float = 2.5,
        cache_ttl_s: float = 60.0,
    ) -> None:
        self.secrets = secrets
        self.environ = environ  # None: os.environ, read when asked
        self.timeout_s = timeout_s  # Test connection
        self.list_timeout_s = list_timeout_s  # the providers listing (the forms wait for it)
        self.cache_ttl_s = cache_ttl_s
        self._cache: dict[tuple[str, str, str, str], tuple[float, list[str]]] = {}

    def _env(self) -> Mapping[str, str]:
        return self.environ if self.environ is not None else os.environ

    async def _lookup(self, who: Principal, overrides: Mapping[str, str] | None = None) -> SecretLookup:
        values, _mask = await self.secrets.for_run(who.user_id)
        if overrides:
            values = {**values, **overrides}
        return partial(lookup_secret, values)

    def _allow(self, who: Principal, endpoint: Endpoint) -> list[str]:
        allow = list(allowlist_from_env(self._env()))
        if who.is_admin or endpoint.trusted:
            allow.extend(LOOPBACK)
        if endpoint.trusted and endpoint.base_url:
            host = httpx.URL(endpoint.base_url).host
            if host:
                allow.append(host)
        return allow

    async def _models(self, who: Principal, endpoint: Endpoint, timeout_s: float) -> list[str]:
        digest = hashlib.sha256((endpoint.key or "").encode()).hexdigest()
        allow = self._allow(who, endpoint)
        # The allowlist is part of the key: a list fetched for an admin (loopback allowed) is
        # never served to a caller the guard would have refused.
        cache_key = (endpoint.provider, endpoint.base_url or "", digest, ",".join(allow))
        hit = self._cache.get(cache_key)
        now = time.monotonic()
        if hit is not None and now - hit[0] < self.cache_ttl_s:
            return hit[1]
        models = await list_models(
            endpoint.preset.kind,
            endpoint.base_url,
            endpoint.key,
            allow=allow,
            timeout_s=timeout_s,
        )
        self._cache[cache_key] = (now, models)
        if len(self._cache) > 512:
            self._cache.pop(next(iter(self._cache)))
        return models

    async def providers(self, who: Principal) -> list[dict[str, Any]]:
        """Every provider a node may name, for this caller: configured ones with the models their
        endpoint reports (else plait's known models), then `scripted`, always configured."""
        secret = await self._lookup(who)
        env = self._env()
        # Concurrently: each configured endpoint is asked for its models (bounded by list_timeout_s).
        out = list(await asyncio.gather(*(self._entry(who, endpoint_of(n, secret, env)) for n in PRESETS)))
        out.append(
            {
                "name": SCRIPTED,
                "label": SCRIPTED_LABEL,
                "kind": SCRIPTED,
                "configured": True,
                "models": [],
                "default_model": None,
            }
        )
        return out

    async def _entry(self, who: Principal, endpoint: Endpoint) -> dict[str, Any]:
        preset = endpoint.preset
        known = [m for m in ASSISTANT_MODELS.get(endpoint.provider, ()) if m != SCRIPTED]
        configured = endpoint.configured
        models, source, error = known, "known", None
        if configured:
            try:
                models, source = await self._models(who, endpoint, self.list_timeout_s), "endpoint"
            except ModelListError as exc:
                error = str(exc)
        default = endpoint.default_model or (models[0] if source == "endpoint" and models else None)
        if default is None and known:
            default = known[0]
        if default and default not in models:
            models = [default, *models]
        return {
            "name": endpoint.provider,
            "label": preset.label or endpoint.provider,
            "kind": preset.kind,
            "configured": configured,
            "models": models,
            "default_model": default,
            "models_source": source,
            "models_error": error,
            "base_url": endpoint.base_url,
            "default_base_url": preset.default_base_url,
            "key_set": bool(endpoint.key),
            "key_optional": preset.kind == "openai",
            "key_variable": preset.key_var,
            "base_url_variable": preset.base_url_var,
            "model_variable": preset.model_var,
        }

    async def test(
        self,
        who: Principal,
        provider: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> dict[str, Any]:
        """List the models of `provider`'s endpoint, with `base_url` / `api_key` when given (the
        Models page tests before it saves), else as the caller's runs would call it. Answers
        `{ok, provider, url, models}` or `{ok: false, reason, error, hint}`; never the key."""
        preset = PRESETS.get(provider)
        if preset is None:
            known = ", ".join(PRESETS)
            raise Invalid(f"unknown provider {provider!r}: use one of {known}", code="unknown_provider")
        overrides: dict[str, str] = {}
        if base_url and base_url.strip():
            overrides[preset.base_url_var] = base_url.strip()
        if api_key and api_key.strip():
            overrides[preset.key_var] = api_key.strip()
        secret = await self._lookup(who, overrides)
        endpoint = endpoint_of(
            provider, secret, self._env() if not overrides.get(preset.base_url_var) else {}
        )
        answer: dict[str, Any] = {"provider": provider, "base_url": endpoint.base_url}
        if not endpoint.configured:
            what = preset.base_url_var if preset.kind == "openai" else preset.key_var
            return {
                **answer,
                "ok": False,
                "reason": "not_configured",
                "error": f"{provider} is not configured: give a base URL or a key ({what})",
                "hint": None,
                "models": [],
            }
        try:
            models = await list_models(
                preset.kind,
                endpoint.base_url,
                endpoint.key,
                allow=self._allow(who, endpoint),
                timeout_s=self.timeout_s,
            )
        except ModelListError as exc:
            return {
                **answer,
                "ok": False,
                "reason": exc.reason,
                "error": exc.message,
                "hint": exc.hint,
                "models": [],
            }
        return {**answer, "ok": True, "reason": None, "error": None, "hint": None, "models": models}
