"""Which model the assistant talks to, and how each of its calls reaches it.

The assistant's model is not a node's: nobody wrote it into a flow. It is picked per turn from the
request (`provider`, `model_name`), else from the user's stored choice (`PLAIT_ASSISTANT_PROVIDER`,
`PLAIT_ASSISTANT_MODEL`), else from the providers the user has keys for, in the order of spec B76.
Keys are read by name through a `SecretLookup` (the user's variables over the deployment's, the
environment for operator settings), exactly as a run of that user reads them, so the assistant can
use no key the user's own flows could not.

Everything a person can misconfigure ends in an `AssistantSetupError` (HTTP 400) that names what to
set and where; everything a provider does wrong during the turn is turned into one readable line
by `friendly_error`. Within a turn, `TurnModels` is the `ModelCall` the orchestrator uses: it falls
back to the provider's next model when a model is missing (spec B77, without costing an attempt),
remembers the model that worked, and adds up token usage per phase (spec B84).

The `scripted` provider lets a script drive the whole assistant (tests, demos, users' regression
tests): the script comes from the stored variable `PLAIT_ASSISTANT_SCRIPT` (its JSON text) or from
the operator's environment variable of that name (a file path, or inline JSON). A path is never
taken from a stored variable, so no user can make the server read a file. `ScriptedProviders`
keeps one provider per session, so one script scripts a whole conversation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plait.assistant.ports import Phase, Telemetry
from plait.errors import PlaitError
from plait.llm import (
    AuthenticationError,
    ChatRequest,
    ChatResponse,
    DeltaSink,
    Message,
    MissingKeyError,
    ModelNotFoundError,
    Provider,
    ProviderError,
    ProviderRegistry,
    ProviderUnavailableError,
    RateLimitError,
    ScriptedProvider,
    ScriptError,
    ToolSpec,
    Usage,
)
from plait.llm.registry import ModelEgress
from plait.spec.model_settings import PRESETS

log = logging.getLogger("plait.assistant")

SecretLookup = Callable[[str], str | None]

SCRIPTED = "scripted"
SCRIPT_VARIABLE = "PLAIT_ASSISTANT_SCRIPT"
PROVIDER_VARIABLE = "PLAIT_ASSISTANT_PROVIDER"
MODEL_VARIABLE = "PLAIT_ASSISTANT_MODEL"
OPENAI_MODEL_VARIABLE = "OPENAI_MODEL"
MAX_SCRIPT_BYTES = 1024 * 1024

# The assistant's own model candidates per provider, best first (the fallback order).
ASSISTANT_MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"),
    "anthropic": ("claude-sonnet-4-5", "claude-haiku-4-5"),
    "groq": ("llama-3.3-70b-versatile", "llama-3.1-8b-instant"),
    "ollama": ("llama3.2",),
    SCRIPTED: (SCRIPTED,),
}
# Which configured provider the assistant uses when nobody chose one (spec B76); `scripted` comes
# last, and only when a script is available.
PREFERENCE = ("anthropic", "openai", "groq", "ollama")
KNOWN_PROVIDERS = (*PREFERENCE, SCRIPTED)

DISPLAY_NAMES: dict[str, str] = {
    "gpt-4o-mini": "GPT-4o mini",
    "gpt-4o": "GPT-4o",
    "gpt-4.1-mini": "GPT-4.1 mini",
    "claude-sonnet-4-5": "Claude Sonnet 4.5",
    "claude-haiku-4-5": "Claude Haiku 4.5",
    "llama-3.3-70b-versatile": "Llama 3.3 70B Versatile",
    "llama-3.1-8b-instant": "Llama 3.1 8B Instant",
    "llama3.2": "Llama 3.2",
    SCRIPTED: "Scripted replies",
}

SETTINGS = "Settings → Variables"


# --- errors ---------------------------------------------------------------------------------------


class AssistantSetupError(PlaitError):
    """The assistant cannot pick a model: no provider, an unknown or unconfigured one, a missing key
    or a bad script. The message says what to set and where; the HTTP answer is 400."""

    code = "assistant_setup"
    status: int = 400


class ModelsExhaustedError(ModelNotFoundError):
    """Every candidate model of the provider was missing (spec B78). A `ModelNotFoundError`, as the
    `ModelCall` port promises, whose message names the provider and every model tried."""

    code = "models_exhausted"

    def __init__(self, provider: str, tried: Sequence[str]) -> None:
        tried = list(tried)
        super().__init__(
            models_exhausted_message(provider, tried),
            provider=provider,
            model=tried[-1] if tried else None,
            models_tried=tried,
        )


def models_exhausted_message(provider: str, tried: Sequence[str]) -> str:
    return (
        f"No accessible model on {provider}. Tried: {', '.join(tried)}. Give your {provider} account "
        "access to one of these models, or choose another provider in Settings."
    )


def no_provider_message() -> str:
    return (
        "No model provider is configured for the assistant. Add a key in "
        f"{SETTINGS} (ANTHROPIC_API_KEY, OPENAI_API_KEY or GROQ_API_KEY), point OPENAI_BASE_URL or "
        f"OLLAMA_BASE_URL at your own model server, or set {SCRIPT_VARIABLE} to a script of replies."
    )


def missing_key_message(variable: str, provider: str) -> str:
    text = f"{variable} is required for the assistant with {provider}. Add it in {SETTINGS}"
    preset = PRESETS.get(provider)
    if preset is not None and preset.kind == "openai":
        text += f" (or set {preset.base_url_var} to a local OpenAI-compatible server that needs no key)"
    return text + "."


def unresolved_key_message(variable: str, canonical: str) -> str:
    """Spec B79: a key referenced by name did not resolve; name it, and the standard name."""
    if variable == canonical:
        return f"The variable '{variable}' is not set. Add '{variable}' in {SETTINGS}."
    return (
        f"The variable '{variable}' used as the API key could not be resolved: it is not set. "
        f"Add '{variable}' (or the standard '{canonical}') in {SETTINGS}."
    )


MISSING_PROVIDER_MESSAGE = (
    "The selected model is missing a provider. Choose the model again in the node's Model field "
    "(a provider and a model)."
)


def _how_to_configure(name: str) -> str:
    if name == SCRIPTED:
        return (
            f"Store the script (a JSON list of steps) in the variable {SCRIPT_VARIABLE} in {SETTINGS}, "
            f"or ask the operator to set {SCRIPT_VARIABLE} on the server."
        )
    if name == "ollama":
        return f"Set OLLAMA_BASE_URL (e.g. http://127.0.0.1:11434/v1) in {SETTINGS}."
    preset = PRESETS[name]
    return f"Add {preset.key_var} in {SETTINGS}."


def _not_configured(name: str, available: Sequence[str]) -> AssistantSetupError:
    listed = f"[{', '.join(available)}]" if available else "none"
    return AssistantSetupError(
        f"Provider '{name}' is not configured. Available providers: {listed}. {_how_to_configure(name)}",
        code="provider_not_configured",
    )


def _unknown(name: str) -> AssistantSetupError:
    return AssistantSetupError(
        f"Unknown provider: {name}; use one of {', '.join(KNOWN_PROVIDERS)}.", code="unknown_provider"
    )


# --- providers and the config the panel shows ---------------------------------------------------


@dataclass(slots=True)
class ProviderInfo:
    """One provider as `/config` shows it. `key_variable` is the variable that configures it
    (None for `scripted`); `reason` says what to set when it is not configured."""

    name: str
    configured: bool
    default_model: str
    models: list[dict[str, str]]
    key_variable: str | None
    reason: str | None

    def as_dict(self) -> dict[str, Any]:
        """The B5 entry: `{name, configured, default_model, models: [{name, display_name}]}`."""
        return {
            "name": self.name,
            "configured": self.configured,
            "default_model": self.default_model,
            "models": self.models,
        }


def candidate_models(name: str, secret: SecretLookup) -> list[str]:
    """The provider's model candidates, best first; for openai `OPENAI_MODEL` (a local server's one
    model) goes first when set."""
    models = list(ASSISTANT_MODELS.get(name, ()))
    if name == "openai":
        override = (secret(OPENAI_MODEL_VARIABLE) or "").strip()
        if override:
            models = [override, *(m for m in models if m != override)]
    return models


def is_configured(name: str, secret: SecretLookup, *, scripted_available: bool) -> bool:
    """A key is set, or (OpenAI-compatible providers) a base URL: local servers need no key.
    Ollama only with `OLLAMA_BASE_URL`; `scripted` only with a script."""
    if name == SCRIPTED:
        return scripted_available
    preset = PRESETS.get(name)
    if preset is None:
        return False
    if name == "ollama":
        return bool(secret(preset.base_url_var))
    if secret(preset.key_var):
        return True
    return preset.kind == "openai" and bool(secret(preset.base_url_var))


def provider_infos(secret: SecretLookup, *, scripted_available: bool) -> list[ProviderInfo]:
    """Every provider the assistant can use (in preference order; `scripted` only when a script is
    available), with whether the user has configured it."""
    names = [*PREFERENCE, SCRIPTED] if scripted_available else list(PREFERENCE)
    out = []
    for name in names:
        configured = is_configured(name, secret, scripted_available=scripted_available)
        models = candidate_models(name, secret)
        if name == SCRIPTED:
            key_variable: str | None = None
        elif name == "ollama":
            key_variable = PRESETS[name].base_url_var
        else:
            key_variable = PRESETS[name].key_var
        out.append(
            ProviderInfo(
                name=name,
                configured=configured,
                default_model=models[0],
                models=[{"name": m, "display_name": DISPLAY_NAMES.get(m, m)} for m in models],
                key_variable=key_variable,
                reason=None if configured else _how_to_configure(name),
            )
        )
    return out


def default_choice(secret: SecretLookup, *, scripted_available: bool) -> tuple[str | None, str | None]:
    """The provider and model used when the request names none: the user's stored choice
    (`PLAIT_ASSISTANT_PROVIDER`, `PLAIT_ASSISTANT_MODEL`) when that provider is configured, else the
    first configured provider in preference order and its best model. (None, None) when none is.

    `PLAIT_ASSISTANT_MODEL` applies with the stored provider, or alone when no provider is stored.
    """
    stored_provider = (secret(PROVIDER_VARIABLE) or "").strip().lower()
    stored_model = (secret(MODEL_VARIABLE) or "").strip()
    if stored_provider and is_configured(stored_provider, secret, scripted_available=scripted_available):
        return stored_provider, stored_model or candidate_models(stored_provider, secret)[0]
    order = [*PREFERENCE, SCRIPTED]
    for name in order:
        if is_configured(name, secret, scripted_available=scripted_available):
            if stored_model and not stored_provider:
                return name, stored_model
            return name, candidate_models(name, secret)[0]
    return None, None


def assistant_config(secret: SecretLookup, *, scripted_available: bool) -> dict[str, Any]:
    """The B5 answer of `/config`: `{configured, configured_providers, providers, default_provider,
    default_model}`."""
    infos = provider_infos(secret, scripted_available=scripted_available)
    configured = [info.name for info in infos if info.configured]
    provider, model = default_choice(secret, scripted_available=scripted_available)
    return {
        "configured": bool(configured),
        "configured_providers": configured,
        "providers": [info.as_dict() for info in infos],
        "default_provider": provider,
        "default_model": model,
    }


# --- choosing the turn's model ------------------------------------------------------------------


@dataclass(slots=True)
class ModelChoice:
    """The turn's provider and its model candidates, best first (the first is the one asked for)."""

    provider_name: str
    provider: Provider
    models: list[str]


def choose_model(
    provider: str | None,
    model: str | None,
    secret: SecretLookup,
    *,
    scripted: Provider | None = None,
    egress: ModelEgress | None = None,
) -> ModelChoice:
    """The provider and models of a turn: the request's provider and model first; else the user's
    default (`default_choice`); else the first configured provider in preference order. With a
    model, the candidates are that model then the rest of the provider's list (fallback stays on
    the same provider). `scripted` is the session's scripted provider (None: no script);
    `egress` the SSRF policy of the user's endpoints (None: unguarded, the operator's own use).
    Raises AssistantSetupError (400) naming what to configure."""
    scripted_available = scripted is not None
    model = (model or "").strip() or None
    name = (provider or "").strip().lower() or None
    if name is None:
        name, default_model = default_choice(secret, scripted_available=scripted_available)
        if name is None:
            raise AssistantSetupError(no_provider_message(), code="no_provider")
        model = model or default_model
    elif model is None:
        stored_provider = (secret(PROVIDER_VARIABLE) or "").strip().lower()
        if stored_provider == name:
            model = (secret(MODEL_VARIABLE) or "").strip() or None
    if name not in KNOWN_PROVIDERS:
        raise _unknown(name)
    candidates = candidate_models(name, secret)
    if model:
        candidates = [model, *(m for m in candidates if m != model)]
    if not is_configured(name, secret, scripted_available=scripted_available):
        available = [
            n for n in KNOWN_PROVIDERS if is_configured(n, secret, scripted_available=scripted_available)
        ]
        if name in PRESETS and name != "ollama":
            variable = PRESETS[name].key_var
            raise AssistantSetupError(missing_key_message(variable, name), code="missing_key")
        raise _not_configured(name, available)
    if name == SCRIPTED:
        assert scripted is not None  # is_configured said so
        return ModelChoice(SCRIPTED, scripted, candidates)
    try:
        backend = (egress.registry(secret) if egress is not None else ProviderRegistry(secret)).get(name)
    except MissingKeyError as exc:
        raise AssistantSetupError(missing_key_message(exc.variable, name), code="missing_key") from exc
    return ModelChoice(name, backend, candidates)


# --- the scripted provider ----------------------------------------------------------------------


def _script_error(source: str, problem: str) -> AssistantSetupError:
    return AssistantSetupError(f"{SCRIPT_VARIABLE} ({source}): {problem}", code="invalid_script")


def _parse_script(text: str, source: str) -> list[Any]:
    try:
        script = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _script_error(
            source, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); fix the JSON"
        ) from exc
    if not isinstance(script, list):
        raise _script_error(source, f"the script must be a JSON list of steps, got {type(script).__name__}")
    try:
        ScriptedProvider(script)
    except ScriptError as exc:
        raise _script_error(source, f"{exc.message}; fix that step (see docs/llm.md)") from exc
    except (ValueError, TypeError) as exc:  # e.g. tool call arguments given as a string that is not JSON
        raise _script_error(source, f"a step is malformed ({exc}); fix it (see docs/llm.md)") from exc
    return script


def load_script(secret: SecretLookup) -> list[Any] | None:
    """The assistant's script, or None when there is none.

    The stored variable `PLAIT_ASSISTANT_SCRIPT` (read through `secret`) holds the script's JSON
    itself. Otherwise the server's environment variable of that name (an operator setting) holds a
    path to a JSON file (at most 1 MiB), or the JSON itself when it starts with `[`. A bad script
    raises AssistantSetupError naming the variable, the step and the fix."""
    stored = (secret(SCRIPT_VARIABLE) or "").strip()
    if stored:
        if not stored.startswith("["):
            raise _script_error(
                "stored variable",
                "the stored variable must hold the script itself, a JSON list of steps such as "
                '[{"content": "Hello"}]; file paths are read only from the server\'s environment',
            )
        return _parse_script(stored, "stored variable")
    value = os.environ.get(SCRIPT_VARIABLE, "").strip()
    if not value:
        return None
    if value.startswith("["):
        return _parse_script(value, "environment")
    path = Path(value).expanduser()
    try:
        size = path.stat().st_size
        if size > MAX_SCRIPT_BYTES:
            raise _script_error(
                str(path), f"the file is {size} bytes, over the {MAX_SCRIPT_BYTES} byte limit; shorten it"
            )
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _script_error(
            str(path), f"cannot read the file ({exc.strerror or exc}); set it to an existing JSON file"
        ) from exc
    except UnicodeDecodeError as exc:
        raise _script_error(str(path), "the file is not UTF-8 text; save it as UTF-8 JSON") from exc
    return _parse_script(text, str(path))


def script_digest(script: Sequence[Any]) -> str:
    return hashlib.sha256(json.dumps(script, sort_keys=True, default=str).encode()).hexdigest()


class ScriptedProviders:
    """One `ScriptedProvider` per (user, session, script), least recently used dropped first: the
    turns of a session share it, so its steps are consumed in order across the conversation.
    Changing the script starts a new provider; `drop` (session reset) makes the next turn replay
    from the first step."""

    def __init__(self, max_sessions: int = 100) -> None:
        self.max_sessions = max_sessions
        self._providers: OrderedDict[tuple[str | None, str, str], ScriptedProvider] = OrderedDict()

    def __len__(self) -> int:
        return len(self._providers)

    def get(self, user_id: str | None, session_id: str, script: Sequence[Any]) -> ScriptedProvider:
        key = (user_id, session_id, script_digest(script))
        provider = self._providers.get(key)
        if provider is None:
            provider = self._providers[key] = ScriptedProvider(script, name=SCRIPTED)
            while len(self._providers) > self.max_sessions:
                self._providers.popitem(last=False)
        else:
            self._providers.move_to_end(key)
        return provider

    def drop(self, user_id: str | None, session_id: str) -> None:
        for key in [k for k in self._providers if k[0] == user_id and k[1] == session_id]:
            del self._providers[key]


# --- the turn's model calls ---------------------------------------------------------------------

# What providers say when a model is missing or not allowed (spec B77), whatever error class the
# SDK mapping chose (OpenAI answers a project without access with 403, an authentication error).
MODEL_MISSING_MARKERS = (
    "model_not_found",
    "does not have access to model",
    "model is not available",
    "the model does not exist",
    "model not available",
    "no access to model",
)


def is_model_missing(exc: BaseException) -> bool:
    """True when the error means "this model is not there for you" (fall back to the next one);
    rate limits, network errors and missing keys never are."""
    if isinstance(exc, ModelNotFoundError):
        return True
    if not isinstance(exc, ProviderError) or isinstance(
        exc, (RateLimitError, ProviderUnavailableError, MissingKeyError)
    ):
        return False
    text = exc.message.lower()
    return any(marker in text for marker in MODEL_MISSING_MARKERS)


class TurnModels:
    """The `ModelCall` of one turn: calls the chosen provider, falls back to its next model when a
    model is missing (spec B77; the model that worked is used for the rest of the turn), and adds
    up usage, in total and per phase (spec B84)."""

    def __init__(
        self, choice: ModelChoice, telemetry: Telemetry, user_id: str | None, session_id: str
    ) -> None:
        if not choice.models:
            raise ValueError("a ModelChoice needs at least one model")
        self.choice = choice
        self.telemetry = telemetry
        self.user_id = user_id
        self.session_id = session_id
        self.usage = Usage()
        self.by_phase: dict[str, Usage] = {}
        self.calls = 0
        self.model_used: str | None = None
        self.missing: list[str] = []  # models found missing during this turn, in order
        self._model = choice.models[0]

    @property
    def provider_name(self) -> str:
        return self.choice.provider_name

    @property
    def model(self) -> str:
        """The model the next call starts with."""
        return self._model

    def _next_model(self, tried: list[str]) -> str | None:
        for candidate in self.choice.models:
            if candidate not in tried:
                return candidate
        return None

    async def __call__(
        self,
        messages: list[Message],
        *,
        phase: Phase,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_delta: DeltaSink | None = None,
        tools: list[ToolSpec] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResponse:
        provider = self.choice.provider
        name = self.choice.provider_name
        model = self._model
        while True:
            request = ChatRequest(
                model=model,
                messages=messages,
                tools=tools or [],
                tool_choice=tool_choice,
                response_format=response_format,
                temperature=temperature,
                max_tokens=max_tokens,
            )
            try:
                response = await provider.chat(request, on_delta=on_delta)
            except ProviderError as exc:
                if not is_model_missing(exc):
                    raise
                if model not in self.missing:
                    self.missing.append(model)
                following = self._next_model(self.missing)
                if following is None:
                    raise ModelsExhaustedError(name, self.missing) from exc
                log.info(
                    "assistant.model_fallback from=%s to=%s provider=%s tried_so_far=[%s]",
                    model,
                    following,
                    name,
                    ", ".join(self.missing),
                )
                model = self._model = following
                continue
            break
        self._account(phase, response.usage)
        self.model_used = model
        return response

    def _account(self, phase: Phase, usage: Usage) -> None:
        self.calls += 1
        self.usage = self.usage + usage
        before = self.by_phase.get(phase)
        self.by_phase[phase] = usage if before is None else before + usage
        log.info(
            "assistant.tokens.phase phase=%s user_id=%s session_id=%s input=%d output=%d total=%d",
            phase,
            self.user_id,
            self.session_id,
            usage.input_tokens,
            usage.output_tokens,
            usage.total_tokens,
        )
        self.telemetry.tokens(phase, self.choice.provider_name, usage.input_tokens, usage.output_tokens)


# --- what people read when it fails ---------------------------------------------------------------

_PROVIDER_MESSAGE_RE = re.compile(
    r"""['"]message['"]\s*:\s*(?P<q>['"])(?P<text>(?:\\.|(?!(?P=q)).)*)(?P=q)"""
)
_WRAPPER_RE = re.compile(
    r"^\s*Error (?:building|running|executing|while|in|calling)\b[^:\n]*:\s*(?P<cause>.+)$", re.DOTALL
)
_TRACEBACK_MARKERS = ("Traceback (most recent call last)", "\n\n  File ", '\n  File "')
MIN_MEANINGFUL_PART_LENGTH = 10
MAX_FRIENDLY_LENGTH = 500


def _clip(text: str) -> str:
    for marker in _TRACEBACK_MARKERS:
        cut = text.find(marker)
        if cut >= 0:
            text = text[:cut]
    text = text.strip()
    if len(text) > MAX_FRIENDLY_LENGTH:
        text = text[: MAX_FRIENDLY_LENGTH - 3].rstrip() + "..."
    return text


def _chain(exc: BaseException) -> list[BaseException]:
    out = [exc]
    seen = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        out.append(cause)
        cause = cause.__cause__ or cause.__context__
    return out


def _text(exc: BaseException) -> str:
    return exc.message if isinstance(exc, PlaitError) else str(exc)


def deepest_cause(exc: BaseException) -> str:
    """Spec B81: a provider's `'message': '...'` anywhere in the chain (deepest first); else the
    cause inside a wrapper such as "Error building Component Agent: <cause>" when it is long enough
    to mean something (never the wrapper alone); else the error's own text."""
    chain = _chain(exc)
    for item in reversed(chain):
        match = _PROVIDER_MESSAGE_RE.search(_text(item))
        if match and match.group("text").strip():
            return match.group("text").replace("\\'", "'").replace('\\"', '"').strip()
    text = _text(exc).strip()
    while (match := _WRAPPER_RE.match(text)) is not None:
        cause = match.group("cause").strip()
        if len(cause) <= MIN_MEANINGFUL_PART_LENGTH:
            break
        text = cause
    else:
        return text or type(exc).__name__
    # A wrapper around a cause too short to stand alone: a deeper exception may say more.
    for item in chain[1:]:
        inner = _text(item).strip()
        if len(inner) > MIN_MEANINGFUL_PART_LENGTH:
            return inner
    return text


def friendly_error(exc: BaseException) -> str:
    """One line a person can act on for any failure of a turn (spec B8, B79, B81); never a
    traceback, at most about 500 characters."""
    provider = getattr(exc, "provider", "") or "the provider"
    preset = PRESETS.get(provider)
    if isinstance(exc, AssistantSetupError | ModelsExhaustedError):
        return _clip(exc.message)
    if isinstance(exc, MissingKeyError):
        return _clip(missing_key_message(exc.variable, provider))
    if isinstance(exc, AuthenticationError):
        where = f"Check {preset.key_var} in {SETTINGS}" if preset else f"Check its API key in {SETTINGS}"
        return _clip(
            f"The API key for {provider} was refused. {where} (is it current, and allowed to use this model?)."
        )
    if isinstance(exc, RateLimitError):
        return f"Rate limit reached at {provider}. Wait a moment and try again."
    if isinstance(exc, ProviderUnavailableError):
        detail = deepest_cause(exc)
        where = f" If you use your own server, check {preset.base_url_var} in {SETTINGS}." if preset else ""
        return _clip(f"Could not reach {provider} ({detail}). Check the network and try again.{where}")
    return _clip(deepest_cause(exc))


__all__ = [
    "ASSISTANT_MODELS",
    "MISSING_PROVIDER_MESSAGE",
    "MODEL_MISSING_MARKERS",
    "PREFERENCE",
    "SCRIPT_VARIABLE",
    "AssistantSetupError",
    "ModelChoice",
    "ModelsExhaustedError",
    "ProviderInfo",
    "ScriptedProviders",
    "SecretLookup",
    "TurnModels",
    "assistant_config",
    "candidate_models",
    "choose_model",
    "deepest_cause",
    "default_choice",
    "friendly_error",
    "is_configured",
    "is_model_missing",
    "load_script",
    "missing_key_message",
    "models_exhausted_message",
    "no_provider_message",
    "provider_infos",
    "unresolved_key_message",
]
