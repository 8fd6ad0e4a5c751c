"""The events' JSON Schema describes real events, covers every event type, and the web UI's types
generated from it are checked for staleness (`make events-check`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import plait
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.engine.event_schema import events_json_schema
from plait.engine.events import EVENT_TYPES, Event, NodeFinished, RunFinished
from plait.engine.status import RunStatus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WEB = ROOT / "web"
GENERATOR = WEB / "scripts" / "gen-events.mjs"


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = events_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _wire_events() -> list[Event]:
    events: list[Event] = []
    branching = plait.load_flow(EXAMPLES / "branching.json")
    for query in ("please refund me", "app crash", "hello"):
        events += plait.run_sync(branching, {"query": query}).events
    approval = plait.load_flow(EXAMPLES / "human_approval.json")
    cp = InMemoryCheckpointer()
    events += plait.run_sync(approval, {"employee": "Ada", "amount": 40}, checkpointer=cp, run_id="e1").events
    answer = {"action": "approve", "values": {"comment": "fine"}}
    events += plait.resume_sync(approval, "e1", answer, checkpointer=cp).events
    return events


def test_real_events_of_example_runs_fit_the_schema(validator):
    events = _wire_events()
    seen = {e.type for e in events}
    assert {"run_started", "node_started", "node_finished", "edge_fired", "waiting", "run_finished"} <= seen
    for event in events:
        wire = json.loads(json.dumps(event.to_dict()))  # as a client receives it
        errors = [e.message for e in validator.iter_errors(wire)]
        assert not errors, (wire, errors)


def test_every_event_type_is_in_the_schema():
    schema = events_json_schema()
    refs = {v["$ref"].rsplit("/", 1)[1] for v in schema["oneOf"]}
    assert refs == {cls.__name__ for cls in EVENT_TYPES.values()}
    for type_name, cls in EVENT_TYPES.items():
        assert schema["$defs"][cls.__name__]["properties"]["type"]["const"] == type_name


def test_required_and_optional_follow_the_wire_rules(validator):
    defs = events_json_schema()["$defs"]
    assert set(defs["EdgeFired"]["required"]) >= {"edge", "from", "to"}  # wire name of `from_`
    assert "output" not in defs["NodeFinished"]["required"]  # only when ok
    assert "present only when `ok`" in defs["NodeFinished"]["properties"]["output"]["description"]
    finished = Event(3, "node_finished", "r", 1.0, "n", NodeFinished(ok=False, error="boom"))
    assert validator.is_valid(finished.to_dict())
    # a field left out when None never carries null; a missing required field is refused
    assert not validator.is_valid({**finished.to_dict(), "error": None})
    done = Event(
        9, "run_finished", "r", 2.0, None, RunFinished(status=RunStatus.COMPLETED, outputs={}, usage={})
    )
    assert validator.is_valid(done.to_dict())
    assert not validator.is_valid({k: v for k, v in done.to_dict().items() if k != "outputs"})
    assert not validator.is_valid({**done.to_dict(), "status": "nope"})


def test_plait_schema_events_prints_the_schema():
    out = subprocess.run(
        [sys.executable, "-m", "plait.cli.main", "schema", "--events"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == json.loads(json.dumps(events_json_schema()))


def _node_ready() -> bool:
    return shutil.which("node") is not None and (WEB / "node_modules" / "json-schema-to-typescript").is_dir()


def _check(out_dir: Path, schema: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(GENERATOR), "--check", "--out", str(out_dir)],
        input=json.dumps(schema or events_json_schema()),
        capture_output=True,
        text=True,
        cwd=WEB,
    )


@pytest.mark.skipif(not _node_ready(), reason="needs node and web/node_modules (make web-install)")
def test_staleness_check_fails_when_the_generated_file_is_changed(tmp_path):
    generated = WEB / "src" / "generated" / "events.ts"
    shutil.copy(generated, tmp_path / "events.ts")
    fresh = _check(tmp_path)
    assert fresh.returncode == 0, fresh.stderr

    stale = tmp_path / "events.ts"
    stale.write_text(stale.read_text().replace("delta: string", "delta: number"))
    failed = _check(tmp_path)
    assert failed.returncode == 1
    assert "make events" in failed.stderr


@pytest.mark.skipif(not _node_ready(), reason="needs node and web/node_modules (make web-install)")
def test_staleness_check_fails_when_an_event_type_changes():
    schema = events_json_schema()
    token = schema["$defs"]["NodeToken"]
    token["properties"]["model"] = {"type": "string"}  # as if a field were added to NodeToken
    failed = _check(WEB / "src" / "generated", schema)
    assert failed.returncode == 1
    assert "stale" in failed.stderr
