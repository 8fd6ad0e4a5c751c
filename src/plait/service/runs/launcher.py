"""`RunLauncher`: the one code path that executes runs in this process.

Starting a run, answering a waiting node, a retry from a node, continuing a run after a crash and
failing a node whose task expired are all one `launch(run_id, flow, how)`: `how` says which engine
entry point (`Start`, `Resume`, `Retry`), and the launcher builds the engine call once: flow,
checkpointer, event sink, variables, the flow library for sub-flows, and one `RunServices`
(providers, tools, component source, cancel source, HTTP and MCP connection pools). It runs the
call as the run's asyncio task under the run's lease (its checkpoints fenced by it:
plait.store.fencing), turns unexpected failures into a failed run, writes the human-task rows
the run's `waiting` events ask for, and lets go of the run (lease, caches, event history) when
the task ends. A run whose lease another process took over (this one stalled past it) stops here
at once and writes nothing more (`lost`, called by the lease keeper; a checkpoint refused for the
lease, `LeaseLost`, does the same).

Runs execute in-process as asyncio tasks (PLAIT_EXECUTOR=inline), persisted through the store's
`SqlCheckpointer`. In queue mode (PLAIT_EXECUTOR=celery) `launch` sends the run to the queue
instead (plait.workers): the run is leased to the queue until a `plait worker` takes it over and
executes it through its own launcher, so nothing executes here and recovery here leaves every run
to the workers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import plait
from plait import Flow, ResumeError, RunResult
from plait.engine import events as ev
from plait.engine.events import Event
from plait.engine.services import RunServices
from plait.engine.status import TERMINAL_RUN_STATUSES, RunStatus
from plait.llm.registry import ModelEgress
from plait.net.http import HttpClients
from plait.net.redact import NO_SECRETS, SecretMask
from plait.nodes.builtin.component import ComponentSource
from plait.service.bus import EventBus
from plait.service.errors import Conflict, ServiceError
from plait.service.knowledge import KnowledgeService
from plait.service.runs.cancels import RunCancels
from plait.service.runs.secrets import RunSecrets, masked_result
from plait.service.settings import Settings
from plait.store import LeaseLost, Store
from plait.tools.mcp import MCPConnections
from plait.workers import QUEUE_OWNER, QueuedRun, RunQueue
from plait.workers.messages import QUEUE_HOLD_S
from plait.workers.queue import QueueUnavailable

log = logging.getLogger("plait.service")


@dataclass(frozen=True, slots=True)
class Start:
    """A new run with these (validated) inputs; its row exists, queued."""

    inputs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Resume:
    """Continue a run from its checkpoint: answer `node_id` with `data` (None data: the node's
    task expired), or with neither just continue (crash recovery; waiting nodes keep waiting)."""

    data: Any = None
    node_id: str | None = None


@dataclass(frozen=True, slots=True)
class Retry:
    """A new run reusing the recorded outputs of `source_run_id` except `from_node` and after."""

    source_run_id: str
    from_node: str


Launch = Start | Resume | Retry


def queued_message(run_id: str, how: Launch) -> QueuedRun:
    """The queue message that asks a worker to do `how` with the run."""
    if isinstance(how, Start):
        return QueuedRun(run_id, "start")  # the inputs are on the run's row
    if isinstance(how, Resume):
        return QueuedRun(run_id, "resume", data=how.data, node_id=how.node_id)
    return QueuedRun(run_id, "retry", source_run_id=how.source_run_id, from_node=how.from_node)


_OPEN = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING)
_STOPPED = (RunStatus.CANCELLED, RunStatus.FAILED)  # ends that may leave a sub-flow child open

# Where sub-flow nodes find the flows they name by id (the service's flow library).
SubflowSource = Callable[[str], Awaitable[Flow | None]]


class RunLauncher:
    """Executes runs here, one asyncio task per run, and knows which runs are executing."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        bus: EventBus,
        cancels: RunCancels,
        *,
        owner: str,
        flows: SubflowSource,
        components: ComponentSource | None = None,
        http: HttpClients | None = None,
        mcp: MCPConnections | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.bus = bus
        self.cancels = cancels
        self.owner = owner  # this process' name in leases
        self.flows = flows  # sub-flows by id (the flow library)
        self.secrets = RunSecrets(store.variables)  # each run's `env` and the mask of its secrets
        self.knowledge = KnowledgeService(store)  # each run searches its owner's knowledge bases
        # What every run of the service gets from outside the flow (providers and tools, and
        # whatever is None here: the engine's defaults); cancel requests reach the runs through
        # `cancels`; the deployment's budgets (output size, sub-flow depth, node executions) apply.
        self.services = RunServices(
            component_source=components,
            cancels=cancels,
            http=http,
            mcp=mcp,
            limits=settings.limits,
            artifacts=store.artifacts,  # the run's files are kept in the store, downloadable by URL
        )
        # What every engine call of the launcher passes (with the run's `env`).
        self._engine_options: dict[str, Any] = {
            "checkpointer": store.checkpointer,
            "on_event": self._sink,
            "flows": flows,
            "services": self.services,
        }
        self._tasks: dict[str, asyncio.Task[RunResult | None]] = {}
        self._row_tasks: dict[str, list[asyncio.Task[Any]]] = defaultdict(list)
        self._locks: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._claimed: set[str] = set()  # runs being created here (not yet executing)
        self._lost: set[str] = set()  # runs stopped here because another process took them over
        # A cap on the runs executing here at once (`plait worker --concurrency`): queued runs and
        # the ones recovery takes alike; a run past it waits for a slot (holding its lease).
        cap = settings.max_active_runs
        self.slots: asyncio.Semaphore | None = asyncio.Semaphore(cap) if cap > 0 else None
        # Queue mode: runs are sent to the workers, not executed here.
        self.queue: RunQueue | None = None
        if settings.executor == "celery" and settings.redis_url:
            self.queue = RunQueue(settings.redis_url)

    # ------------------------------------------------------------------ what executes here
    @property
    def active(self) -> set[str]:
        """The runs executing in this process."""
        return set(self._tasks)

    def executing(self, run_id: str) -> asyncio.Task[RunResult | None] | None:
        """The task of the run when it executes here."""
        return self._tasks.get(run_id)

    def has_room(self) -> bool:
        """Whether one more run may execute here now (always, without a cap)."""
        cap = self.settings.max_active_runs
        return cap <= 0 or len(self._tasks) < cap

    def is_claimed(self, run_id: str) -> bool:
        """Whether this process is creating the run (its row may not be leased yet). In queue
        mode every run is the workers': crash recovery here leaves them all alone."""
        return self.queue is not None or run_id in self._claimed

    def claim(self, run_id: str) -> None:
        """Mark a run this process is creating, so that recovery leaves it alone meanwhile
        (until `unclaim`, once it executes or its creation failed)."""
        self._claimed.add(run_id)

    def unclaim(self, run_id: str) -> None:
        self._claimed.discard(run_id)

    def lock(self, run_id: str) -> asyncio.Lock:
        """The lock that serialises answering, cancelling and expiring one run."""
        lock = self._locks.get(run_id)
        if lock is None:
            lock = self._locks[run_id] = asyncio.Lock()
        return lock

    def lost(self, run_id: str) -> bool:
        """Another process holds the lease of a run executing here (this one stalled past it,
        the lease keeper found out): stop executing it at once, writing nothing more (its
        checkpoints are refused anyway). False when the run's engine is not executing here
        (it has finished, or has not taken the lease yet)."""
        task = self._tasks.get(run_id)
        if task is None or task.done() or not self.store.checkpointer.holds(run_id):
            return False
        log.warning("run %s: another process took its lease over; stopping it here", run_id)
        self._lost.add(run_id)
        task.cancel()
        return True

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """Run `coro` in the background (cancelled by `close`)."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def close(self) -> None:
        """Interrupt (not cancel) every run executing here; their leases are released, so the
        next start continues them from their last checkpoint."""
        tasks = list(self._tasks.values()) + list(self._background)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.queue is not None:
            self.queue.close()

    # ------------------------------------------------------------------ launching
    def launch(
        self, run_id: str, flow: Flow, how: Launch, *, leased: bool = False, owner_id: str | None = None
    ) -> asyncio.Task[RunResult | None]:
        """Execute the run as a task. `leased`: this process has just taken the run's lease (in
        the statement that created the row), so it is not taken again. `owner_id`: the user the
        run acts as (its variables are the run's `env`; None: deployment-wide ones only)."""
        if self.queue is not None:
            return self.spawn(self._send(queued_message(run_id, how), held=leased))
        if run_id in self._tasks:
            raise Conflict(f"run {run_id!r} is already executing")
        self.cancels.expect(run_id)
        task = asyncio.get_running_loop().create_task(
            self._execute(run_id, flow, how, leased, owner_id), name=f"plait-run-{run_id}"
        )
        self._tasks[run_id] = task

        def _done(t: asyncio.Task[Any]) -> None:
            if self._tasks.get(run_id) is t:  # not a later launch of the same run
                self._tasks.pop(run_id, None)
                self.cancels.forget(run_id)

        task.add_done_callback(_done)
        return task

    async def _send(self, message: QueuedRun, *, held: bool) -> None:
        """Queue mode, in the background: `send`, logging a queue that cannot be reached. A queued
        run is then left without a lease, so that a worker's crash recovery starts it."""
        try:
            await self.send(message, held=held)
        except QueueUnavailable as exc:
            log.error("%s", exc.with_hint())

    async def send(self, message: QueuedRun, *, held: bool = False) -> None:
        """Queue mode: lease the run to the queue (unless its row was created so: `held`) and
        send the message. A worker still stopping the run may hold the lease: the worker that
        takes the message waits for it. QueueUnavailable when Redis cannot be reached (the lease
        is given back first), so the caller can keep what the message stands for to retry."""
        assert self.queue is not None, "send is for queue mode"
        runs = self.store.runs
        if not held:
            await runs.acquire_lease(message.run_id, QUEUE_OWNER, QUEUE_HOLD_S)
        try:
            await self.queue.enqueue(message)
        except QueueUnavailable:
            await runs.release_lease(message.run_id, QUEUE_OWNER)
            raise

    async def until_stopped(self, run_id: str, after_seq: int, *, poll_s: float = 0.05) -> None:
        """Queue mode: wait until the run stops executing (on a worker): its status is no longer
        queued or running and its log grew past `after_seq` (the `run_finished` of this
        execution). Reads the run's row every `poll_s` (up to 0.5 s)."""
        active = (RunStatus.QUEUED, RunStatus.RUNNING)
        while True:
            row = await self.store.runs.get(run_id)
            if row is None or (row.status not in active and row.last_seq > after_seq):
                return
            await asyncio.sleep(poll_s)
            poll_s = min(poll_s * 1.5, 0.5)

    def _engine_call(
        self,
        run_id: str,
        flow: Flow,
        how: Launch,
        env: dict[str, Any],
        mask: SecretMask,
        owner_id: str | None = None,
        egress: ModelEgress | None = None,
    ) -> Awaitable[RunResult]:
        """The engine entry point for `how`, with everything a run of this service gets (and the
        mask of its secrets: what leaves the run is masked, see plait.engine.journal; and the SSRF
        policy of its model calls, plait.llm.registry.ModelEgress)."""
        services = self.services.child(
            mask=mask, knowledge=self.knowledge.for_owner(owner_id), providers=egress or ModelEgress()
        )
        common = {**self._engine_options, "services": services}
        if isinstance(how, Start):
            return plait.run(flow, how.inputs, run_id=run_id, env=env, **common)
        if isinstance(how, Resume):
            return plait.resume(flow, run_id, how.data, node_id=how.node_id, env=env, **common)
        return plait.retry(flow, how.source_run_id, how.from_node, new_run_id=run_id, env=env, **common)

    async def _model_egress(self, owner_id: str | None) -> ModelEgress:
        """The SSRF policy of the run's model calls: loopback only for an administrator's runs."""
        user = await self.store.users.get(owner_id) if owner_id else None
        return ModelEgress(owner_is_admin=user is not None and user.role == "admin" and not user.disabled)

    async def _execute(
        self, run_id: str, flow: Flow, how: Launch, leased: bool, owner_id: str | None
    ) -> RunResult | None:
        runs = self.store.runs
        if not leased and not await runs.acquire_lease(run_id, self.owner, self.settings.lease_ttl_s):
            log.warning("run %s is owned by another process; not executing it here", run_id)
            return None
        finished = False  # the checkpointer's finish of a terminal run released the lease
        mask = NO_SECRETS
        owner = self.owner
        # From here on every checkpoint of the run is written only while this process holds the
        # lease (plait.store.fencing).
        self.store.checkpointer.hold(run_id, owner)
        try:
            # A run this process just created and leased: a cancel request reaches it through
            # the cancel source (the lease keeper passes on the database's), so skip the read.
            if not leased and await runs.is_cancel_requested(run_id):
                row = await runs.get(run_id)
                if row is not None and row.status not in TERMINAL_RUN_STATUSES:
                    await self.end_idle(run_id, RunStatus.CANCELLED, None)
                return None
            env, mask = await self.secrets.for_run(owner_id)
            egress = await self._model_egress(owner_id)
            if self.slots is None:
                result = await self._engine_call(run_id, flow, how, env, mask, owner_id, egress)
            else:
                async with self.slots:
                    result = await self._engine_call(run_id, flow, how, env, mask, owner_id, egress)
            finished = result.status in TERMINAL_RUN_STATUSES
            await self.flush_rows(run_id)
            if result.status == RunStatus.CANCELLED:
                await self.store.human_tasks.cancel_for_run(run_id)
            if result.status in _STOPPED:
                await self.end_children(run_id)
            return masked_result(mask, result)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if run_id in self._lost and task is not None and task.uncancel() == 0:
                return None  # stopped by `lost`: the run is another process' now
            raise
        except LeaseLost as exc:  # a checkpoint found the lease taken: nothing was written
            log.warning("%s; stopped here", exc.message)
            return None
        except ResumeError as exc:  # a stale answer: the run stays as it is
            log.warning("run %s: %s", run_id, exc)
            return None
        except ServiceError as exc:
            await self.end_idle(run_id, RunStatus.FAILED, mask.text(exc.message), owner=owner)
            return None
        except Exception as exc:  # noqa: BLE001 - the run fails, the server stays up
            log.exception("run %s crashed", run_id)
            try:
                error = mask.text(f"{type(exc).__name__}: {exc}")
                await self.end_idle(run_id, RunStatus.FAILED, error, owner=owner)
            except Exception:  # noqa: BLE001
                log.exception("cannot record the failure of run %s", run_id)
            return None
        finally:
            self._lost.discard(run_id)
            self._row_tasks.pop(run_id, None)
            checkpointer = self.store.checkpointer
            checkpointer.forget(run_id)
            if isinstance(how, Retry):
                checkpointer.forget(how.source_run_id)  # loaded (and cached) to be reused
            self.bus.release(run_id)
            if not finished:
                try:
                    await asyncio.shield(runs.release_lease(run_id, self.owner))
                except (Exception, asyncio.CancelledError):  # noqa: BLE001
                    pass

    async def end_idle(
        self, run_id: str, status: RunStatus, error: str | None, *, owner: str | None = None
    ) -> None:
        """End a run that is not executing (waiting, queued, orphaned): status, tasks, its open
        sub-flow children, and a `run_finished` event so that event streams end. `owner`: only
        while that process holds the run's lease and the run is open (a run whose execution here
        crashed; when another process took it over meanwhile, nothing is written)."""
        ended = await self.store.runs.set_status(run_id, status, error=error, expected=_OPEN, owner=owner)
        if owner is not None and not ended:
            log.warning("run %s: not ended here, the run is no longer open and leased here", run_id)
            return
        await self.end_children(run_id)
        await self.store.human_tasks.cancel_for_run(run_id)
        seq = await self.store.events.last_seq(run_id) + 1
        finished = ev.RunFinished(status, {}, {}, error=error or None)
        event = Event(seq, ev.RUN_FINISHED, run_id, time.time(), None, finished)
        try:
            await self.store.events.append(run_id, [event])
        except Exception:  # noqa: BLE001 - a concurrent writer took the seq; the status is what counts
            log.warning("could not append run_finished to run %s", run_id)
            return
        self.bus.publish(event)
        self.bus.release(run_id)

    async def end_children(self, run_id: str) -> None:
        """The run stopped (cancelled, failed, or ended while idle): its sub-flow child runs still
        open stopped with it (plait.engine.children; the parent continues a child, nothing else
        does), so they end `cancelled`, and theirs too."""
        for child in await self.store.runs.list_runs(parent_run_id=run_id, status=_OPEN, limit=1000):
            await self.end_idle(child.id, RunStatus.CANCELLED, None)

    # ------------------------------------------------------------------ events and task rows
    def _sink(self, event: Event) -> None:
        self.bus.publish(event)
        if event.type == ev.WAITING and isinstance(event.data, ev.Waiting):
            task = asyncio.get_running_loop().create_task(
                self._create_task_row(event.run_id, event.data.task)
            )
            self._row_tasks[event.run_id].append(task)

    async def _create_task_row(self, run_id: str, interrupt: dict[str, Any]) -> None:
        node_id = str(interrupt.get("node_id") or interrupt.get("id"))
        if await self.store.human_tasks.pending_for_node(run_id, node_id) is None:
            await self.store.human_tasks.create_from_interrupt(run_id, interrupt)

    async def rows_written(self, run_id: str) -> None:
        """Wait until the task rows the run's `waiting` events asked for are written (a reader
        reacting to such an event must find its task)."""
        creating = self._row_tasks.get(run_id)
        while creating and not all(t.done() for t in creating):
            await asyncio.gather(*list(creating), return_exceptions=True)

    async def flush_rows(self, run_id: str) -> None:
        """As `rows_written`, then forget them. They stay listed until then, so a concurrent
        reader waits for them too."""
        await self.rows_written(run_id)
        self._row_tasks.pop(run_id, None)


__all__ = ["Launch", "Resume", "Retry", "RunLauncher", "Start", "SubflowSource"]
