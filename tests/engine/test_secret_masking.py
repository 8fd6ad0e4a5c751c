"""Secrets leave a run masked: sinks and the checkpointer get every event, delta, decision and the
run's outputs with the run's secret values (`RunServices.mask`) replaced, while the run itself (what
downstream nodes read, `RunResult`) keeps the real values. Also: which names `ctx.secret` may read
from the process environment (`lookup_secret`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import plait
from plait.engine import InMemoryCheckpointer, RunServices
from plait.engine.context import OPERATOR_SETTINGS, lookup_secret
from plait.net.redact import MASK, SecretMask
from plait_testing import flow

SECRET = "canary-5ecret-value"


def _dump(value: Any) -> str:
    return json.dumps(value, default=lambda o: getattr(o, "__dict__", None) or repr(o), ensure_ascii=False)


def _document() -> dict:
    return flow(
        [
            # The secret goes into an output (as is, in a URL, JSON-escaped in a string) and a variable.
            {"id": "a", "type": "test_echo", "config": {"value": {
                "raw": "{{env.TOKEN}}", "url": "https://h/p?x={{env.TOKEN}}",
                "nested": ["Bearer {{env.TOKEN}}"]}}},
            {"id": "v", "type": "assign", "config": {"assignments": [
                {"variable": "kept", "op": "overwrite", "value": "{{env.TOKEN}}"}]}},
            # A downstream node reads the real value, not the mask.
            {"id": "b", "type": "test_echo", "config": {"value": "{{a.raw}}|{{vars.kept}}"}},
            {"id": "out", "type": "output", "config": {"value": "{{b}}"}},
        ],
        [("a", "v"), ("v", "b"), ("b", "out")],
    )  # fmt: skip


async def test_sinks_and_checkpoints_get_masked_values_the_run_keeps_real_ones() -> None:
    seen: list = []
    checkpointer = InMemoryCheckpointer()
    result = await plait.run(
        _document(),
        {"q": SECRET},  # an input holding the value is masked too
        env={"TOKEN": SECRET},
        checkpointer=checkpointer,
        on_event=seen.append,
        services=RunServices(mask=SecretMask([SECRET])),
    )
    # What downstream nodes read, and what the caller gets back, are the real values.
    assert result.outputs["out"] == f"{SECRET}|{SECRET}"
    assert SECRET in _dump([e.to_dict() for e in result.events])
    # What left the run: the sink's events, the checkpoint's record, deltas, events and outputs.
    assert seen and SECRET not in _dump([e.to_dict() for e in seen])
    assert MASK in _dump([e.to_dict() for e in seen])
    cp = await checkpointer.load(result.run_id)
    assert cp is not None
    stored = _dump(
        {
            "record": {k: getattr(cp.run, k) for k in ("inputs", "variables", "outputs", "error")},
            "deltas": [
                {k: getattr(d, k) for k in ("output", "vars", "error", "interrupt")} for d in cp.deltas
            ],
            "events": [e.to_dict() for e in cp.events],
        }
    )
    assert SECRET not in stored
    assert cp.run.outputs == {"out": f"{MASK}|{MASK}"}
    finished = next(e for e in seen if e.type == "node_finished" and e.node_id == "a")
    assert finished.data.output == {"raw": MASK, "url": f"https://h/p?x={MASK}", "nested": [f"Bearer {MASK}"]}


async def test_errors_are_masked() -> None:
    doc = flow(
        [{"id": "h", "type": "http", "config": {"url": "https://{{env.TOKEN}}.invalid/", "timeout_s": 5}}]
    )
    seen: list = []
    checkpointer = InMemoryCheckpointer()
    result = await plait.run(
        doc,
        env={"TOKEN": SECRET},
        checkpointer=checkpointer,
        on_event=seen.append,
        services=RunServices(mask=SecretMask([SECRET])),
    )
    assert result.status == "failed"
    cp = await checkpointer.load(result.run_id)
    assert cp is not None
    assert SECRET not in _dump([e.to_dict() for e in seen])
    assert SECRET not in (cp.run.error or "") and SECRET not in _dump([d.error for d in cp.deltas])


async def test_without_a_mask_sinks_get_the_run_s_own_event_objects() -> None:
    seen: list = []
    result = await plait.run(_document(), env={"TOKEN": SECRET}, on_event=seen.append)
    assert all(a is b for a, b in zip(seen, result.events, strict=True))


async def test_with_a_mask_clean_events_are_not_copied() -> None:
    seen: list = []
    result = await plait.run(
        flow([{"id": "a", "type": "test_echo", "config": {"value": "nothing secret"}}]),
        on_event=seen.append,
        services=RunServices(mask=SecretMask([SECRET])),
    )
    assert all(a is b for a, b in zip(seen, result.events, strict=True))


# ----------------------------------------------------------------------------- lookup_secret


def test_stored_variables_come_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert lookup_secret({"OPENAI_API_KEY": "stored"}, "OPENAI_API_KEY") == "stored"
    assert lookup_secret({"ANY_NAME": 42}, "ANY_NAME") == "42"


@pytest.mark.parametrize(
    "name", ["PLAIT_API_KEY", "PLAIT_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL", "HOME", "PATH"]
)
def test_other_server_variables_are_never_read(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "server-only")
    assert lookup_secret({}, name) is None


def test_operator_settings_may_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "operator-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://operator.local/v1")
    monkeypatch.setenv("TAVILY_API_KEY", "tavily-key")
    assert lookup_secret({}, "OPENAI_API_KEY") == "operator-key"
    assert lookup_secret({}, "OPENAI_BASE_URL") == "http://operator.local/v1"
    assert lookup_secret({}, "TAVILY_API_KEY") == "tavily-key"
    assert {"ANTHROPIC_API_KEY", "GROQ_API_KEY", "OPENAI_MODEL", "SEARXNG_URL"} <= set(OPERATOR_SETTINGS)


def test_an_operator_key_never_goes_to_an_endpoint_a_flow_owner_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "operator-key")
    stored = {"OPENAI_BASE_URL": "https://attacker.example/v1"}
    assert lookup_secret(stored, "OPENAI_API_KEY") is None
    assert lookup_secret({**stored, "OPENAI_API_KEY": "own-key"}, "OPENAI_API_KEY") == "own-key"
    assert lookup_secret({"TAVILY_URL": "https://attacker.example"}, "TAVILY_API_KEY") is None


async def test_templates_never_read_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_SECRET_KEY", "server-only")
    monkeypatch.setenv("OPENAI_API_KEY", "operator-key")
    doc = flow(
        [
            {
                "id": "o",
                "type": "output",
                "config": {"value": "[{{env.PLAIT_SECRET_KEY}}|{{env.OPENAI_API_KEY}}]"},
            }
        ]
    )
    result = await plait.run(doc)
    assert "server-only" not in _dump(result.outputs) and "operator-key" not in _dump(result.outputs)


def test_masked_event_walks_only_payload_fields_that_hold_data() -> None:
    from plait.engine import events as ev
    from plait.engine.journal import masked_event

    mask = SecretMask([SECRET])
    started = ev.Event(1, ev.NODE_STARTED, "r", 0.0, "n", ev.NodeStarted("test_echo"))
    assert masked_event(mask, started) is started
    raw = ev.Event(2, "custom_kind", "r", 0.0, None, ev.RawData({"note": f"x {SECRET}"}))
    assert masked_event(mask, raw).data.wire() == {"note": f"x {MASK}"}
    token = ev.Event(3, ev.NODE_TOKEN, "r", 0.0, "n", ev.NodeToken(SECRET))
    assert masked_event(mask, token).data.delta == MASK
    assert token.data.delta == SECRET  # events are immutable: masking builds a new one
