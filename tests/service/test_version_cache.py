"""A worker does not read a published flow version again for every run: the queue's hand-over
(`RunRepo.take_over_with_version`) returns the version's row id with the run, and
`FlowService.document_for_run` reuses the version it compiled from that row. A flow deleted and
created again numbers its versions anew: the new version 1 is another row (SQLite may even give
it the old row id: its creation time differs), so it is read."""

from __future__ import annotations

from typing import Any

import pytest

from plait.service import NotFound, Services, Settings


def _doc(value: str) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "f",
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "out", "type": "output", "config": {"name": "v", "value": value}},
        ],
        "edges": [{"source": "start", "target": "out"}],
    }


def _value(flow: Any) -> str:
    return str(next(n for n in flow.doc.nodes if n.id == "out").config["value"])


async def test_a_version_is_read_once_per_version_row(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = await Services.open(Settings(database_url=db_url, api_key="k"))
    try:
        flows, runs = svc.flows, svc.store.runs
        await flows.create(_doc("old"))
        await flows.publish("f")
        await runs.create("r1", "f", version=1, lease_owner="queue", lease_until=9e12)
        taken = await runs.take_over_with_version("r1", "w1", 30, from_owner="queue")
        assert taken is not None and taken.run.id == "r1" and taken.flow_version is not None
        first_row = taken.flow_version

        reads: list[tuple[str, int | None]] = []
        get_version = svc.store.flows.get_version

        async def counted(flow_id: str, version: int | None = None) -> Any:
            reads.append((flow_id, version))
            return await get_version(flow_id, version)

        monkeypatch.setattr(svc.store.flows, "get_version", counted)
        flow = await flows.document_for_run("f", 1, version_row=first_row)
        assert _value(flow) == "old"
        assert await flows.document_for_run("f", 1, version_row=first_row) is flow
        assert await flows.document_for_run("f", 1) is flow  # without an id: read (and the same)
        assert reads == [("f", 1), ("f", 1)]

        # Deleted and created again: version 1 is another row, read anew.
        await flows.delete("f")
        await flows.create(_doc("new"))
        await flows.publish("f")
        await runs.create("r2", "f", version=1, lease_owner="queue", lease_until=9e12)
        taken = await runs.take_over_with_version("r2", "w1", 30, from_owner="queue")
        assert taken is not None and taken.flow_version not in (None, first_row)
        assert _value(await flows.document_for_run("f", 1, version_row=taken.flow_version)) == "new"
        # A stale id (read before the delete) is a miss too: the version is read.
        assert _value(await flows.document_for_run("f", 1, version_row=first_row)) == "new"
        assert len(reads) == 4

        # A run of a draft, or of a version deleted since, has no version row id.
        await runs.create("r3", "f", lease_owner="queue", lease_until=9e12)
        assert (await runs.take_over_with_version("r3", "w1", 30, from_owner="queue")).flow_version is None
        await runs.create("r4", "f", version=7, lease_owner="queue", lease_until=9e12)
        assert (await runs.take_over_with_version("r4", "w1", 30, from_owner="queue")).flow_version is None
        with pytest.raises(NotFound):
            await flows.document_for_run("f", 7, version_row=None)
    finally:
        await svc.close()
