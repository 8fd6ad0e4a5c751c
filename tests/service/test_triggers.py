"""Triggers that fire (plait.service.triggers): several schedulers over one database fire a tick
exactly once under a frozen clock; missed-run and overlap policies; cron time zones. SQLite (a
file shared by two services) and PostgreSQL (a database of the test's own, when
PLAIT_TEST_POSTGRES_URL is set)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from plait.engine.errors import RunInputError
from plait.service import Invalid, Services, Settings
from plait.service.metrics import REGISTRY
from plait.service.triggers import ScheduleConfig, last_tick, next_tick

T0 = datetime(2030, 1, 7, 10, 0, 5, tzinfo=UTC).timestamp()  # 5 s past a minute (and an hour)


class Clock:
    """A frozen clock the test moves."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def quick_flow(flow_id: str = "tick") -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "inputs": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "out", "type": "output", "config": {"name": "n", "value": "{{inputs.n}}"}},
        ],
        "edges": [{"source": "start", "target": "out"}],
    }


def waiting_flow(flow_id: str = "wait") -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "ask", "type": "human", "config": {"fields": [{"name": "a"}]}},
        ],
        "edges": [{"source": "start", "target": "ask"}],
    }


@pytest.fixture
async def pair(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Services, Services, Clock]]:
    """Two services (two servers) over one database, their schedulers driven by one frozen clock
    (the background loops are stopped: the test calls `tick`)."""
    monkeypatch.setenv("PLAIT_SECRET_KEY", Fernet.generate_key().decode())
    clock = Clock(T0)
    opened: list[Services] = []
    try:
        for _ in range(2):
            svc = await Services.open(
                Settings(database_url=db_url, api_key="k", lease_ttl_s=2.0, sweep_interval_s=0.2)
            )
            opened.append(svc)
            await svc.triggers.close()
            svc.triggers.clock = clock
        yield opened[0], opened[1], clock
    finally:
        for svc in opened:
            await svc.close()


async def _publish(svc: Services, doc: dict[str, Any]) -> None:
    await svc.flows.create(doc)
    await svc.flows.publish(doc["id"])


async def test_two_schedulers_fire_a_once_a_minute_schedule_exactly_once_per_minute(
    pair: tuple[Services, Services, Clock],
) -> None:
    a, b, clock = pair
    await _publish(a, quick_flow())
    trig = await a.triggers.create(
        "tick", "schedule", {"cron": "* * * * *", "overlap": "allow", "inputs": {"n": 3}}
    )
    assert trig["next_fire_at"] == T0 - 5 + 60
    started: list[str] = []
    minutes = 6
    for step in range(minutes * 4):  # every 15 s for 6 minutes, both servers at once
        clock.now = T0 + step * 15
        for runs in await asyncio.gather(a.triggers.tick(), b.triggers.tick(), a.triggers.tick()):
            started.extend(runs)
    assert len(started) == len(set(started)) == minutes - 1  # the ticks at minutes 1..5
    fires = (await a.triggers.get("tick", trig["id"]))["fires"]
    assert [f["status"] for f in fires] == ["started"] * (minutes - 1)
    assert sorted(f["fire_at"] for f in fires) == [T0 - 5 + 60 * m for m in range(1, minutes)]
    assert sorted(f["run_id"] for f in fires) == sorted(started)
    for run_id in started:
        await a.runs.wait(run_id, 10)
        await b.runs.wait(run_id, 10)
    listed = await a.runs.list(flow_id="tick")
    assert {r["id"] for r in listed} == set(started)
    assert all(r["trigger_id"] == trig["id"] for r in listed)
    flow_owner = (await a.store.flows.get("tick")).owner_id  # type: ignore[union-attr]
    for run_id in started:
        row = await a.store.runs.get(run_id)
        assert row is not None and row.owner_id == flow_owner and row.inputs == {"n": 3}
    assert (await a.runs.get(started[0]))["trigger_id"] == trig["id"]


async def test_missed_ticks_skip_or_run_once(pair: tuple[Services, Services, Clock]) -> None:
    a, b, clock = pair
    await _publish(a, quick_flow())
    hourly = {"cron": "0 * * * *", "overlap": "allow"}
    skip = await a.triggers.create("tick", "schedule", {**hourly, "missed": "skip"})
    once = await a.triggers.create("tick", "schedule", {**hourly, "missed": "run_once"})
    # The servers were down for three hours and come back 20 minutes after a tick.
    clock.now = T0 + 3 * 3600 + 20 * 60
    started = [r for runs in await asyncio.gather(a.triggers.tick(), b.triggers.tick()) for r in runs]
    assert len(started) == 1
    row = await a.store.runs.get(started[0])
    assert row is not None and row.trigger_id == once["id"]
    skipped = (await a.triggers.get("tick", skip["id"]))["fires"]
    assert [(f["status"], f["run_id"]) for f in skipped] == [("skipped", None)]
    assert "missed" in skipped[0]["error"]
    hour = T0 - 5
    for t in (skip, once):  # both wait for the next tick now
        assert (await a.triggers.get("tick", t["id"]))["next_fire_at"] == hour + 4 * 3600
    clock.now += 60
    assert await a.triggers.tick() == [] and await b.triggers.tick() == []
    # On time (within grace_s), `skip` fires as usual.
    clock.now = hour + 4 * 3600 + 2
    started = [r for runs in await asyncio.gather(a.triggers.tick(), b.triggers.tick()) for r in runs]
    assert len(started) == 2
    for run_id in started:
        await a.runs.wait(run_id, 10)
        await b.runs.wait(run_id, 10)


async def test_overlap_skip_waits_for_the_active_run_allow_does_not(
    pair: tuple[Services, Services, Clock],
) -> None:
    a, b, clock = pair
    await _publish(a, waiting_flow())
    skip = await a.triggers.create("wait", "schedule", {"cron": "* * * * *", "overlap": "skip"})
    allow = await a.triggers.create("wait", "schedule", {"cron": "* * * * *", "overlap": "allow"})
    runs: dict[str, list[str]] = {skip["id"]: [], allow["id"]: []}
    for minute in (1, 2, 3):
        clock.now = T0 - 5 + 60 * minute + 1
        for started in await asyncio.gather(a.triggers.tick(), b.triggers.tick()):
            for run_id in started:
                row = await a.store.runs.get(run_id)
                assert row is not None and row.trigger_id is not None
                runs[row.trigger_id].append(run_id)
                await a.runs.wait(run_id, 10)
                await b.runs.wait(run_id, 10)
    assert len(runs[allow["id"]]) == 3  # each waits for a human; a new one every minute anyway
    assert len(runs[skip["id"]]) == 1  # the first still waits: minutes 2 and 3 are skipped
    fires = (await a.triggers.get("wait", skip["id"]))["fires"]
    assert [f["status"] for f in fires] == ["skipped", "skipped", "started"]
    assert runs[skip["id"]][0] in fires[0]["error"]
    # Once that run stopped, the next tick fires again.
    await a.runs.cancel(runs[skip["id"]][0])
    clock.now = T0 - 5 + 60 * 4 + 1
    started = [r for rs in await asyncio.gather(a.triggers.tick(), b.triggers.tick()) for r in rs]
    assert len(started) == 2
    for run_id in started:
        await a.runs.cancel(run_id)


async def test_a_disabled_or_deleted_schedule_does_not_fire(pair: tuple[Services, Services, Clock]) -> None:
    a, b, clock = pair
    await _publish(a, quick_flow())
    trig = await a.triggers.create("tick", "schedule", {"cron": "* * * * *"})
    off = await a.triggers.update("tick", trig["id"], enabled=False)
    assert off["enabled"] is False and off["next_fire_at"] is None
    clock.now = T0 + 120
    assert await a.triggers.tick() == []
    on = await a.triggers.update("tick", trig["id"], enabled=True)  # from now on: no catch-up
    assert on["next_fire_at"] == T0 - 5 + 180
    await a.triggers.delete("tick", trig["id"])
    clock.now = T0 + 400
    assert await a.triggers.tick() == [] and await b.triggers.tick() == []


async def test_bad_schedules_are_refused_naming_the_field(pair: tuple[Services, Services, Clock]) -> None:
    a, _, _ = pair
    await _publish(a, quick_flow())
    for config, field in (
        ({"cron": "every minute"}, "config.cron"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, "config.timezone"),
        ({"cron": "* * * * *", "missed": "sometimes"}, "config.missed"),
        ({}, "config.cron"),
    ):
        with pytest.raises(Invalid, match=field.replace(".", r"\.")):
            await a.triggers.create("tick", "schedule", config)
    with pytest.raises(Invalid, match="kind"):
        await a.triggers.create("tick", "email", {})


def test_cron_ticks_are_read_in_the_time_zone() -> None:
    paris = ScheduleConfig(cron="0 9 * * *", timezone="Europe/Paris")
    winter = datetime(2030, 1, 7, 7, 0, tzinfo=UTC).timestamp()
    assert next_tick(paris, winter) == datetime(2030, 1, 7, 8, 0, tzinfo=UTC).timestamp()
    summer = datetime(2030, 7, 7, 7, 30, tzinfo=UTC).timestamp()
    assert next_tick(paris, summer) == datetime(2030, 7, 8, 7, 0, tzinfo=UTC).timestamp()
    minutely = ScheduleConfig(cron="* * * * *")
    at = datetime(2030, 1, 7, 7, 0, tzinfo=UTC).timestamp()
    assert last_tick(minutely, at) == at and next_tick(minutely, at) == at + 60
    assert last_tick(minutely, at + 59.9) == at


def test_cron_aliases_are_spelled_out() -> None:
    daily = ScheduleConfig(cron="@daily", timezone="Europe/Paris")
    at = datetime(2030, 1, 1, 0, 0, tzinfo=UTC).timestamp()  # 01:00 in Paris
    assert next_tick(daily, at) == datetime(2030, 1, 1, 23, 0, tzinfo=UTC).timestamp()


async def test_the_scheduler_loop_fires_on_its_own(pair: tuple[Services, Services, Clock]) -> None:
    """The loop `Services.open` starts (here with a fast poll): a due tick fires without a call."""
    a, _, clock = pair
    await _publish(a, quick_flow())
    trig = await a.triggers.create("tick", "schedule", {"cron": "* * * * *"})
    clock.now = T0 + 60
    a.triggers.poll_s = 0.05
    await a.triggers.start()
    deadline = asyncio.get_running_loop().time() + 10
    while not (fires := (await a.triggers.get("tick", trig["id"]))["fires"]) or not fires[0]["run_id"]:
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    await a.runs.wait(fires[0]["run_id"], 10)
    await a.triggers.close()


def declaring_flow(cron: str | None) -> dict[str, Any]:
    doc = quick_flow("declared")
    if cron is not None:
        doc["nodes"][0]["config"] = {"trigger": "schedule", "schedule": cron}
    return doc


async def test_a_schedule_the_start_node_declares_follows_the_published_version(
    pair: tuple[Services, Services, Clock],
) -> None:
    a, b, clock = pair
    await _publish(a, declaring_flow("* * * * *"))
    await asyncio.gather(a.triggers.sync_declared(), b.triggers.sync_declared())
    [trig] = await a.triggers.list_for_flow("declared")
    assert trig["config"]["cron"] == "* * * * *" and trig["config"]["node_id"] == "start"
    clock.now = T0 + 60
    started = [r for rs in await asyncio.gather(a.triggers.tick(), b.triggers.tick()) for r in rs]
    assert len(started) == 1
    await a.runs.wait(started[0], 10)
    await b.runs.wait(started[0], 10)
    # A new version with another cron changes it; one without the schedule removes it.
    await a.flows.update("declared", document=declaring_flow("0 * * * *"))
    await a.flows.publish("declared")
    assert await b.triggers.sync_declared() == 1 and await b.triggers.sync_declared() == 0
    [changed] = await a.triggers.list_for_flow("declared")
    assert changed["id"] == trig["id"] and changed["config"]["cron"] == "0 * * * *"
    assert changed["next_fire_at"] == T0 - 5 + 3600
    await a.flows.update("declared", document=declaring_flow(None))
    await a.flows.publish("declared")
    await a.triggers.sync_declared()
    assert await a.triggers.list_for_flow("declared") == []


async def test_a_server_that_died_after_firing_leaves_the_tick_fired_once(
    pair: tuple[Services, Services, Clock],
) -> None:
    """Server A took the tick (its row is in trigger_fires) and died before moving the schedule
    on: B finds it still due, finds the tick taken, starts nothing, and moves it on."""
    a, b, clock = pair
    await _publish(a, quick_flow())
    trig = await a.triggers.create("tick", "schedule", {"cron": "* * * * *"})
    tick = T0 - 5 + 60
    assert await a.store.trigger_fires.claim(trig["id"], f"at:{tick:.0f}", tick) is not None
    clock.now = tick + 3
    assert await b.triggers.tick() == []
    assert (await b.triggers.get("tick", trig["id"]))["next_fire_at"] == tick + 60


async def test_firings_are_counted_in_the_metrics(pair: tuple[Services, Services, Clock]) -> None:
    a, b, clock = pair

    def fired() -> float:
        return REGISTRY.get_sample_value("plait_triggers_fired_total", {"kind": "schedule"}) or 0.0

    before = fired()
    await _publish(a, quick_flow())
    await a.triggers.create("tick", "schedule", {"cron": "* * * * *", "overlap": "allow"})
    clock.now = T0 + 60
    started = [r for rs in await asyncio.gather(a.triggers.tick(), b.triggers.tick()) for r in rs]
    assert fired() == before + len(started) == before + 1
    await a.runs.wait(started[0], 10)
    await b.runs.wait(started[0], 10)


async def test_a_schedules_inputs_are_checked_against_the_published_input_schema(
    pair: tuple[Services, Services, Clock],
) -> None:
    a, _, _ = pair
    await _publish(a, quick_flow())
    with pytest.raises(RunInputError, match="inputs.n"):
        await a.triggers.create("tick", "schedule", {"cron": "* * * * *", "inputs": {"n": "three"}})
    trig = await a.triggers.create("tick", "schedule", {"cron": "* * * * *", "inputs": {"n": 3}})
    with pytest.raises(RunInputError, match="inputs.n"):
        await a.triggers.update("tick", trig["id"], config={"cron": "* * * * *", "inputs": {"n": []}})
