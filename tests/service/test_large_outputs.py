"""A large value is stored once (issue 11) and the service shows it whole: a run whose output node
passes on a value over the blob threshold keeps one copy in the database (`plait.store.blobs`),
while the run's view (GET /runs/{id}: outputs, per-node outputs and inputs), its listing and its
event log show the full value, as does a retry of it."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import select

from plait.service import Services, Settings
from plait.store.blobs import INLINE_MAX
from plait.store.db import json_dumps
from plait.store.models import Base

SIZE = INLINE_MAX * 3


async def _finished(services: Services, run_id: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        row = await services.store.runs.get(run_id)
        if row is not None and row.status in ("completed", "failed", "cancelled"):
            return row
        assert time.monotonic() < deadline, row.status if row else None
        await asyncio.sleep(0.05)


async def _occurrences(services: Services, needle: str) -> dict[str, int]:
    found: dict[str, int] = {}
    async with services.store.engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            for row in (await conn.execute(select(table))).all():
                for value in row:
                    if value is not None:
                        n = (value if isinstance(value, str) else json_dumps(value)).count(needle)
                        if n:
                            found[table.name] = found.get(table.name, 0) + n
    return found


async def test_the_run_view_shows_a_large_output_stored_once(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/s.db", api_key="k")
    s = await Services.open(settings)
    try:
        flow = {
            "schema": "plait/flow@1",
            "id": "big",
            "nodes": [
                {"id": "start", "type": "start"},
                {
                    "id": "out",
                    "type": "output",
                    "config": {"value": f"{{{{ inputs.tag ~ ('x' * {SIZE}) }}}}"},
                },
            ],
            "edges": [{"source": "start", "target": "out"}],
        }
        await s.flows.create(flow)
        await s.flows.publish("big")
        tag = uuid.uuid4().hex
        run_id, _ = await s.runs.start("big", {"tag": tag})
        row = await _finished(s, run_id)
        assert row.status == "completed", row.error
        value = tag + "x" * SIZE

        view = await s.runs.get(run_id)
        assert view["outputs"] == {"out": value}
        assert view["nodes"]["out"]["output"] == value
        (listed,) = await s.runs.list(flow_id="big")
        assert listed["outputs"] == {"out": value}
        assert (await s.runs.result_view(run_id))["outputs"] == {"out": value}
        events = await s.runs.events_after(run_id, 0)
        finished = [e for e in events if e.type == "node_finished" and e.node_id == "out"]
        assert finished and finished[0].data.output == value
        # The node run, its event and the run's outputs: one copy, in `blobs`.
        assert await _occurrences(s, tag + "x") == {"blobs": 1}

        # A retry from the output node shows it whole too, and stores no second copy.
        again = await s.runs.retry(run_id, "out")
        assert (await _finished(s, again)).status == "completed"
        assert (await s.runs.get(again))["outputs"] == {"out": value}
        assert await _occurrences(s, tag + "x") == {"blobs": 1}
    finally:
        await s.close()
