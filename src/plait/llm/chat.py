"""How nodes call models: resolve the provider for a run, then chat with same-provider fallback.

Every model-using node (`llm`, `agent`, `categorize`) and the edge-LLM decider go through
`resolve` and `chat`, so key lookup, the `scripted` provider, the `auto` choice and model fallback
behave the same everywhere. What a node config says about its model (`ModelSettings`) is document
vocabulary (plait.spec.model_settings); how a provider failure becomes a node failure is the node
layer's business (plait.nodes.llm_errors), so this layer never imports `nodes`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from plait.llm.base import ChatRequest, ChatResponse, DeltaSink, ModelNotFoundError, Provider, ProviderError
from plait.llm.registry import ModelEgress, ProviderRegistry, lookup
from plait.llm.scripted import ScriptedProvider

AUTO = "auto"
SCRIPTED_MODEL = "scripted"


def _is_set(ctx: Any, name: str) -> bool:
    return bool(ctx.secret(name))


def resolve(
    ctx: Any, provider: str | Provider, models: Sequence[str] = (), *, script: Sequence[Any] | None = None
) -> tuple[Provider, list[str]]:
    """The provider a node should call, and its model candidates.

    Resolution order for a name: `scripted` with a `script` builds a fresh `ScriptedProvider`
    (a node's script replays from its first step on each execution); otherwise the run's
    `ctx.services.providers` (what `plait.run(providers=...)` passed) if it knows the name;
    otherwise the default registry with keys from `ctx.secret` (guarded by the run's `ModelEgress`
    when `ctx.services.providers` is one: a server run, plait.llm.registry). `auto` becomes `openai` when
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
    found: Provider | None
    if isinstance(source, ModelEgress):  # a server run: its variables' endpoints pass the SSRF guard
        found = source.registry(ctx.secret).get(name)
    else:
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


def answered_by(provider: Provider, response: ChatResponse) -> dict[str, str]:
    """Which provider and model answered a call, as runs record it (`NodeFinished.model`)."""
    return {"provider": provider.name, "model": response.model}


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
            response = await provider.chat(dataclasses.replace(request, model=model), on_delta=on_delta)
        except ModelNotFoundError as exc:
            last = exc
            continue
        # The model that answered: the server's name for it, else the one asked for.
        return response if response.model else dataclasses.replace(response, model=model)
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
