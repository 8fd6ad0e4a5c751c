"""`HumanTasks`: the tasks runs wait on. Read one, answer it (by its token, or by run and node),
and expire the ones past their deadline, which fails their node.

An answer is checked by the waiting node against the task as it was shown, recorded at most once
(a conditional UPDATE), and the run resumes in the background through the launcher. Answers,
cancels and expiries of one run are serialised by the run's lock.

In queue mode (PLAIT_EXECUTOR=celery) an answer is recorded only once its resume message is in
the queue, so that an answer is never marked submitted without a message to resume the run:
this process takes the run's lease (another process answering the same run meanwhile gets 409,
and a worker that receives the message waits for it), sends the message, records the answer, and
lets go of the lease. When Redis cannot be reached nothing is recorded: 503, the task stays open,
and the person sends the answer again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from plait import Flow, NodeError
from plait.engine.status import RunStatus, TaskStatus
from plait.service.errors import Conflict, Gone, Invalid, NotFound, ServiceError
from plait.service.flows import FlowService
from plait.service.runs.launcher import Resume, RunLauncher, queued_message
from plait.service.runs.views import PENDING_TASK, RunViews, task_view
from plait.store import Store
from plait.store.models import HumanTask, Run
from plait.workers import RunQueue
from plait.workers.queue import QueueUnavailable

log = logging.getLogger("plait.service")


class AnswerNotQueued(ServiceError):
    """Queue mode: the answer's resume could not be sent (Redis unreachable); nothing was recorded."""

    status = 503
    code = "queue_unavailable"


def problems_of_message(message: str) -> list[dict[str, Any]]:
    """A human node's "invalid human input: comment: required; amount: ..." as problems (the shape
    every 422 of the API uses), each naming its field as `values.<name>` when it can."""
    prefix = "invalid human input: "
    parts = [message]
    if message.startswith(prefix):
        parts = [p.strip() for p in message[len(prefix) :].split(";")]
    problems: list[dict[str, Any]] = []
    for part in filter(None, parts):
        problem: dict[str, Any] = {"code": "invalid_input", "message": part}
        name = part.split(":", 1)[0].strip()
        if ":" in part and name.replace("_", "").replace("-", "").isalnum():
            problem["field"] = "action" if name == "action" else f"values.{name}"
        problems.append(problem)
    return problems


def check_answer(flow: Flow, task: HumanTask, data: Any) -> Any:
    """The node's own check of an answer, against the task as it was shown (an edge-LLM decider
    may have added fields); the engine checks it again against the interrupt when resuming."""
    idx = flow.plan.by_key.get(task.node_id.lower())
    if idx is None:
        raise Conflict(f"node {task.node_id!r} is not waiting for input")
    shown = {
        "kind": task.kind,
        "payload": {"message": task.message, "fields": task.fields, "actions": task.actions},
    }
    try:
        return flow.plan.nodes[idx].node.accept_resume(data, shown)
    except NodeError as exc:
        details: dict[str, Any] = {"problems": problems_of_message(exc.message)}
        if exc.hint:
            details["hint"] = exc.hint
        raise Invalid(exc.message, details=details, code="invalid_input") from exc


class HumanTasks:
    def __init__(self, store: Store, flows: FlowService, launcher: RunLauncher, views: RunViews) -> None:
        self.store = store
        self.flows = flows
        self.launcher = launcher
        self.views = views

    async def get_task(self, token: str) -> dict[str, Any]:
        task = await self.store.human_tasks.get(token)
        if task is None:
            raise NotFound("no such task")
        return task_view(task)

    async def _stopped(self, run_id: str) -> None:
        """Wait until the run stops executing here (a non-blocking interrupt keeps it running)."""
        active = self.launcher.executing(run_id)
        if active is not None:
            await asyncio.shield(active)

    async def resume(self, run_id: str, node_id: str | None, data: Any) -> dict[str, Any]:
        """Answer a waiting node (the interrupt id is the node id); returns the task answered."""
        async with self.launcher.lock(run_id):
            await self._stopped(run_id)
            await self.launcher.flush_rows(run_id)
            row = await self.views.require(run_id)
            if row.status != RunStatus.WAITING:
                raise Conflict(f"run {run_id!r} is {row.status}, not waiting for input")
            pending = await self.store.human_tasks.list_tasks(run_id=run_id, status=PENDING_TASK)
            if node_id is None:
                if len(pending) != 1:
                    names = ", ".join(t.node_id for t in pending) or "none"
                    raise Invalid(f"say which node to resume with node_id (waiting: {names})")
                task = pending[0]
            else:
                found = next((t for t in pending if t.node_id.lower() == node_id.lower()), None)
                if found is None:
                    names = ", ".join(t.node_id for t in pending) or "none"
                    raise Conflict(f"node {node_id!r} is not waiting for input (waiting: {names})")
                task = found
            return await self._answer(row, task, data)

    async def submit_task(self, token: str, data: Any) -> dict[str, Any]:
        task = await self.store.human_tasks.get(token)
        if task is None:
            raise NotFound("no such task")
        async with self.launcher.lock(task.run_id):
            await self._stopped(task.run_id)
            task = await self.store.human_tasks.get(token)
            assert task is not None
            if task.status == TaskStatus.EXPIRED or (
                task.status == PENDING_TASK and task.expires_at is not None and task.expires_at <= time.time()
            ):
                if task.status == PENDING_TASK:
                    await self.expire_due()
                raise Gone("this task expired")
            if task.status != PENDING_TASK:
                raise Conflict(f"this task was already {task.status}")
            row = await self.views.require(task.run_id)
            if row.status != RunStatus.WAITING:
                raise Conflict(f"the run is {row.status}, not waiting for input")
            return await self._answer(row, task, data)

    async def _answer(self, row: Run, task: HumanTask, data: Any) -> dict[str, Any]:
        """Validate, mark the task submitted (at most once), resume the run in the background.
        Call with the run's lock held."""
        flow = await self.flows.document_for_run(row.flow_id, row.version, row.document)
        if task.expires_at is not None and task.expires_at <= time.time():
            await self.expire_due()
            raise Gone(f"the task of node {task.node_id!r} expired")
        clean = check_answer(flow, task, data)
        if self.launcher.queue is not None:
            return await self._answer_queued(self.launcher.queue, row, task, clean)
        done = await self._submit(task, clean)
        self.launcher.launch(row.id, flow, Resume(clean, task.node_id), owner_id=row.owner_id)
        return task_view(done)

    async def _submit(self, task: HumanTask, clean: Any) -> HumanTask:
        """Record the answer (at most once); Gone or Conflict when the task is no longer open."""
        done = await self.store.human_tasks.submit(task.token, clean)
        if done is None:
            again = await self.store.human_tasks.get(task.token)
            status = again.status if again is not None else "unknown"
            if status == TaskStatus.EXPIRED:
                raise Gone(f"the task of node {task.node_id!r} expired")
            raise Conflict(f"the task was already {status}")
        return done

    async def _answer_queued(self, queue: RunQueue, row: Run, task: HumanTask, clean: Any) -> dict[str, Any]:
        """Queue mode: under the run's lease, send the resume, then record the answer (see the
        module docstring). AnswerNotQueued (503) when the queue cannot be reached: the task stays
        open."""
        runs, owner = self.store.runs, self.launcher.owner
        if not await runs.acquire_lease(row.id, owner, self.launcher.settings.lease_ttl_s):
            raise Conflict(
                f"run {row.id!r} is busy (another answer, or a worker continuing it); try again",
                code="run_busy",
            )
        try:
            now = await self.store.human_tasks.get(task.token)
            if now is None or now.status != PENDING_TASK:
                raise Conflict(f"the task was already {now.status if now is not None else 'removed'}")
            try:
                await queue.enqueue(queued_message(row.id, Resume(clean, task.node_id)))
            except QueueUnavailable as exc:
                log.error("answer to run %s not recorded: %s", row.id, exc.message)
                hint = "the task is still open: send the answer again in a moment"
                raise AnswerNotQueued(
                    "the answer was not recorded: the run queue (Redis) cannot be reached",
                    hint=hint,
                    details={"hint": hint},
                ) from exc
            # Sent: record it. Only an expiry in the last instant can refuse it now; the worker
            # then finds the node failed (the expiry's resume), or still waiting and answered.
            return task_view(await self._submit(task, clean))
        finally:
            await runs.release_lease(row.id, owner)

    async def expire_due(self) -> int:
        """Expire the pending tasks past their deadline; their nodes fail (in the background)."""
        expired = await self.store.human_tasks.expire_due()
        for task in expired:
            self.launcher.spawn(self._fail_expired(task))
        return len(expired)

    async def _fail_expired(self, task: HumanTask) -> None:
        async with self.launcher.lock(task.run_id):
            await self._stopped(task.run_id)
            row = await self.store.runs.get(task.run_id)
            if row is None or row.status != RunStatus.WAITING:
                return
            try:
                flow = await self.flows.document_for_run(row.flow_id, row.version, row.document)
            except ServiceError as exc:
                await self.launcher.end_idle(row.id, RunStatus.FAILED, f"expired task; {exc.message}")
                return
            # No answer for the node: the engine fails it as expired.
            how = Resume(None, task.node_id)
            if self.launcher.queue is None:
                self.launcher.launch(row.id, flow, how, owner_id=row.owner_id)
                return
            try:
                await self.launcher.send(queued_message(row.id, how))
            except QueueUnavailable as exc:
                # Not lost: the task is pending again (past its deadline, so it takes no answer)
                # and a later sweep expires it again once the queue is back.
                log.warning("expiry of run %s's task not sent, retried later: %s", row.id, exc.message)
                await self.store.human_tasks.reopen_expired(task.token)


__all__ = ["AnswerNotQueued", "HumanTasks", "check_answer", "problems_of_message"]
