"""The event log of runs (`run_events`): replay for streams, and events stored outside the
checkpointer (a run ended while it was not executing). Values stored once (in a node run, the run
row, or `blobs` when large) are put back in the events read."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, insert, select

import plait.store.run_rows as run_rows
from plait.engine.events import Event
from plait.store.blobs import BlobReader, BlobSink, insert_statement, refs_in
from plait.store.models import NodeRunRow, Run, RunEvent, table_of
from plait.store.repos.base import Repo
from plait.store.rows import NodeOutputs, event_rows, references, stored_events, with_blobs


class EventRepo(Repo):
    async def list_events(self, run_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Event]:
        """The run's events with seq > after_seq, in order (`Last-Event-ID` replay)."""
        stmt = (
            select(RunEvent).where(RunEvent.run_id == run_id, RunEvent.seq > after_seq).order_by(RunEvent.seq)
        )
        if limit is not None:
            stmt = stmt.limit(limit)
        return await self._complete(run_id, await self._all(stmt))

    async def _complete(self, run_id: str, rows: Sequence[RunEvent]) -> list[Event]:
        """The events of `rows` with the values stored once, in their node run, run row or
        `blobs`, put back (see plait.store.rows)."""
        keys = refs_in(r.data for r in rows)
        lowest, columns = references(rows)  # a payload in `blobs` refers to nothing else
        outputs = run_row = None
        if lowest is not None or columns or keys:
            async with self.sessionmaker() as session:
                blobs = BlobReader()
                if keys:
                    rows = with_blobs(rows, "data", await blobs.load(session, keys))
                if lowest is not None:
                    n = table_of(NodeRunRow).c
                    found = select(n.node_id, n.status, n.event_seq, n.output).where(
                        n.run_id == run_id, n.status == "ok", n.event_seq >= lowest
                    )
                    node_rows = (await session.execute(found)).all()
                    output_keys = refs_in(r.output for r in node_rows)
                    if output_keys:
                        node_rows = with_blobs(node_rows, "output", await blobs.load(session, output_keys))
                    outputs = NodeOutputs(node_rows)
                if columns:
                    r = table_of(Run).c
                    row = (
                        await session.execute(select(*(r[c] for c in columns)).where(r.id == run_id))
                    ).first()
                    if row is not None:
                        run_row = dict(row._mapping)
                        column_keys = refs_in(run_row.values())
                        if column_keys:
                            await blobs.load(session, column_keys)
                            run_row = {k: blobs.value(v) for k, v in run_row.items()}
        return stored_events(run_id, rows, outputs, run_row)

    async def last_seq(self, run_id: str) -> int:
        return int(await self._one(select(func.max(RunEvent.seq)).where(RunEvent.run_id == run_id)) or 0)

    async def append(self, run_id: str, events: Sequence[Event]) -> None:
        """Store events produced outside the checkpointer (seq must be new for the run)."""
        if not events:
            return
        async with self.sessionmaker.begin() as session:
            blobs = BlobSink()
            rows = event_rows(run_id, events, blobs=blobs)
            if blobs:
                dialect = session.bind.dialect.name if session.bind is not None else ""
                await session.execute(insert_statement(dialect), blobs.rows())
            await session.execute(insert(table_of(RunEvent)), rows)
            await session.execute(
                run_rows.raise_last_seq(run_id, events[-1].seq),
                execution_options={"synchronize_session": False},
            )
