"""How nodes call models: resolve the provider for a run, then chat with same-provider fallback.

Every model-using node (`llm`, `agent`, `categorize`) and the edge-LLM decider go through
`resolve` and `chat`, so key lookup, the `scripted` provider, the `auto` choice and model fallback
behave the same everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from plait.llm.base import (
    AuthenticationError,
    ChatRequest,
    ChatResponse,
    DeltaSink,
    MissingKeyError,
    ModelNotFoundError,
    Provider,
    ProviderError,
)
from plait.llm.registry import PRESETS, PROVIDER_NAMES, ProviderRegistry, lookup
from plait.llm.scripted import ScriptedProvider, check_script

AUTO = "auto"
SCRIPTED_MODEL = "scripted"


class ModelSettings(BaseModel):
    """The model part of a node config (and of `settings.decider`): which provider and models.

    Node configs subclass it so every model-using node is configured the same way.
    """

    model_config = ConfigDict(extra="forbid")

    provider: str = Field(
        "openai",
        title="Provider",
        description=(
            f"One of {', '.join(PROVIDER_NAMES)}, or 'auto': 'openai' when OPENAI_BASE_URL or "
            "OPENAI_API_KEY is set, else 'scripted' with this node's script."
        ),
    )
    model: str = Field("", title="Model", description="The model to call, e.g. gpt-4o-mini.")
    fallback_models: list[str] = Field(
        default_factory=list,
        title="Fallback models",
        description="Tried in order on the same provider when a model does not exist there.",
    )
    temperature: float | None = Field(None, ge=0, le=2, title="Temperature")
    max_tokens: int | None = Field(None, ge=1, title="Max tokens")
    script: list[Any] | None = Field(
        None,
        title="Script",
        description="Steps the 'scripted' provider replays (see docs/llm.md); ignored by real providers.",
    )

    @field_validator("script")
    @classmethod
    def _script_is_valid(cls, script: list[Any] | None) -> list[Any] | None:
        if script is not None:
            check_script(script)
        return script

    @model_validator(mode="after")
    def _consistent(self) -> ModelSettings:
        # Same rules (and words) as settings.decider (plait.spec.models.DeciderSettings).
        if self.script is not None and self.provider in PRESETS:
            raise ValueError("script is only used with provider 'scripted'; remove it or set provider")
        if not self.model and self.provider in PRESETS:
            raise ValueError(f"provider {self.provider!r} needs a model, e.g. gpt-4o-mini")
        return self

    def models(self) -> list[str]:
        return [m for m in [self.model, *self.fallback_models] if m]


def _is_set(ctx: Any, name: str) -> bool:
    return bool(ctx.secret(name))


def resolve(
    ctx: Any, provider: str | Provider, models: Sequence[str] = (), *, script: Sequence[Any] | None = None
) -> tuple[Provider, list[str]]:
    """The provider a node should call, and its model candidates.

    Resolution order for a name: `scripted` with a `script` builds a fresh `ScriptedProvider`
    (a node's script replays from its first step on each execution); otherwise the run's
    `ctx.services.providers` (what `plait.run(providers=...)` passed) if it knows the name;
    otherwise the default registry with keys from `ctx.secret`. `auto` becomes `openai` when
    `OPENAI_BASE_URL` or `OPENAI_API_KEY` is set (then `OPENAI_MODEL`, if set, is the model), else
    `scripted`. Call it once per node execution and reuse the provider (an agent's loop must, so
    its script advances).
    """
    models = [m for m in models if m]
    if not isinstance(provider, str):
        return provider, models or [SCRIPTED_MODEL]
    name = provider
    if name == AUTO:
        if _is_set(ctx, "OPENAI_BASE_URL") or _is_set(ctx, "OPENAI_API_KEY"):
            name = "openai"
            override = ctx.secret("OPENAI_MODEL")
            if override:
                models = [override]
        else:
            name = "scripted"
    if name == "scripted" and script is not None:
        return ScriptedProvider(script), models or [SCRIPTED_MODEL]
    services = getattr(ctx, "services", None)
    source = getattr(services, "providers", None)
    found = lookup(source, name) if source is not None else None
    if found is None:
        found = ProviderRegistry(ctx.secret).get(name)
    if not models:
        if name != "scripted" and not isinstance(found, ScriptedProvider):
            raise ProviderError(
                f"no model set for provider {name!r}: set `model` (e.g. gpt-4o-mini)", provider=name
            )
        models = [SCRIPTED_MODEL]
    return found, models


async def chat(
    ctx: Any,
    *,
    provider: str | Provider,
    models: Sequence[str],
    request: ChatRequest,
    on_delta: DeltaSink | None = None,
    script: Sequence[Any] | None = None,
) -> ChatResponse:
    """One model call with same-provider fallback.

    `request.model` is replaced by each candidate of `models` in turn; only `ModelNotFoundError`
    moves on to the next one. When every candidate is missing, the `ModelNotFoundError` lists the
    models tried (`.models_tried`). Other provider errors propagate as they are.
    """
    backend, candidates = resolve(ctx, provider, models, script=script)
    return await chat_with(backend, candidates, request, on_delta=on_delta)


async def chat_with(
    provider: Provider, models: Sequence[str], request: ChatRequest, *, on_delta: DeltaSink | None = None
) -> ChatResponse:
    """`chat` for an already resolved provider (agents resolve once and call this in their loop)."""
    tried: list[str] = []
    last: ModelNotFoundError | None = None
    for model in models or [request.model]:
        tried.append(model)
        try:
            return await provider.chat(dataclasses.replace(request, model=model), on_delta=on_delta)
        except ModelNotFoundError as exc:
            last = exc
    assert last is not None
    if len(tried) == 1:
        last.models_tried = tried
        raise last
    raise ModelNotFoundError(
        f"none of the models exist on provider {provider.name!r}: tried {', '.join(tried)} "
        f"(last error: {last.message})",
        provider=provider.name,
        model=tried[-1],
        models_tried=tried,
    ) from last


def as_node_error(exc: ProviderError, *, node: str | None = None) -> Exception:
    """A `NodeError` for a provider failure: the backend's message, a fix, and whether to retry."""
    from plait.nodes.base import NodeError

    prefix = f"{exc.provider}: " if exc.provider and not exc.message.startswith(exc.provider) else ""
    if isinstance(exc, MissingKeyError):
        return NodeError(exc.message, hint=f"set the variable {exc.variable}", retryable=False)
    if isinstance(exc, AuthenticationError):
        return NodeError(prefix + exc.message, hint="check the provider's API key variable", retryable=False)
    if isinstance(exc, ModelNotFoundError):
        tried = exc.models_tried or ([exc.model] if exc.model else [])
        return NodeError(
            prefix + exc.message,
            hint=f"use a model the provider serves (tried: {', '.join(tried) or '-'}), "
            "or add fallback_models",
            retryable=False,
        )
    return NodeError(prefix + exc.message)
