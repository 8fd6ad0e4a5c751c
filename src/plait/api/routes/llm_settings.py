"""`/api/v1/llm`: the model providers the caller can use (the node forms' provider and model
dropdowns, the Models page) and "Test connection" (the models an endpoint reports).

Configuring a provider is writing variables (`/api/v1/variables`: the key as a secret, the base URL
and the default model as plain values), so nothing here stores anything; see
plait.service.model_settings for what counts as configured and which hosts a test may reach.
"""

from __future__ import annotations

import weakref
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from plait.api.deps import ERRORS, READ, WRITE, Caller, Svc, caller
from plait.service import Services
from plait.service.model_settings import ModelSettingsService
from plait.service.runs.secrets import RunSecrets

router = APIRouter(prefix="/api/v1/llm", tags=["models"], dependencies=[Depends(caller)], responses=ERRORS)

_SERVICES: weakref.WeakKeyDictionary[Services, ModelSettingsService] = weakref.WeakKeyDictionary()


def model_settings(svc: Services) -> ModelSettingsService:
    """The server's ModelSettingsService (one per `Services`: its model-list cache is shared)."""
    found = _SERVICES.get(svc)
    if found is None:
        found = _SERVICES[svc] = ModelSettingsService(RunSecrets(svc.store.variables))
    return found


class ProviderOut(BaseModel):
    name: str = Field(..., description="What a node's `provider` names.")
    label: str
    kind: str = Field(..., description="openai (any OpenAI-compatible server), anthropic or scripted.")
    configured: bool = Field(..., description="The caller's or the deployment's variables configure it.")
    models: list[str] = Field(
        ..., description="From the endpoint when it answers, else plait's known models."
    )
    default_model: str | None = None
    models_source: Literal["endpoint", "known"] | None = None
    models_error: str | None = Field(None, description="Why the endpoint's list could not be read.")
    base_url: str | None = None
    default_base_url: str | None = None
    key_set: bool = False
    key_optional: bool = False
    key_variable: str | None = Field(None, description="The variable holding the key (a secret).")
    base_url_variable: str | None = None
    model_variable: str | None = Field(None, description="The variable holding the default model.")


class TestBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = Field(..., description="openai, anthropic, groq or ollama.")
    base_url: str | None = Field(
        None, max_length=2000, description="Test this base URL instead of the stored one."
    )
    api_key: str | None = Field(None, max_length=4000, description="Test this key instead of the stored one.")


class TestOut(BaseModel):
    ok: bool
    provider: str
    base_url: str | None
    models: list[str]
    reason: str | None = Field(
        None, description="unreachable, unauthorized, not_compatible, blocked, invalid or not_configured."
    )
    error: str | None = None
    hint: str | None = None


@router.get("/providers", response_model=list[ProviderOut], dependencies=[READ])
async def list_providers(svc: Svc, who: Caller) -> Any:
    """Every provider a node may name, as the caller's runs would call it, then `scripted`
    ("scripted (no model)"), always there. Keys are never returned, only whether one is set."""
    return await model_settings(svc).providers(who)


@router.post("/test", response_model=TestOut, dependencies=[WRITE])
async def test_connection(svc: Svc, who: Caller, body: TestBody) -> Any:
    """List the models an endpoint reports (`GET {base}/models` through the SSRF guard): with the
    given base URL / key, else the stored ones. A failure is an answer with `ok` false and a
    `reason`, not an HTTP error."""
    return await model_settings(svc).test(who, body.provider, base_url=body.base_url, api_key=body.api_key)
