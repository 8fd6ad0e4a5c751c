"""How the assistant picks and calls its model: choice, /config, fallback, errors, scripts, usage."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from plait.assistant.models import (
    ASSISTANT_MODELS,
    PREFERENCE,
    AssistantSetupError,
    ModelChoice,
    ModelsExhaustedError,
    ScriptedProviders,
    SecretLookup,
    TurnModels,
    assistant_config,
    choose_model,
    friendly_error,
    load_script,
    models_exhausted_message,
    provider_infos,
    unresolved_key_message,
)
from plait.assistant.ports import NoTelemetry, Phase
from plait.engine.context import lookup_secret
from plait.llm import (
    AuthenticationError,
    ChatRequest,
    Message,
    MissingKeyError,
    ModelNotFoundError,
    ProviderError,
    ProviderUnavailableError,
    RateLimitError,
    ScriptedProvider,
)
from plait.llm.registry import ModelEgress
from plait.llm.sdk_common import BlockedEndpointError

ENV_KEYS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GROQ_API_KEY",
    "GROQ_BASE_URL",
    "OLLAMA_API_KEY",
    "OLLAMA_BASE_URL",
    "PLAIT_ASSISTANT_SCRIPT",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_KEYS:
        monkeypatch.delenv(name, raising=False)


def secrets(**values: str) -> SecretLookup:
    """A lookup as the service builds it: the user's variables, the environment for operator settings."""
    stored: Mapping[str, Any] = dict(values)
    return lambda name: lookup_secret(stored, name)


def hello() -> list[Message]:
    return [Message("user", "hello there")]


class Tokens(NoTelemetry):
    def __init__(self) -> None:
        self.seen: list[tuple[Phase, str, int, int]] = []

    def tokens(self, phase: Phase, provider: str, input_tokens: int, output_tokens: int) -> None:
        self.seen.append((phase, provider, input_tokens, output_tokens))


def turn(provider: Any, models: list[str], name: str = "openai") -> TurnModels:
    return TurnModels(ModelChoice(name, provider, models), NoTelemetry(), "u1", "s1")


# --- choose_model ---------------------------------------------------------------------------------


def test_the_requested_provider_and_model_are_used_and_the_model_goes_first() -> None:  # A-S4
    choice = choose_model("openai", "gpt-4o", secrets(OPENAI_API_KEY="sk-test"))
    assert choice.provider_name == "openai"
    assert choice.provider.name == "openai"
    assert choice.models == ["gpt-4o", "gpt-4o-mini", "gpt-4.1-mini"]


def test_the_requested_provider_without_a_model_uses_its_list() -> None:
    choice = choose_model("anthropic", None, secrets(ANTHROPIC_API_KEY="k", OPENAI_API_KEY="k"))
    assert choice.provider_name == "anthropic"
    assert choice.models == list(ASSISTANT_MODELS["anthropic"])


def test_the_users_stored_default_is_used_when_the_request_names_none() -> None:
    secret = secrets(
        ANTHROPIC_API_KEY="k",
        OPENAI_API_KEY="k",
        PLAIT_ASSISTANT_PROVIDER="openai",
        PLAIT_ASSISTANT_MODEL="gpt-4.1-mini",
    )
    choice = choose_model(None, None, secret)
    assert choice.provider_name == "openai"
    assert choice.models == ["gpt-4.1-mini", "gpt-4o-mini", "gpt-4o"]
    # the same provider named by the request keeps the stored model
    assert choose_model("openai", None, secret).models[0] == "gpt-4.1-mini"
    # a request model wins over the stored one
    assert choose_model(None, "gpt-4o", secret).models[0] == "gpt-4o"


def test_a_stored_default_that_is_not_configured_falls_back_to_the_preference_order() -> None:
    choice = choose_model(None, None, secrets(OPENAI_API_KEY="k", PLAIT_ASSISTANT_PROVIDER="anthropic"))
    assert choice.provider_name == "openai"


def test_preference_order_is_anthropic_then_openai() -> None:
    assert PREFERENCE[:2] == ("anthropic", "openai")
    choice = choose_model(None, None, secrets(OPENAI_API_KEY="k", ANTHROPIC_API_KEY="k", GROQ_API_KEY="k"))
    assert choice.provider_name == "anthropic"
    assert choice.models[0] == "claude-sonnet-4-5"
    assert choose_model(None, None, secrets(GROQ_API_KEY="k", OPENAI_API_KEY="k")).provider_name == "openai"


def test_only_anthropic_configured(monkeypatch: pytest.MonkeyPatch) -> None:  # A-S22 analogue
    secret = secrets(ANTHROPIC_API_KEY="k")
    infos = provider_infos(secret, scripted_available=False)
    assert [i.name for i in infos if i.configured] == ["anthropic"]
    assert choose_model(None, None, secret).provider_name == "anthropic"
    # the operator's environment counts too (operator settings)
    monkeypatch.setenv("GROQ_API_KEY", "env-key")
    assert [i.name for i in provider_infos(secret, scripted_available=False) if i.configured] == [
        "anthropic",
        "groq",
    ]


def test_a_local_openai_compatible_server_needs_no_key_and_its_model_goes_first() -> None:
    secret = secrets(OPENAI_BASE_URL="http://127.0.0.1:8080/v1", OPENAI_MODEL="qwen2.5")
    choice = choose_model(None, None, secret)
    assert choice.provider_name == "openai"
    assert choice.models == ["qwen2.5", "gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"]


def test_ollama_is_configured_only_with_its_base_url() -> None:
    assert not any(i.configured for i in provider_infos(secrets(), scripted_available=False))
    infos = provider_infos(secrets(OLLAMA_BASE_URL="http://ollama:11434/v1"), scripted_available=False)
    assert [i.name for i in infos if i.configured] == ["ollama"]


def test_unknown_provider() -> None:
    with pytest.raises(AssistantSetupError) as info:
        choose_model("watsonx", None, secrets(OPENAI_API_KEY="k"))
    assert info.value.status == 400
    assert info.value.message.startswith("Unknown provider: watsonx; use one of anthropic, openai")


def test_provider_not_configured_lists_the_available_ones() -> None:
    with pytest.raises(AssistantSetupError) as info:
        choose_model("ollama", None, secrets(OPENAI_API_KEY="k", ANTHROPIC_API_KEY="k"))
    message = info.value.message
    assert message.startswith(
        "Provider 'ollama' is not configured. Available providers: [anthropic, openai]."
    )
    assert "OLLAMA_BASE_URL" in message


def test_missing_key_names_the_variable_and_where_to_set_it() -> None:
    with pytest.raises(AssistantSetupError) as info:
        choose_model("anthropic", None, secrets(OPENAI_API_KEY="k"))
    assert info.value.code == "missing_key"
    assert "ANTHROPIC_API_KEY is required for the assistant with anthropic" in info.value.message
    assert "Settings → Variables" in info.value.message


def test_no_provider_at_all() -> None:
    with pytest.raises(AssistantSetupError) as info:
        choose_model(None, None, secrets())
    message = info.value.message
    assert message.startswith("No model provider is configured for the assistant.")
    assert "OPENAI_API_KEY" in message and "PLAIT_ASSISTANT_SCRIPT" in message
    assert "Settings → Variables" in message


def test_scripted_without_a_script_says_how_to_configure_it() -> None:
    with pytest.raises(AssistantSetupError) as info:
        choose_model("scripted", None, secrets(OPENAI_API_KEY="k"))
    assert "Provider 'scripted' is not configured" in info.value.message
    assert "PLAIT_ASSISTANT_SCRIPT" in info.value.message


def test_scripted_with_a_script() -> None:
    provider = ScriptedProvider(["hi"])
    choice = choose_model("scripted", None, secrets(), scripted=provider)
    assert choice.provider is provider and choice.models == ["scripted"]
    # with nothing else configured, a script is the default
    assert choose_model(None, None, secrets(), scripted=provider).provider is provider
    # a real provider is preferred when there is one
    assert choose_model(None, None, secrets(GROQ_API_KEY="k"), scripted=provider).provider_name == "groq"


# --- assistant_config (B5) ---------------------------------------------------------------------------


def test_assistant_config_has_the_b5_shape() -> None:  # A-T2
    config = assistant_config(secrets(OPENAI_API_KEY="k"), scripted_available=False)
    assert set(config) == {
        "configured",
        "configured_providers",
        "providers",
        "default_provider",
        "default_model",
    }
    assert config["configured"] is True
    assert config["configured_providers"] == ["openai"]
    assert config["default_provider"] == "openai"
    assert config["default_model"] == "gpt-4o-mini"
    names = [p["name"] for p in config["providers"]]
    assert names == ["anthropic", "openai", "groq", "ollama"]
    openai = config["providers"][1]
    assert set(openai) == {"name", "configured", "default_model", "models"}
    assert openai["configured"] is True and openai["default_model"] == "gpt-4o-mini"
    assert openai["models"][0] == {"name": "gpt-4o-mini", "display_name": "GPT-4o mini"}
    assert all(set(m) == {"name", "display_name"} for p in config["providers"] for m in p["models"])
    json.dumps(config)


def test_assistant_config_with_nothing_configured_and_with_a_script() -> None:
    config = assistant_config(secrets(), scripted_available=False)
    assert config["configured"] is False and config["configured_providers"] == []
    assert config["default_provider"] is None and config["default_model"] is None
    config = assistant_config(secrets(), scripted_available=True)
    assert config["configured_providers"] == ["scripted"]
    assert config["default_provider"] == "scripted" and config["default_model"] == "scripted"
    assert config["providers"][-1]["name"] == "scripted"


def test_assistant_config_honours_the_stored_choice() -> None:
    secret = secrets(
        ANTHROPIC_API_KEY="k", GROQ_API_KEY="k", PLAIT_ASSISTANT_PROVIDER="groq", PLAIT_ASSISTANT_MODEL="x-1"
    )
    config = assistant_config(secret, scripted_available=False)
    assert (config["default_provider"], config["default_model"]) == ("groq", "x-1")
    infos = {i.name: i for i in provider_infos(secret, scripted_available=False)}
    assert infos["openai"].reason is not None and "OPENAI_API_KEY" in infos["openai"].reason
    assert infos["groq"].reason is None and infos["groq"].key_variable == "GROQ_API_KEY"


# --- fallback ----------------------------------------------------------------------------------------


async def test_model_not_found_falls_back_in_the_same_call_and_sticks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A-S29 / A-T36
    provider = ScriptedProvider(
        [
            {"error": "model_not_found", "model": "gpt-4o-mini"},
            {"content": "from gpt-4o", "model": "gpt-4o"},
            {"content": "again from gpt-4o", "model": "gpt-4o"},
        ],
        name="openai",
    )
    models = turn(provider, ["gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"])
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        first = await models(hello(), phase="intent")
    assert first.content == "from gpt-4o"
    assert models.model_used == "gpt-4o" and models.model == "gpt-4o"
    assert (
        "assistant.model_fallback from=gpt-4o-mini to=gpt-4o provider=openai tried_so_far=[gpt-4o-mini]"
        in (caplog.text)
    )
    second = await models(hello(), phase="main")
    assert second.content == "again from gpt-4o"
    assert [r.model for r in provider.requests] == ["gpt-4o-mini", "gpt-4o", "gpt-4o"]
    assert models.calls == 2  # the failed call is not counted


async def test_a_plain_provider_error_about_model_access_falls_back_too() -> None:
    provider = ScriptedProvider(
        [
            {"error": "error", "message": "Project proj_1 does not have access to model gpt-4o-mini"},
            {"error": "auth", "message": "Error code: 403 - model_not_found: no access"},
            {"content": "ok", "model": "gpt-4.1-mini"},
        ],
        name="openai",
    )
    models = turn(provider, ["gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"])
    assert (await models(hello(), phase="main")).content == "ok"
    assert models.model_used == "gpt-4.1-mini"


async def test_every_model_missing_gives_the_named_message() -> None:  # A-S30 / A-T37
    provider = ScriptedProvider([{"error": "model_not_found", "repeat": True}], name="openai")
    models = turn(provider, ["gpt-4o", "gpt-4o-mini"])
    with pytest.raises(ModelsExhaustedError) as info:
        await models(hello(), phase="main")
    message = str(info.value)
    assert message == models_exhausted_message("openai", ["gpt-4o", "gpt-4o-mini"])
    assert message.startswith("No accessible model on openai. Tried: gpt-4o, gpt-4o-mini.")
    assert isinstance(info.value, ModelNotFoundError) and info.value.models_tried == ["gpt-4o", "gpt-4o-mini"]
    assert friendly_error(info.value) == message
    assert "Error building" not in friendly_error(info.value)
    assert models.calls == 0


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("auth", AuthenticationError),
        ("rate_limit", RateLimitError),
        ("unavailable", ProviderUnavailableError),
    ],
)
async def test_auth_rate_limit_and_network_errors_do_not_fall_back(kind: str, error: type[Exception]) -> None:
    # A-S31
    provider = ScriptedProvider([{"error": kind}, {"content": "never"}], name="openai")
    models = turn(provider, ["gpt-4o-mini", "gpt-4o"])
    with pytest.raises(error):
        await models(hello(), phase="main")
    assert [r.model for r in provider.requests] == ["gpt-4o-mini"]
    assert models.model == "gpt-4o-mini"


# --- usage -------------------------------------------------------------------------------------------


async def test_usage_is_summed_in_total_and_by_phase(caplog: pytest.LogCaptureFixture) -> None:
    provider = ScriptedProvider(
        [
            {"content": "a", "usage": {"input_tokens": 10, "output_tokens": 1}},
            {"content": "b", "usage": {"input_tokens": 20, "output_tokens": 5}},
            {"content": "c", "usage": {"input_tokens": 30, "output_tokens": 7}},
        ]
    )
    telemetry = Tokens()
    models = TurnModels(ModelChoice("scripted", provider, ["scripted"]), telemetry, "u1", "s1")
    with caplog.at_level(logging.INFO, logger="plait.assistant"):
        await models(hello(), phase="intent")
        await models(hello(), phase="main")
        await models(hello(), phase="main")
    assert models.usage.as_dict() == {"input_tokens": 60, "output_tokens": 13, "total_tokens": 73}
    assert models.by_phase["intent"].as_dict() == {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11}
    assert models.by_phase["main"].as_dict() == {"input_tokens": 50, "output_tokens": 12, "total_tokens": 62}
    assert models.calls == 3
    assert telemetry.seen == [
        ("intent", "scripted", 10, 1),
        ("main", "scripted", 20, 5),
        ("main", "scripted", 30, 7),
    ]
    assert (
        "assistant.tokens.phase phase=intent user_id=u1 session_id=s1 input=10 output=1 total=11"
        in caplog.text
    )
    assert (
        "assistant.tokens.phase phase=main user_id=u1 session_id=s1 input=30 output=7 total=37" in caplog.text
    )


async def test_request_fields_and_deltas_reach_the_provider() -> None:
    provider = ScriptedProvider([{"content": "one two three"}])
    models = turn(provider, ["scripted"], name="scripted")
    deltas: list[str] = []
    response = await models(hello(), phase="main", max_tokens=50, temperature=0.2, on_delta=deltas.append)
    assert "".join(deltas) == response.content == "one two three"
    request = provider.requests[0]
    assert (request.max_tokens, request.temperature, request.model) == (50, 0.2, "scripted")


# --- friendly_error ------------------------------------------------------------------------------------


def test_friendly_error_extracts_the_cause_of_a_wrapper() -> None:  # A-S38 / A-T43
    text = friendly_error(
        RuntimeError("Error building Component Agent: Incorrect API key provided: sk-...abcd")
    )
    assert text == "Incorrect API key provided: sk-...abcd"
    # the wrapper is never returned alone
    short = friendly_error(RuntimeError("Error building Component Agent: boom"))
    assert short == "Error building Component Agent: boom"
    # an unwrapped error comes out unchanged
    assert friendly_error(ValueError("the flow has no start node")) == "the flow has no start node"


def test_friendly_error_extracts_a_provider_message_repr() -> None:
    exc = RuntimeError(
        "Error code: 400 - {'error': {'message': 'Invalid model', 'type': 'invalid_request_error'}}"
    )
    assert friendly_error(exc) == "Invalid model"
    wrapped = RuntimeError("Error building Component Agent: something failed")
    wrapped.__cause__ = ProviderError("""{"error": {"message": "Context length exceeded", "code": 400}}""")
    assert friendly_error(wrapped) == "Context length exceeded"


def test_friendly_error_for_provider_failures() -> None:
    auth = friendly_error(AuthenticationError("Incorrect API key provided", provider="openai"))
    assert "The API key for openai was refused" in auth and "OPENAI_API_KEY" in auth
    assert "Settings → Variables" in auth  # A-S14
    assert friendly_error(RateLimitError("429", provider="groq")) == (
        "Rate limit reached at groq. Wait a moment and try again."
    )
    down = friendly_error(ProviderUnavailableError("Connection error.", provider="ollama"))
    assert "Could not reach ollama" in down and "OLLAMA_BASE_URL" in down
    missing = friendly_error(MissingKeyError("GROQ_API_KEY", provider="groq"))
    assert (
        "GROQ_API_KEY is required for the assistant with groq" in missing
        and "Settings → Variables" in missing
    )


def test_friendly_error_is_short_and_has_no_traceback() -> None:
    text = friendly_error(RuntimeError("x" * 2000))
    assert len(text) <= 500 and text.endswith("...")
    tb = 'bad thing happened\nTraceback (most recent call last):\n  File "a.py", line 1\nValueError'
    assert friendly_error(RuntimeError(tb)) == "bad thing happened"
    assert friendly_error(RuntimeError()) == "RuntimeError"


def test_unresolved_key_message_names_both() -> None:  # A-S37 / A-T44
    text = unresolved_key_message("MY_OPENAI_KEY", "OPENAI_API_KEY")
    assert "'MY_OPENAI_KEY'" in text and "'OPENAI_API_KEY'" in text and "Settings → Variables" in text


# --- scripts -------------------------------------------------------------------------------------------


def test_load_script_from_a_stored_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stored = json.dumps([{"content": "hi"}, "there"])
    monkeypatch.setenv("PLAIT_ASSISTANT_SCRIPT", '["env"]')
    assert load_script(secrets(PLAIT_ASSISTANT_SCRIPT=stored)) == [{"content": "hi"}, "there"]
    assert load_script(secrets()) == ["env"]
    monkeypatch.delenv("PLAIT_ASSISTANT_SCRIPT")
    assert load_script(secrets()) is None


def test_a_stored_variable_is_never_read_as_a_path(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('["secret file"]', encoding="utf-8")
    with pytest.raises(AssistantSetupError) as info:
        load_script(secrets(PLAIT_ASSISTANT_SCRIPT=str(path)))
    assert "PLAIT_ASSISTANT_SCRIPT" in info.value.message and "JSON list of steps" in info.value.message


def test_load_script_from_an_environment_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"json": {"intent": "question"}}, "Paris."]), encoding="utf-8")
    monkeypatch.setenv("PLAIT_ASSISTANT_SCRIPT", str(path))
    assert load_script(secrets()) == [{"json": {"intent": "question"}}, "Paris."]
    monkeypatch.setenv("PLAIT_ASSISTANT_SCRIPT", str(tmp_path / "missing.json"))
    with pytest.raises(AssistantSetupError, match="PLAIT_ASSISTANT_SCRIPT .*missing.json.*cannot read"):
        load_script(secrets())
    big = tmp_path / "big.json"
    big.write_text("[" + " " * (1024 * 1024) + "]", encoding="utf-8")
    monkeypatch.setenv("PLAIT_ASSISTANT_SCRIPT", str(big))
    with pytest.raises(AssistantSetupError, match="byte limit"):
        load_script(secrets())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"content": ', "not valid JSON"),
        ('[{"contnet": "x"}]', "script step 1: unknown key"),
        ('["ok", {"error": "boom"}]', "script step 2: error must be one of"),
        ('[{"tool_calls": [{"name": "t", "arguments": "{not json"}]}]', "malformed"),
    ],
)
def test_a_bad_script_names_the_variable_and_the_step(text: str, expected: str) -> None:
    with pytest.raises(AssistantSetupError) as info:
        load_script(secrets(PLAIT_ASSISTANT_SCRIPT=text))
    assert info.value.message.startswith("PLAIT_ASSISTANT_SCRIPT (stored variable): ")
    assert expected in info.value.message
    assert info.value.status == 400


def test_a_script_that_is_not_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_ASSISTANT_SCRIPT", "[1, 2")
    with pytest.raises(AssistantSetupError, match=r"PLAIT_ASSISTANT_SCRIPT \(environment\): not valid JSON"):
        load_script(secrets())
    with pytest.raises(AssistantSetupError, match="must hold the script itself"):
        load_script(secrets(PLAIT_ASSISTANT_SCRIPT='{"content": "x"}'))


async def test_scripted_providers_keep_steps_across_the_turns_of_a_session() -> None:
    script = ["first", "second", "third"]
    providers = ScriptedProviders(max_sessions=2)
    turn_one = TurnModels(
        ModelChoice("scripted", providers.get("u1", "s1", script), ["scripted"]), NoTelemetry(), "u1", "s1"
    )
    assert (await turn_one(hello(), phase="main")).content == "first"
    turn_two = TurnModels(
        ModelChoice("scripted", providers.get("u1", "s1", script), ["scripted"]), NoTelemetry(), "u1", "s1"
    )
    assert (await turn_two(hello(), phase="main")).content == "second"
    # another session, and another user's session of the same id, start from the first step
    assert providers.get("u1", "s2", script).remaining == 3
    other = providers.get("u2", "s1", script)
    assert other is not providers.get("u1", "s1", script)
    assert other.remaining == 3
    # a reset replays from the first step
    providers.drop("u1", "s1")
    fresh = providers.get("u1", "s1", script)
    assert fresh.remaining == 3
    # a changed script starts over too
    assert providers.get("u1", "s1", ["new"]).remaining == 1


def test_scripted_providers_are_bounded() -> None:
    providers = ScriptedProviders(max_sessions=2)
    a = providers.get("u", "a", ["x"])
    providers.get("u", "b", ["x"])
    providers.get("u", "a", ["x"])  # a is now the most recent
    providers.get("u", "c", ["x"])  # b goes
    assert len(providers) == 2
    assert providers.get("u", "a", ["x"]) is a


async def test_a_users_endpoint_goes_through_the_ssrf_guard_unless_the_user_is_an_admin() -> None:
    """The assistant calls a user's OPENAI_BASE_URL with the same policy as their runs' model
    calls: loopback (and link-local, private) refused for a non-admin, before any connection."""
    secret = secrets(OPENAI_API_KEY="k", OPENAI_BASE_URL="http://169.254.169.254/v1")
    choice = choose_model("openai", "m", secret, egress=ModelEgress(owner_is_admin=False))
    request = ChatRequest(model="m", messages=[Message(role="user", content="hi")])
    with pytest.raises(BlockedEndpointError) as info:
        await choice.provider.chat(request)
    assert "OPENAI_BASE_URL" in info.value.message and "PLAIT_HTTP_ALLOW" in info.value.message
