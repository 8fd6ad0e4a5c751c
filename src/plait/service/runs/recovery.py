"""`Recovery`: runs outlive the process that started them.

At start-up and then periodically, runs left `running` (or `queued`) whose lease expired are taken
over and continued from their last checkpoint (their owner died); waiting runs stay waiting. While
this process executes runs, the lease keeper renews their leases and passes on cancel requests
made through the database (by another process) to the cancel source; the cancel listener passes on
the ones announced through the cancel broadcast at once (the lease keeper stays the safety net;
without a broadcast, SQLite, the flags are read every `cancel_poll_s`); the sweeper expires human
tasks past their deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time

from plait.engine.status import RunStatus
from plait.service.errors import ServiceError
from plait.service.flows import FlowService
from plait.service.runs.broadcast import CancelBroadcast, PollingBroadcast, flagged_among
from plait.service.runs.cancels import RunCancels
from plait.service.runs.human_tasks import HumanTasks
from plait.service.runs.launcher import Resume, RunLauncher, Start
from plait.service.settings import Settings
from plait.store import Store
from plait.store.models import Run

log = logging.getLogger("plait.service")

RECOVERY_BATCH = 500
QUEUED_GRACE_S = 5.0  # a queued row this young without a lease may be another process' new run


class Recovery:
    def __init__(
        self,
        store: Store,
        flows: FlowService,
        settings: Settings,
        launcher: RunLauncher,
        cancels: RunCancels,
        tasks: HumanTasks,
        broadcast: CancelBroadcast | None = None,
    ) -> None:
        self.store = store
        self.broadcast: CancelBroadcast = broadcast or PollingBroadcast(store)
        self.flows = flows
        self.settings = settings
        self.launcher = launcher
        self.cancels = cancels
        self.tasks = tasks
        self._loops: list[asyncio.Task[None]] = []
        self._closing = False

    async def start(self) -> None:
        """Crash recovery now, then the lease keeper, the cancel listener (or poll) and the
        sweeper (expiry + recovery)."""
        await self.recover()
        self._loops.append(asyncio.create_task(self._lease_keeper(), name="plait-lease-keeper"))
        listener = self.broadcast.listen(self.cancels.cancel, self.check_cancels)
        self._loops.append(asyncio.create_task(listener, name="plait-cancel-listener"))
        if self.broadcast.kind == "polling" and self.settings.cancel_poll_s > 0:
            self._loops.append(asyncio.create_task(self._cancel_poll(), name="plait-cancel-poll"))
        self._loops.append(asyncio.create_task(self._sweeper(), name="plait-sweeper"))

    async def close(self) -> None:
        """Stop taking over runs and stop the background loops."""
        self._closing = True
        for t in self._loops:
            t.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)

    async def recover(self) -> list[str]:
        """Take over runs left `running` (or `queued`) whose lease expired, and continue them from
        their last checkpoint. Waiting runs stay waiting."""
        taken: list[str] = []
        owner = self.launcher.owner
        rows = await self.store.runs.find_expired_running(
            statuses=(RunStatus.RUNNING, RunStatus.QUEUED), limit=RECOVERY_BATCH
        )
        fresh = time.time() - QUEUED_GRACE_S
        for row in rows:
            if not self.launcher.has_room():
                break  # the cap on runs executing here (plait worker --concurrency): later
            if (
                self._closing
                or self.launcher.executing(row.id) is not None
                or self.launcher.is_claimed(row.id)
            ):
                continue
            if row.status == RunStatus.QUEUED and row.created_at > fresh and row.lease_owner is None:
                continue  # another process may be between creating the row and leasing it
            if not await self.store.runs.acquire_lease(row.id, owner, self.settings.lease_ttl_s):
                continue
            # The lease is re-entrant for this process: a queued message it took meanwhile (the
            # row was between the queue's lease and the worker's) holds it too. Look again.
            now = await self.store.runs.get(row.id)
            if self.launcher.executing(row.id) is not None or self.launcher.is_claimed(row.id):
                continue  # this process executes it already: the lease is that execution's
            if now is None or now.status not in (RunStatus.RUNNING, RunStatus.QUEUED):
                await self.store.runs.release_lease(row.id, owner)
                continue
            row = now
            try:
                await self._take_over(row)
                taken.append(row.id)
            except Exception:  # noqa: BLE001
                log.exception("cannot recover run %s", row.id)
                await self.store.runs.release_lease(row.id, owner)
        if taken:
            log.info("recovered %d run(s): %s", len(taken), ", ".join(taken))
        return taken

    async def _take_over(self, row: Run) -> None:
        owner = self.launcher.owner
        if row.cancel_requested:
            await self.launcher.end_idle(row.id, RunStatus.CANCELLED, None)
            await self.store.runs.release_lease(row.id, owner)
            return
        try:
            flow = await self.flows.document_for_run(row.flow_id, row.version, row.document)
        except ServiceError as exc:
            await self.launcher.end_idle(row.id, RunStatus.FAILED, f"cannot recover the run: {exc.message}")
            await self.store.runs.release_lease(row.id, owner)
            return
        # A queued run never began: start it. Otherwise, without data, resume continues the run
        # and nodes waiting for people keep waiting.
        how = Start(row.inputs) if row.status == RunStatus.QUEUED else Resume()
        if self.launcher.executing(row.id) is None and not self.launcher.is_claimed(row.id):
            self.launcher.launch(row.id, flow, how, owner_id=row.owner_id)

    async def _lease_keeper(self) -> None:
        """Renew the leases of the runs executing here (one UPDATE for all of them), pass on
        cancel requests made through the database, and stop at once the runs another process
        took over (this one stalled past their lease: their checkpoints are refused anyway)."""
        interval = max(self.settings.lease_ttl_s / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            ids = self.launcher.active
            if not ids:
                continue
            try:
                beat = await self.store.runs.heartbeat(ids, self.launcher.owner, self.settings.lease_ttl_s)
                for run_id in beat.not_held:
                    self.launcher.lost(run_id)
                for run_id in beat.cancel_requested:
                    self.cancels.cancel(run_id)
            except Exception:  # noqa: BLE001
                log.exception("lease renewal failed")

    async def check_cancels(self) -> None:
        """Read the cancel flags of the runs executing here (one SELECT) and pass them on."""
        for run_id in await flagged_among(self.store, self.launcher.active):
            self.cancels.cancel(run_id)

    async def _cancel_poll(self) -> None:
        """Without a broadcast: read the flags more often than the lease keeper renews leases."""
        interval = max(self.settings.cancel_poll_s, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.check_cancels()
            except Exception:  # noqa: BLE001
                log.exception("reading cancel requests failed")

    async def _sweeper(self) -> None:
        interval = max(self.settings.sweep_interval_s, 0.05)
        recover_every = max(self.settings.lease_ttl_s / 2, interval)
        next_recover = time.monotonic() + recover_every
        while True:
            await asyncio.sleep(interval)
            try:
                await self.tasks.expire_due()
                if time.monotonic() >= next_recover:
                    next_recover = time.monotonic() + recover_every
                    await self.recover()
            except Exception:  # noqa: BLE001
                log.exception("sweeper failed")


__all__ = ["Recovery"]
