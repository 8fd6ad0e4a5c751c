"""`Services`: the store plus every use-case object and the connection pools its runs share, with
start-up and shutdown (which closes the pools)."""

from __future__ import annotations

import hmac
import logging
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from plait.net.http import HttpClients
from plait.service.bus import EventBus
from plait.service.catalog import CatalogService
from plait.service.components import ComponentService
from plait.service.errors import Unauthorized
from plait.service.flows import FlowService
from plait.service.runs import RunService
from plait.service.settings import Settings
from plait.store import Store
from plait.tools.mcp import MCPConnections

log = logging.getLogger("plait.service")

KEY_CACHE_S = 30.0


class Services:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.bus = EventBus()
        self.flows = FlowService(store)
        self.components = ComponentService(store)
        # The server's connections, shared by its runs and closed by `close`: HTTP (http nodes,
        # web tools) and MCP sessions (mcp: tools; the catalog's listing of server-side servers).
        self.http = HttpClients()
        self.mcp = MCPConnections()
        self.runs = RunService(
            store, self.flows, settings, self.bus, components=self.components, http=self.http, mcp=self.mcp
        )
        self.catalog = CatalogService(store, mcp=self.mcp)
        self._key_cache: dict[str, tuple[float, str | None]] = {}  # key -> (expiry, owner)
        self.admin_key: str | None = None

    @classmethod
    async def open(cls, settings: Settings | None = None, *, stderr: TextIO | None = None) -> Services:
        """Open (and migrate) the store, bootstrap an API key, import examples, recover runs."""
        settings = settings or Settings.from_env()
        store = await Store.open(settings.database_url)
        services = cls(store, settings)
        try:
            await services.bootstrap(stderr=stderr)
            await services.runs.start_background()
        except BaseException:
            await services.runs.close()
            await services.http.aclose()
            await services.mcp.aclose()
            await store.close()
            raise
        return services

    async def bootstrap(self, *, stderr: TextIO | None = None) -> None:
        if (
            self.settings.create_admin_key
            and not self.settings.api_key
            and not await self.store.api_keys.list_keys(include_revoked=True)
        ):
            _, key = await self.store.api_keys.create("admin")
            self.admin_key = key
            out = stderr or sys.stderr
            print(f"plait: created an admin API key (shown once): {key}", file=out, flush=True)
        if self.settings.import_examples and self.settings.examples_dir is not None:
            await self.import_examples(self.settings.examples_dir)

    async def import_examples(self, directory: Path) -> list[str]:
        if not directory.is_dir() or await self.flows.count() > 0:
            return []
        imported = []
        for path in sorted(directory.iterdir()):
            if path.suffix.lower() not in (".json", ".yaml", ".yml"):
                continue
            try:
                flow = await self.flows.import_file(path, publish=True)
                imported.append(flow["id"])
            except Exception as exc:  # noqa: BLE001 - one broken example must not stop the server
                log.warning("cannot import example %s: %s", path.name, exc)
        return imported

    async def check_key(self, key: str | None) -> str | None:
        """Verify the API key; returns its owner (the key's user id; None for keys without a user
        and for the configured `api_key`: the deployment-wide owner). Raises Unauthorized."""
        if not key:
            raise Unauthorized("an API key is required (x-api-key header or Authorization: Bearer)")
        if self.settings.api_key and hmac.compare_digest(key.encode(), self.settings.api_key.encode()):
            return None
        now = time.monotonic()
        cached = self._key_cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        row = await self.store.api_keys.verify(key, touch=False)
        if row is None:
            raise Unauthorized("invalid API key")
        if len(self._key_cache) > 1000:
            self._key_cache.clear()
        self._key_cache[key] = (now + KEY_CACHE_S, row.user_id)
        return row.user_id

    async def close(self) -> None:
        await self.runs.close()
        await self.http.aclose()  # after the runs: they are what uses it
        await self.mcp.aclose()  # MCP server processes and sessions opened by runs and the catalog
        await self.store.close()

    def health(self) -> dict[str, Any]:
        return {"status": "ok", "executing": len(self.runs.active), "owner": self.runs.owner}
