"""The model part of a flow document: the providers a node may name, the `scripted` step format,
and `ModelSettings`, the fields every model-using node (and `settings.decider`) shares.

These are document vocabulary, checked when a flow is validated, so they live in `spec/`, the
lowest layer: `llm/` builds providers from `PRESETS` and replays scripts normalised by
`normalize_step`, but the document's shape never depends on the provider code.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from plait.errors import PlaitError


@dataclass(frozen=True, slots=True)
class Preset:
    """How to build one named provider: which SDK, which variables hold its key and base URL."""

    kind: str  # "openai" (any OpenAI-compatible server) or "anthropic"
    key_var: str
    base_url_var: str
    default_base_url: str | None = None
    # Local servers (Ollama, llama.cpp, vLLM...) accept any key; the SDK still needs one.
    key_optional: bool = False
    label: str = ""  # what the Models page and the node forms call it
    model_var: str = ""  # the variable holding the user's default model for it (Models page)


PRESETS: dict[str, Preset] = {
    "openai": Preset(
        "openai",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        label="OpenAI-compatible",
        model_var="OPENAI_MODEL",
    ),
    "anthropic": Preset(
        "anthropic",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        label="Anthropic",
        model_var="ANTHROPIC_MODEL",
    ),
    "groq": Preset(
        "openai",
        "GROQ_API_KEY",
        "GROQ_BASE_URL",
        "https://api.groq.com/openai/v1",
        label="Groq",
        model_var="GROQ_MODEL",
    ),
    "ollama": Preset(
        "openai",
        "OLLAMA_API_KEY",
        "OLLAMA_BASE_URL",
        "http://127.0.0.1:11434/v1",
        True,
        label="Ollama",
        model_var="OLLAMA_MODEL",
    ),
}
SCRIPTED = "scripted"
SCRIPTED_LABEL = "scripted (no model)"
AUTO = "auto"
PROVIDER_NAMES = (*PRESETS, SCRIPTED)
# Model-name prefixes people type as a provider (`gpt4`): the provider that serves them.
_MODEL_FAMILIES: tuple[tuple[str, str], ...] = (
    ("gpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("chatgpt", "openai"),
    ("claude", "anthropic"),
    ("llama", "ollama"),
    ("mistral", "ollama"),
    ("qwen", "ollama"),
    ("gemma", "ollama"),
    ("smollm", "openai"),
)


def unknown_provider_message(name: str) -> str:
    """Why `name` is not a provider, with a did-you-mean: a close provider name, or the provider
    of a model family when a model name was typed as the provider (`gpt4` -> openai)."""
    known = (*PROVIDER_NAMES, AUTO)
    lowered = name.strip().lower()
    close = difflib.get_close_matches(lowered, known, n=1, cutoff=0.6)
    family = next((p for prefix, p in _MODEL_FAMILIES if lowered.startswith(prefix)), None)
    if lowered in known:
        hint = f"Did you mean {lowered!r}? Provider names are lower case."
    elif close:
        hint = f"Did you mean {close[0]!r}?"
    elif family:
        hint = f"{name!r} looks like a model: did you mean provider {family!r} with model {name!r}?"
    else:
        hint = "Configure endpoints on the Models page."
    return f"unknown provider {name!r}; known providers: {', '.join(known)}. {hint}"


# The failures a scripted step may raise (plait.llm.scripted maps each to its ProviderError class).
SCRIPT_ERRORS = ("model_not_found", "auth", "rate_limit", "unavailable", "error")
_STEP_KEYS = frozenset(
    {
        "content",
        "json",
        "chunks",
        "tool_calls",
        "error",
        "message",
        "match",
        "model",
        "repeat",
        "usage",
        "finish_reason",
    }
)


class ScriptError(PlaitError, ValueError):
    """A malformed script: says which step and what to change."""

    code = "invalid_script"


def normalize_step(step: Any, index: int) -> dict[str, Any]:
    """One script step as a dict: `json` becomes `content`, `tool_calls` a list of
    `{"id", "name", "arguments"}` dicts (ids filled in). Raises ScriptError when malformed."""
    where = f"script step {index + 1}"
    if isinstance(step, str):
        step = {"content": step}
    if not isinstance(step, Mapping):
        raise ScriptError(f"{where}: expected a string or an object, got {type(step).__name__}")
    unknown = set(step) - _STEP_KEYS
    if unknown:
        raise ScriptError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; use {', '.join(sorted(_STEP_KEYS))}"
        )
    out: dict[str, Any] = dict(step)
    if "error" in out and out["error"] not in SCRIPT_ERRORS:
        raise ScriptError(f"{where}: error must be one of {', '.join(SCRIPT_ERRORS)}, got {out['error']!r}")
    if "content" in out and "json" in out:
        raise ScriptError(f"{where}: give either content or json, not both")
    if "json" in out:
        out["content"] = json.dumps(out.pop("json"), ensure_ascii=False)
    if "chunks" in out:
        chunks = out["chunks"]
        if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            raise ScriptError(f"{where}: chunks must be a list of strings")
        joined = "".join(chunks)
        if out.setdefault("content", joined) != joined:
            raise ScriptError(f"{where}: the chunks must add up to the content")
    if "content" in out and not isinstance(out["content"], str):
        raise ScriptError(f"{where}: content must be a string (use json for structured replies)")
    calls = []
    for n, call in enumerate(out.get("tool_calls") or [], 1):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise ScriptError(
                f"{where}: each tool call needs a name, e.g. {{'name': 'search', 'arguments': {{}}}}"
            )
        args = call.get("arguments", {})
        if isinstance(args, str):
            args = json.loads(args)
        if not isinstance(args, Mapping):
            raise ScriptError(f"{where}: tool call arguments must be an object")
        calls.append(
            {
                "id": str(call.get("id") or f"call_{index + 1}_{n}"),
                "name": call["name"],
                "arguments": dict(args),
            }
        )
    out["tool_calls"] = calls
    if not ("content" in out or calls or "error" in out):
        raise ScriptError(f"{where}: needs content, json, tool_calls or error")
    return out


def check_script(script: Iterable[Any]) -> None:
    """Raise ScriptError for the first malformed step (flow validation uses it)."""
    for i, step in enumerate(script):
        normalize_step(step, i)


class ModelSettings(BaseModel):
    """The model part of a node config (and of `settings.decider`): which provider and models.

    Node configs subclass it so every model-using node is configured the same way.
    """

    model_config = ConfigDict(extra="forbid")

    provider: str = Field(
        "openai",
        title="Provider",
        description=(
            f"One of {', '.join(PROVIDER_NAMES)} ('{SCRIPTED}' replays this node's script, no model), "
            "or 'auto': 'openai' when OPENAI_BASE_URL or OPENAI_API_KEY is set, else the script. "
            "Each run records which provider and model answered."
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

    @field_validator("provider")
    @classmethod
    def _provider_is_known(cls, provider: str) -> str:
        if provider in PROVIDER_NAMES or provider == AUTO:
            return provider
        raise ValueError(unknown_provider_message(provider))

    @field_validator("script")
    @classmethod
    def _script_is_valid(cls, script: list[Any] | None) -> list[Any] | None:
        if script is not None:
            check_script(script)
        return script

    @model_validator(mode="after")
    def _consistent(self) -> ModelSettings:
        # settings.decider (plait.spec.models.DeciderSettings) inherits these rules. A `script`
        # next to a real provider is not an error: it is ignored (the node keeps it, so switching
        # back to `scripted` replays it again), and an empty one (`[]`) is as good as none.
        if not self.model and self.provider in PRESETS:
            raise ValueError(f"provider {self.provider!r} needs a model, e.g. gpt-4o-mini")
        return self

    def models(self) -> list[str]:
        return [m for m in [self.model, *self.fallback_models] if m]
