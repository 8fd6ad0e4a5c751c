"""examples/llm_triage.json runs as shipped on its scripted answers, and unchanged against a real
OpenAI-compatible server when OPENAI_BASE_URL is set (llama.cpp's, from the llama_server fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

import plait

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llm_triage.json"


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("message", "team", "reply"),
    [
        ("I was charged twice", "billing", "Sorry about the double charge: the refund is on its way."),
        ("the app shows an error", "bug", "Thanks for the report."),
        ("hello", "else", "Thanks, a person will answer soon."),
    ],
)
async def test_runs_as_shipped_on_the_scripted_provider(message: str, team: str, reply: str) -> None:
    result = await plait.run(plait.load_flow(EXAMPLE), {"message": message})
    assert result.status == "completed", result.error
    assert result.outputs["team"] == team
    assert result.outputs["reply"].startswith(reply)
    assert result.usage["total_tokens"] > 0


async def test_runs_against_an_openai_compatible_server(llama_server: str) -> None:
    result = await plait.run(
        plait.load_flow(EXAMPLE), {"message": "I was charged twice"}, env={"OPENAI_BASE_URL": llama_server}
    )
    assert result.status == "completed", result.error
    assert result.outputs["team"] in ("billing", "bug", "else")
    assert isinstance(result.outputs["reply"], str) and result.outputs["reply"]
    # with the variable set the model server really is called: a closed port fails the run
    closed = await plait.run(
        plait.load_flow(EXAMPLE), {"message": "hi"}, env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    )
    assert closed.status == "failed" and "onnect" in closed.nodes["route"].error
