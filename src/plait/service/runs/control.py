"""`RunControl`: the requests that start and stop runs: start (background or synchronous),
retry from a node, cancel.

A new run's row is created queued and leased to this process in one write, then the launcher
executes it. Cancelling a run executing here goes through the cancel source at once; one
executing elsewhere is flagged in the database and announced through the cancel broadcast (its
owner cancels it within milliseconds; its lease keeper reads the flag in any case); one that is
not executing anywhere (waiting, queued, orphaned) is ended here.

In queue mode (PLAIT_EXECUTOR=celery) the row is created leased to the queue and the launcher
sends it to the workers; a worker's `execute_queued` takes the run's lease over and executes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any, Unpack

from plait import Flow, RunResult, validate_inputs
from plait.engine.status import TERMINAL_RUN_STATUSES, RunStatus
from plait.service.errors import Conflict, Invalid, ServiceError
from plait.service.flows import FlowService
from plait.service.runs.broadcast import CancelBroadcast, PollingBroadcast
from plait.service.runs.cancels import RunCancels
from plait.service.runs.launcher import Launch, Resume, Retry, RunLauncher, Start
from plait.service.runs.views import RunViews, run_summary
from plait.service.settings import Settings
from plait.store import NewRunFields, Store
from plait.store.models import Run
from plait.workers import QUEUE_OWNER, QueuedRun
from plait.workers.messages import QUEUE_HOLD_S

log = logging.getLogger("plait.service")

CANCEL_WAIT_S = 5.0  # how long `cancel` waits for a run executing here to stop
LEASE_WAIT_POLL_S = 0.25  # a worker waiting for another process to let go of a run reads this often


def queued_launch(message: QueuedRun, row: Run) -> Launch | None:
    """What a worker does with a queued run, from the message and the run's row as it is now
    (the worker holds its lease): a queued run starts (or starts as a retry); a running one
    continues from its checkpoint (its previous owner died); a waiting one takes the answer the
    message carries. None: nothing to do (finished, or a message already acted on)."""
    status = row.status
    if status == RunStatus.QUEUED:
        if message.kind == "retry" and message.source_run_id and message.from_node:
            return Retry(message.source_run_id, message.from_node)
        return Start(row.inputs or {}) if message.kind == "start" else Resume()
    if status == RunStatus.RUNNING:
        return Resume(message.data, message.node_id) if message.kind == "resume" else Resume()
    if status == RunStatus.WAITING and message.kind == "resume":
        return Resume(message.data, message.node_id)
    return None


class RunControl:
    def __init__(
        self,
        store: Store,
        flows: FlowService,
        settings: Settings,
        launcher: RunLauncher,
        views: RunViews,
        cancels: RunCancels,
        broadcast: CancelBroadcast | None = None,
    ) -> None:
        self.store = store
        self.flows = flows
        self.settings = settings
        self.launcher = launcher
        self.views = views
        self.cancels = cancels
        self.broadcast: CancelBroadcast = broadcast or PollingBroadcast(store)

    async def _create_and_launch(
        self, run_id: str, flow_id: str, flow: Flow, how: Launch, **fields: Unpack[NewRunFields]
    ) -> asyncio.Task[RunResult | None]:
        """One write creates the row queued and leased to this process, then the launcher
        executes it (recovery leaves the run alone meanwhile: it is claimed)."""
        fields["status"] = RunStatus.QUEUED
        if self.launcher.queue is not None:  # queue mode: the queue holds it until a worker takes it
            fields["lease_owner"] = QUEUE_OWNER
            fields["lease_until"] = time.time() + QUEUE_HOLD_S
            await self.store.runs.insert(run_id, flow_id, **fields)
            task = self.launcher.launch(run_id, flow, how, leased=True, owner_id=fields.get("owner_id"))
            # Sent: the request answers after the queue has it (when Redis cannot be reached, the
            # run stays queued without a lease and a worker's crash recovery starts it).
            await asyncio.shield(task)
            return task
        fields["lease_owner"] = self.launcher.owner
        fields["lease_until"] = time.time() + self.settings.lease_ttl_s
        self.launcher.claim(run_id)
        try:
            await self.store.runs.insert(run_id, flow_id, **fields)
            return self.launcher.launch(run_id, flow, how, leased=True, owner_id=fields.get("owner_id"))
        finally:
            self.launcher.unclaim(run_id)

    async def start(
        self,
        flow_id: str,
        inputs: dict[str, Any] | None,
        *,
        version: str | int | None = None,
        owner_id: str | None = None,
    ) -> tuple[str, asyncio.Task[RunResult | None]]:
        """Validate, create the run row (queued, leased by this process) and start executing it,
        acting as `owner_id` (the caller; None: the flow's owner)."""
        if inputs is not None and not isinstance(inputs, dict):
            raise Invalid("inputs must be a JSON object")
        flow, number, draft = await self.flows.resolve_for_run(flow_id, version)
        data = validate_inputs(flow, inputs)
        if owner_id is None:
            row = await self.store.flows.get(flow_id)
            owner_id = row.owner_id if row is not None else None
        return await self._start_new(flow_id, flow, data, version=number, document=draft, owner_id=owner_id)

    async def _start_new(
        self,
        flow_id: str,
        flow: Flow,
        data: dict[str, Any],
        *,
        version: int | None,
        document: dict[str, Any] | None,
        owner_id: str | None,
    ) -> tuple[str, asyncio.Task[RunResult | None]]:
        """A new run of `flow` with validated inputs: its row, then its execution."""
        run_id = uuid.uuid4().hex
        task = await self._create_and_launch(
            run_id,
            flow_id,
            flow,
            Start(data),
            inputs=data,
            version=version,
            document=document,
            variables=flow.doc.variables,
            owner_id=owner_id,
        )
        return run_id, task

    async def start_document(
        self,
        flow_id: str,
        document: dict[str, Any],
        inputs: dict[str, Any] | None,
        *,
        owner_id: str | None,
    ) -> tuple[str, asyncio.Task[RunResult | None]]:
        """Start a run of `document`, a version of `flow_id` nobody saved (the assistant's working
        flow), as a draft run of that flow: the run keeps the document, shows in the flow's run
        history and streams like any run. The caller has checked that `owner_id` may run the flow."""
        if inputs is not None and not isinstance(inputs, dict):
            raise Invalid("inputs must be a JSON object")
        flow = self.flows.compile(flow_id, document)
        data = validate_inputs(flow, inputs)
        return await self._start_new(flow_id, flow, data, version=None, document=document, owner_id=owner_id)

    async def run_sync(
        self,
        flow_id: str,
        inputs: dict[str, Any] | None,
        *,
        version: str | int | None = None,
        owner_id: str | None = None,
    ) -> dict[str, Any]:
        run_id, task = await self.start(flow_id, inputs, version=version, owner_id=owner_id)
        if self.launcher.queue is not None:
            await self.wait(run_id)
        else:
            self.views.keep(run_id, await asyncio.shield(task))
        return await self.views.result_view(run_id)

    async def wait(self, run_id: str, timeout: float | None = None) -> None:
        """Wait until the run stops executing here (no-op when it does not execute here). In
        queue mode: until it is neither queued nor running (executing on a worker)."""
        if self.launcher.queue is not None:
            await asyncio.wait_for(self.launcher.until_stopped(run_id, 0), timeout)
            return
        task = self.launcher.executing(run_id)
        if task is not None:
            self.views.keep(run_id, await asyncio.wait_for(asyncio.shield(task), timeout))

    async def retry(self, run_id: str, from_node: str, *, owner_id: str | None = None) -> str:
        """A new run reusing this one's recorded outputs, from `from_node` on; returns its id.
        It acts as `owner_id` (the caller; None: as the run it retries)."""
        row = await self.views.require(run_id)
        if row.status not in TERMINAL_RUN_STATUSES and row.status != RunStatus.WAITING:
            raise Conflict(f"run {run_id!r} is {row.status}; retry it when it has stopped")
        flow = await self.flows.document_for_run(row.flow_id, row.version, row.document)
        if not isinstance(from_node, str) or from_node.lower() not in flow.plan.by_key:
            raise Invalid(f"flow {row.flow_id!r} has no node {from_node!r}")
        new_id = uuid.uuid4().hex
        await self._create_and_launch(
            new_id,
            row.flow_id,
            flow,
            Retry(run_id, from_node),
            inputs=row.inputs,
            version=row.version,
            document=row.document,
            variables=row.variables,
            owner_id=owner_id if owner_id is not None else row.owner_id,
        )
        return new_id

    async def execute_queued(self, message: QueuedRun) -> None:
        """A worker's side of queue mode: take the run's lease over from the queue (waiting while
        another process still holds it: it is stopping the run, or executing it after a second
        delivery), then execute what the message asks through the launcher, and return when the
        run stops. The lease makes sure one process executes the run."""
        launcher, runs, run_id = self.launcher, self.store.runs, message.run_id
        while True:
            running = launcher.executing(run_id)
            if running is not None:  # this process took it over already (crash recovery)
                await asyncio.shield(running)
                return
            # The queue hands the run over: one statement takes the lease and reads the row (and
            # the id of its flow version: a version compiled here already is not read again).
            taken = await runs.take_over_with_version(
                run_id, launcher.owner, self.settings.lease_ttl_s, from_owner=QUEUE_OWNER
            )
            if taken is not None:
                row, version_row = taken
                break
            current = await runs.get(run_id)
            if current is None or current.status in TERMINAL_RUN_STATUSES:
                return
            await asyncio.sleep(LEASE_WAIT_POLL_S)
        launcher.claim(run_id)  # recovery here leaves it alone until it executes
        try:
            how = queued_launch(message, row)  # as the row is now that this process holds the lease
            if how is None or launcher.executing(run_id) is not None:
                if launcher.executing(run_id) is None:
                    await runs.release_lease(run_id, launcher.owner)
                return
            if row.cancel_requested:
                await launcher.end_idle(run_id, RunStatus.CANCELLED, None)
                await runs.release_lease(run_id, launcher.owner)
                return
            try:
                flow = await self.flows.document_for_run(
                    row.flow_id, row.version, row.document, version_row=version_row
                )
            except ServiceError as exc:
                await launcher.end_idle(run_id, RunStatus.FAILED, f"cannot load the flow: {exc.message}")
                await runs.release_lease(run_id, launcher.owner)
                return
            task = launcher.launch(run_id, flow, how, leased=True, owner_id=row.owner_id)
        finally:
            launcher.unclaim(run_id)
        await asyncio.shield(task)

    async def cancel(self, run_id: str) -> dict[str, Any]:
        row = await self.views.require(run_id)
        if row.status in TERMINAL_RUN_STATUSES:
            raise Conflict(f"run {run_id!r} already {row.status}")
        task = self.launcher.executing(run_id)
        if task is not None:
            await self.store.runs.request_cancel(run_id)
            self.cancels.cancel(run_id)
            try:
                await asyncio.wait_for(asyncio.shield(task), CANCEL_WAIT_S)
            except TimeoutError:
                pass
        else:
            # The flag and the announcement (one transaction on PostgreSQL); a run that turns
            # out to execute nowhere is ended below, and the announcement reaches no one.
            await self.broadcast.publish(run_id)
            async with self.launcher.lock(run_id):
                row = await self.views.require(run_id)
                lease_dead = row.lease_owner is None or (row.lease_until or 0) < time.time()
                idle = row.status in (RunStatus.WAITING, RunStatus.QUEUED)
                if idle or (row.status == RunStatus.RUNNING and lease_dead):
                    await self.launcher.end_idle(run_id, RunStatus.CANCELLED, None)
                # else: another process executes it: the broadcast (or its lease keeper) cancels it.
            if self.launcher.queue is not None:  # queue mode: wait (a while) for its worker to stop it
                try:
                    await asyncio.wait_for(self.launcher.until_stopped(run_id, -1), CANCEL_WAIT_S)
                except TimeoutError:
                    pass
        return run_summary(await self.views.require(run_id))


__all__ = ["RunControl"]
