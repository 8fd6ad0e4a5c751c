"""`Services`: the store plus every use-case object and the connection pools its runs share, with
start-up and shutdown (which closes the pools)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, TextIO

from plait.net.http import HttpClients
from plait.service.access import AccessService
from plait.service.assistant import AssistantService
from plait.service.bus import EventBus
from plait.service.catalog import CatalogService
from plait.service.components import ComponentService
from plait.service.flows import FlowService
from plait.service.knowledge import KnowledgeService
from plait.service.restore_points import RestorePointService
from plait.service.runs import RunService
from plait.service.settings import Settings
from plait.service.triggers import TriggerService
from plait.service.users import UserService
from plait.store import Store
from plait.tools.mcp import MCPConnections

log = logging.getLogger("plait.service")


class Services:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.bus = EventBus()
        self.access = AccessService(store)
        self.flows = FlowService(store, access=self.access)
        self.components = ComponentService(store)
        # The server's connections, shared by its runs and closed by `close`: HTTP (http nodes,
        # web tools) and MCP sessions (mcp: tools; the catalog's listing of server-side servers).
        self.http = HttpClients()
        self.mcp = MCPConnections()
        self.runs = RunService(
            store, self.flows, settings, self.bus, components=self.components, http=self.http, mcp=self.mcp
        )
        self.catalog = CatalogService(store, mcp=self.mcp)
        self.triggers = TriggerService(store, self.flows, self.runs)  # schedules and webhooks
        self.users = UserService(store, settings)
        self.restore_points = RestorePointService(store, self.flows)  # undo the assistant's changes
        self.knowledge = KnowledgeService(store)  # knowledge bases the retrieval node searches
        self.assistant = AssistantService(
            store, self.access, self.runs, restore_points=self.restore_points
        )  # PLAIT_ASSISTANT=off: its routes 404
        self.signin_url: str | None = None  # the link printed at start (when `signin_link_base`)

    @classmethod
    async def open(cls, settings: Settings | None = None, *, stderr: TextIO | None = None) -> Services:
        """Open (and migrate) the store, bootstrap an API key, import examples, recover runs."""
        settings = settings or Settings.from_env()
        store = await Store.open(settings.database_url)
        services = cls(store, settings)
        try:
            await services.bootstrap(stderr=stderr)
            await services.runs.start_background()
            await services.triggers.start()  # this server's scheduler (one firing per tick overall)
        except BaseException:
            await services.triggers.close()
            await services.runs.close()
            await services.http.aclose()
            await services.mcp.aclose()
            await store.close()
            raise
        return services

    async def bootstrap(self, *, stderr: TextIO | None = None) -> None:
        """Make the local admin (first start), print a sign-in link when serving, import the
        example flows into an empty library (owned by the local admin)."""
        admin = await self.users.local_admin()
        if self.settings.signin_link_base:
            token = await self.users.signin_link_token(admin.user_id)
            self.signin_url = f"{self.settings.signin_link_base.rstrip('/')}/?token={token}"
            out = stderr or sys.stderr
            print(f"plait: sign in at {self.signin_url}", file=out, flush=True)
        if self.settings.import_examples and self.settings.examples_dir is not None:
            await self.import_examples(self.settings.examples_dir, owner_id=admin.user_id)

    async def import_examples(self, directory: Path, *, owner_id: str | None = None) -> list[str]:
        if not directory.is_dir() or await self.flows.count() > 0:
            return []
        imported = []
        for path in sorted(directory.iterdir()):
            if path.suffix.lower() not in (".json", ".yaml", ".yml"):
                continue
            try:
                flow = await self.flows.import_file(path, publish=True, owner_id=owner_id)
                imported.append(flow["id"])
            except Exception as exc:  # noqa: BLE001 - one broken example must not stop the server
                log.warning("cannot import example %s: %s", path.name, exc)
        return imported

    async def close(self) -> None:
        await self.triggers.close()  # no new runs from schedules while the runs stop
        await self.runs.close()
        await self.http.aclose()  # after the runs: they are what uses it
        await self.mcp.aclose()  # MCP server processes and sessions opened by runs and the catalog
        await self.store.close()

    def health(self, *, detailed: bool = False) -> dict[str, Any]:
        """`/healthz`: the status; with `detailed` (an admin asking) also what this process runs
        and its name in leases (host name and pid, which strangers need not learn)."""
        if not detailed:
            return {"status": "ok"}
        return {"status": "ok", "executing": len(self.runs.active), "owner": self.runs.owner}
