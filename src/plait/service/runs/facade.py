"""`RunService`: the run use cases the front doors call (`services.runs.<method>`), put together
from the parts that do the work:

    launcher.py     RunLauncher: the one code path that executes runs (start, resume, retry, recovery)
    control.py      RunControl: start (background, sync), retry from a node, cancel
    views.py        RunViews: listings, the detail of a run, a sync run's answer, decisions
    stream.py       RunStream: stored then live events, with heartbeats
    human_tasks.py  HumanTasks: read, answer and expire the tasks runs wait on
    recovery.py     Recovery: crash recovery, the lease keeper, the sweeper
    cancels.py      RunCancels: the cancel source of the runs executing here
    broadcast.py    CancelBroadcast: cancel requests between servers (Redis, PostgreSQL NOTIFY, polling)

Each part takes its dependencies explicitly; this class only builds them and forwards calls.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import secrets
import socket
from collections.abc import AsyncIterator
from typing import Any

from plait import RunResult
from plait.engine.events import Event
from plait.net.http import HttpClients
from plait.nodes.builtin.component import ComponentSource
from plait.service.bus import EventBus
from plait.service.flows import FlowService
from plait.service.runs.broadcast import CancelBroadcast, choose_broadcast
from plait.service.runs.cancels import RunCancels
from plait.service.runs.control import RunControl
from plait.service.runs.human_tasks import HumanTasks
from plait.service.runs.launcher import RunLauncher
from plait.service.runs.recovery import Recovery
from plait.service.runs.stream import RunStream
from plait.service.runs.views import RunViews
from plait.service.settings import Settings
from plait.store import Store
from plait.store.models import Run
from plait.tools.mcp import MCPConnections


def process_owner() -> str:
    """This process' name in run leases: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class RunService:
    def __init__(
        self,
        store: Store,
        flows: FlowService,
        settings: Settings,
        bus: EventBus | None = None,
        *,
        components: ComponentSource | None = None,
        http: HttpClients | None = None,
        mcp: MCPConnections | None = None,
    ) -> None:
        self.store = store
        self.flows = flows
        self.settings = settings
        self.bus = bus or EventBus()
        self.owner = process_owner()
        self.cancels = RunCancels()
        self.broadcast: CancelBroadcast = choose_broadcast(store, settings.redis_url)
        self.launcher = RunLauncher(
            store,
            settings,
            self.bus,
            self.cancels,
            owner=self.owner,
            flows=flows.load_subflow,
            components=components,
            http=http,
            mcp=mcp,
        )
        self.views = RunViews(store, self.bus, self.launcher)
        self.control = RunControl(
            store, flows, settings, self.launcher, self.views, self.cancels, self.broadcast
        )
        self.tasks = HumanTasks(store, flows, self.launcher, self.views)
        self.streams = RunStream(store, self.bus, settings, self.views, self.launcher)
        self.recovery = Recovery(
            store, flows, settings, self.launcher, self.cancels, self.tasks, self.broadcast
        )

    # ------------------------------------------------------------------ lifecycle
    async def start_background(self) -> None:
        """Crash recovery now, then the lease keeper, the cancel listener and the sweeper."""
        await self.recovery.start()

    async def close(self) -> None:
        """Stop: executing runs are interrupted (not cancelled) and their leases released, so
        the next start continues them from their last checkpoint."""
        await self.recovery.close()
        await self.launcher.close()
        await self.broadcast.close()

    @property
    def active(self) -> set[str]:
        """The runs executing in this process."""
        return self.launcher.active

    async def recover(self) -> builtins.list[str]:
        return await self.recovery.recover()

    # ------------------------------------------------------------------ start and stop
    async def start(
        self,
        flow_id: str,
        inputs: dict[str, Any] | None,
        *,
        version: str | int | None = None,
        owner_id: str | None = None,
    ) -> tuple[str, asyncio.Task[RunResult | None]]:
        return await self.control.start(flow_id, inputs, version=version, owner_id=owner_id)

    async def start_document(
        self, flow_id: str, document: dict[str, Any], inputs: dict[str, Any] | None, *, owner_id: str | None
    ) -> tuple[str, asyncio.Task[RunResult | None]]:
        return await self.control.start_document(flow_id, document, inputs, owner_id=owner_id)

    async def run_sync(
        self,
        flow_id: str,
        inputs: dict[str, Any] | None,
        *,
        version: str | int | None = None,
        owner_id: str | None = None,
    ) -> dict[str, Any]:
        return await self.control.run_sync(flow_id, inputs, version=version, owner_id=owner_id)

    async def wait(self, run_id: str, timeout: float | None = None) -> None:
        await self.control.wait(run_id, timeout)

    async def retry(self, run_id: str, from_node: str, *, owner_id: str | None = None) -> str:
        return await self.control.retry(run_id, from_node, owner_id=owner_id)

    async def cancel(self, run_id: str) -> dict[str, Any]:
        return await self.control.cancel(run_id)

    # ------------------------------------------------------------------ reading
    async def require(self, run_id: str) -> Run:
        """The run's row; NotFound when there is none."""
        return await self.views.require(run_id)

    async def result_view(self, run_id: str) -> dict[str, Any]:
        return await self.views.result_view(run_id)

    async def list(
        self,
        *,
        flow_id: str | None = None,
        status: str | None = None,
        visible_to: str | None = None,
        parent_run_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[dict[str, Any]]:
        """Newest first; `visible_to`: only the runs that user may see; top-level runs, or with
        `parent_run_id` that run's sub-flow children."""
        return await self.views.list_runs(
            flow_id=flow_id,
            status=status,
            visible_to=visible_to,
            parent_run_id=parent_run_id,
            limit=limit,
            offset=offset,
        )

    async def get(self, run_id: str) -> dict[str, Any]:
        return await self.views.get(run_id)

    async def events_after(self, run_id: str, after: int) -> builtins.list[Event]:
        return await self.views.events_after(run_id, after)

    async def decisions(self, run_id: str) -> builtins.list[dict[str, Any]]:
        return await self.views.decisions(run_id)

    def stream(
        self, run_id: str, after: int = 0, *, until: str = "terminal", heartbeat_s: float | None = None
    ) -> AsyncIterator[Event | None]:
        return self.streams.stream(run_id, after, until=until, heartbeat_s=heartbeat_s)

    # ------------------------------------------------------------------ human tasks
    async def resume(self, run_id: str, node_id: str | None, data: Any) -> dict[str, Any]:
        return await self.tasks.resume(run_id, node_id, data)

    async def get_task(self, token: str) -> dict[str, Any]:
        return await self.tasks.get_task(token)

    async def submit_task(self, token: str, data: Any) -> dict[str, Any]:
        return await self.tasks.submit_task(token, data)


__all__ = ["RunService", "process_owner"]
