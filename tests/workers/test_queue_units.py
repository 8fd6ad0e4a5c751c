"""Queue mode without processes: the executor setting's checks, the message's JSON form, and what
a worker does with a message given the run's row as it is now."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from plait.engine.status import RunStatus
from plait.service import Settings
from plait.service.runs.control import queued_launch
from plait.service.runs.launcher import Resume, Retry, Start, queued_message
from plait.workers import QueuedRun
from plait.workers.messages import BadMessage

PG = "postgresql+asyncpg://u@db/plait"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PLAIT_EXECUTOR", "PLAIT_DATABASE_URL", "PLAIT_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)


def test_inline_is_the_default_and_needs_nothing() -> None:
    assert Settings.from_env().executor == "inline"


def test_celery_needs_postgresql_and_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_EXECUTOR", "celery")
    with pytest.raises(ValueError, match="needs PostgreSQL"):
        Settings.from_env()
    monkeypatch.setenv("PLAIT_DATABASE_URL", "sqlite+aiosqlite:///x.db")
    with pytest.raises(ValueError, match="needs PostgreSQL"):
        Settings.from_env()
    monkeypatch.setenv("PLAIT_DATABASE_URL", PG)
    with pytest.raises(ValueError, match="needs Redis"):
        Settings.from_env()
    monkeypatch.setenv("PLAIT_REDIS_URL", "redis://127.0.0.1:6379/0")
    assert Settings.from_env().executor == "celery"


def test_an_unknown_executor_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_EXECUTOR", "threads")
    with pytest.raises(ValueError, match="'inline' or 'celery'"):
        Settings.from_env()


def test_messages_round_trip_through_json() -> None:
    for how in (Start({"a": 1}), Resume({"ok": True}, "ask"), Resume(), Retry("r0", "b")):
        message = queued_message("r1", how)
        assert QueuedRun.from_json(message.to_json()) == message
    assert queued_message("r1", Start({"a": 1})) == QueuedRun("r1", "start")  # inputs: on the row
    with pytest.raises(BadMessage):
        QueuedRun.from_json({"run_id": "r1", "kind": "explode"})
    with pytest.raises(BadMessage):
        QueuedRun.from_json(["r1"])


def _row(status: RunStatus, inputs: Any = None) -> Any:
    return SimpleNamespace(status=status, inputs=inputs)


def test_a_worker_acts_on_the_row_as_it_is_now() -> None:
    start, answer = QueuedRun("r", "start"), QueuedRun("r", "resume", data={"ok": 1}, node_id="ask")
    retry = QueuedRun("r", "retry", source_run_id="r0", from_node="b")
    assert queued_launch(start, _row(RunStatus.QUEUED, {"n": 1})) == Start({"n": 1})
    assert queued_launch(retry, _row(RunStatus.QUEUED)) == Retry("r0", "b")
    # Its previous worker died mid-run: continue from the checkpoint.
    assert queued_launch(start, _row(RunStatus.RUNNING)) == Resume()
    assert queued_launch(answer, _row(RunStatus.WAITING)) == Resume({"ok": 1}, "ask")
    # Acted on already (a second delivery): nothing to do.
    assert queued_launch(start, _row(RunStatus.WAITING)) is None
    for status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED):
        assert queued_launch(start, _row(status)) is None
        assert queued_launch(answer, _row(status)) is None
