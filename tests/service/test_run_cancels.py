"""RunCancels: the service's cancel source (the engine's CancelSource protocol over LocalCancels)."""

from __future__ import annotations

import asyncio

from plait.engine.cancel import CancelSource
from plait.service.runs import RunCancels


def test_implements_the_engine_protocol() -> None:
    def accepts(source: CancelSource) -> None: ...

    accepts(RunCancels())


async def test_a_watching_run_is_called_back_at_once() -> None:
    cancels = RunCancels()
    calls: list[str] = []
    cancels.expect("r1")
    unwatch = cancels.watch("r1", lambda: calls.append("r1"))
    assert cancels.cancel("r1") is True
    assert calls == ["r1"]
    unwatch()


async def test_a_request_before_the_run_watches_is_delivered_when_it_does() -> None:
    """The service launches a run, the engine watches only once the run is set up (a resume loads
    its checkpoint first): a cancel in between must not be lost."""
    cancels = RunCancels()
    cancels.expect("r1")
    assert cancels.cancel("r1") is True  # executing here, not watching yet
    calls: list[str] = []
    cancels.watch("r1", lambda: calls.append("r1"))
    assert calls == ["r1"]


async def test_runs_not_executing_here_are_not_remembered() -> None:
    cancels = RunCancels()
    assert cancels.cancel("elsewhere") is False
    calls: list[str] = []
    cancels.watch("elsewhere", lambda: calls.append("x"))
    assert calls == []
    cancels.expect("r1")
    cancels.cancel("r1")
    cancels.forget("r1")  # the run ended: a later watch of the same id starts clean
    cancels.watch("r1", lambda: calls.append("r1"))
    assert calls == []


async def test_cancel_from_another_thread_runs_on_the_run_loop() -> None:
    cancels = RunCancels()
    loop = asyncio.get_running_loop()
    seen: list[asyncio.AbstractEventLoop] = []
    done = asyncio.Event()

    def on_cancel() -> None:
        seen.append(asyncio.get_running_loop())
        done.set()

    cancels.expect("r1")
    cancels.watch("r1", on_cancel)
    await asyncio.to_thread(cancels.cancel, "r1")
    await asyncio.wait_for(done.wait(), 5)
    assert seen == [loop]
