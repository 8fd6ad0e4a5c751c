"""Reading an endpoint's model list (plait.llm.model_list): the answer shapes servers give, and
the errors the Models page shows. The HTTP side runs against a real server in
tests/api/test_llm_settings.py."""

from __future__ import annotations

import pytest

from plait.llm.model_list import ModelListError, list_models, models_url, parse_model_ids


def test_the_shapes_servers_answer_with() -> None:
    assert parse_model_ids({"object": "list", "data": [{"id": "gpt-4o-mini"}, {"id": "gpt-4o"}]}) == [
        "gpt-4o-mini",
        "gpt-4o",
    ]
    # llama.cpp's server sends both lists; Ollama's native API only `models`.
    llama = {"models": [{"name": "smollm2", "model": "smollm2"}], "data": [{"id": "smollm2"}]}
    assert parse_model_ids(llama) == ["smollm2"]
    assert parse_model_ids({"models": [{"name": "llama3.2"}]}) == ["llama3.2"]
    assert parse_model_ids({"data": []}) == []
    with pytest.raises(ValueError, match="no `data` list"):
        parse_model_ids({"error": "nope"})
    with pytest.raises(ValueError):
        parse_model_ids(["a"])


def test_models_url_per_kind() -> None:
    assert models_url("openai", "http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1/models"
    assert models_url("openai", None) == "https://api.openai.com/v1/models"
    assert models_url("anthropic", None) == "https://api.anthropic.com/v1/models"


async def test_loopback_is_refused_unless_allowed() -> None:
    with pytest.raises(ModelListError) as info:
        await list_models("openai", "http://127.0.0.1:9/v1", None)
    assert info.value.reason == "blocked" and "PLAIT_HTTP_ALLOW" in (info.value.hint or "")
    with pytest.raises(ModelListError) as info:
        await list_models("openai", "http://127.0.0.1:9/v1", None, allow=["127.0.0.0/8"])
    assert info.value.reason == "unreachable"
    with pytest.raises(ModelListError) as info:
        await list_models("openai", "file:///etc/passwd", None)
    assert info.value.reason == "blocked"
