"""What the MCP server's tools do, on the caller's stored flows, with the caller's rights.

The flow-builder toolkit of the assistant (`plait.assistant.toolkit`) works on a *working flow*,
one request's copy of a canvas. Here each call of a toolkit tool names a stored flow (`flow_id`):
the flow is read with the caller's access (view to read it, edit to change it; a flow the caller
may not see is "not found", exactly as over REST), the tool runs on a `WorkingFlow` of its draft,
and when the call changed the document the draft is saved back. Calls that change the same flow
are serialised in this process, so two edits never overwrite each other's draft.

Scopes are the REST API's: reading needs `read`, changing a flow `write`, running it `run`. A run
needs edit access to the flow too, as `POST /flows/{id}/runs` does.

`run_flow` runs the published version (the latest, or the one named) and otherwise the draft. A
draft runs as the assistant's runs do (`AssistantFlowRunner`: a persisted draft run of the flow,
refused when it holds unsafe inline code); a version runs through the run service as any run.
Both answer with the outputs and the run's metrics (duration, tokens).
"""

from __future__ import annotations

import asyncio
import copy
import re
import time
from collections.abc import Mapping
from typing import Any

from plait.assistant import flow_io
from plait.assistant.catalog import RegistryCatalog
from plait.assistant.flow_agent import ascii_graph
from plait.assistant.toolkit import Toolkit
from plait.assistant.working_flow import WorkingFlow
from plait.service import Services
from plait.service.access import Access, Principal, Scope
from plait.service.assistant_runner import AssistantFlowRunner
from plait.service.components import catalog_entries
from plait.service.errors import Invalid, NotFound
from plait.service.flows import check_flow_id

DEFAULT_RUN_TIMEOUT_S = 120.0
MAX_LISTED_FLOWS = 200
RUN_OK_STATUSES = frozenset({"completed", "succeeded", "success", "ok"})

# The toolkit's tools as MCP tools, by what they need.
CATALOG_TOOLS = (
    "search_components",
    "describe_component",
)  # no flow: the node types + the caller's components
READ_TOOLS = ("get_field_value", "describe_flow_io")  # view access
EDIT_TOOLS = ("add_component", "remove_component", "connect_components", "configure_component", "build_flow")
BUILT_MESSAGE = "Flow built and saved as the draft of {flow_id!r} ({nodes} nodes, {edges} edges)."


def flow_id_for(name: str) -> str:
    """A flow id from a flow's name: lower-case letters, digits, '-', '_' and '.'."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.strip().lower()).strip("-_.")[:100]
    return slug or "flow"


class FlowTools:
    """The operations behind the MCP tools (see the module docstring). Every method takes the
    caller and raises `ServiceError`s (not found, forbidden, invalid) the server reports."""

    def __init__(self, services: Services, *, run_timeout_s: float = DEFAULT_RUN_TIMEOUT_S) -> None:
        self.services = services
        self.run_timeout_s = run_timeout_s
        self._locks: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------------------- helpers
    async def catalog(self, owner_id: str | None) -> RegistryCatalog:
        """The node types plus the user's components (what the toolkit may put in a flow)."""
        return RegistryCatalog(user_components=await catalog_entries(self.services.store, owner_id))

    def _lock(self, flow_id: str) -> asyncio.Lock:
        lock = self._locks.get(flow_id)
        if lock is None:
            if len(self._locks) > 10_000:  # free the locks nobody holds
                self._locks = {k: v for k, v in self._locks.items() if v.locked()}
            lock = self._locks[flow_id] = asyncio.Lock()
        return lock

    async def _taken(self, flow_id: str) -> bool:
        try:
            await self.services.flows.get_row(flow_id)
        except NotFound:
            return False
        return True

    # ------------------------------------------------------------------------------- toolkit
    async def catalog_tool(self, who: Principal, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """`search_components` / `describe_component`: no flow involved."""
        who.require(Scope.READ)
        catalog = await self.catalog(who.user_id)
        return await Toolkit(WorkingFlow(None, catalog), catalog).call(name, dict(arguments))

    async def flow_tool(self, who: Principal, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A toolkit tool on the stored flow `arguments["flow_id"]`; its draft is saved when the
        tool changed it."""
        args = dict(arguments)
        flow_id = str(args.pop("flow_id", "") or "")
        editing = name in EDIT_TOOLS
        who.require(Scope.WRITE if editing else Scope.READ)
        need = Access.EDIT if editing else Access.VIEW
        if not editing:
            row = await self.services.access.flow(who, flow_id, need)
            catalog = await self.catalog(row.owner_id or who.user_id)
            return await Toolkit(WorkingFlow(row.draft, catalog), catalog).call(name, args)
        async with self._lock(flow_id):
            row = await self.services.access.flow(who, flow_id, need)
            catalog = await self.catalog(row.owner_id or who.user_id)
            working = WorkingFlow(row.draft, catalog)
            before = copy.deepcopy(working.doc)
            result = await Toolkit(working, catalog).call(name, args)
            working.drain()  # the assistant panel applies these events; here the draft is saved
            if working.doc != before:
                await self.services.flows.update(row.id, working.doc)
                result["saved"] = True
            else:
                result.setdefault("saved", False)
        if name == "build_flow" and "error" not in result:
            result["message"] = BUILT_MESSAGE.format(
                flow_id=row.id, nodes=result.get("nodes"), edges=result.get("edges")
            )
            result.pop("status", None)  # "proposed": here nothing waits for a review
            result["graph"] = ascii_graph(working.doc)
        return result

    # ------------------------------------------------------------------------------- flows
    async def list_flows(self, who: Principal, query: str | None = None) -> dict[str, Any]:
        who.require(Scope.READ)
        words = [w for w in (query or "").lower().split() if w]
        flows = []
        for summary in await self.services.flows.list(who, limit=MAX_LISTED_FLOWS):
            text = f"{summary['id']} {summary['name']} {summary.get('description') or ''}".lower()
            if any(w not in text for w in words):
                continue
            flow = await self.services.flows.get(summary["id"], who=who)
            flows.append(
                {
                    "id": summary["id"],
                    "name": summary["name"],
                    "description": summary.get("description") or "",
                    "published_version": summary.get("latest_version") or None,
                    "access": summary.get("access"),
                    "nodes": len(flow["draft"].get("nodes") or ()),
                    "graph": ascii_graph(flow["draft"]) or "(empty)",
                }
            )
        return {"flows": flows, "count": len(flows)}

    async def create_flow(self, who: Principal, name: str, description: str | None = None) -> dict[str, Any]:
        """An empty flow owned by the caller; its id comes from the name (made unique)."""
        who.require(Scope.WRITE)
        if not name.strip():
            raise Invalid("name is empty: give the flow a name")
        base = check_flow_id(flow_id_for(name))
        flow_id, n = base, 1
        while await self._taken(flow_id):
            n += 1
            flow_id = f"{base[:120]}-{n}"
        document = {"id": flow_id, "name": name, "description": description or "", "nodes": [], "edges": []}
        flow = await self.services.flows.create(
            document, flow_id=flow_id, name=name, description=description or "", who=who
        )
        return {
            "id": flow["id"],
            "name": flow["name"],
            "description": flow["description"],
            "message": f"Flow {flow['id']!r} created (empty). Build it with build_flow(flow_id={flow['id']!r}, spec=...).",
        }

    async def publish_flow(self, who: Principal, flow_id: str, note: str | None = None) -> dict[str, Any]:
        who.require(Scope.WRITE)
        row = await self.services.access.flow(who, flow_id, Access.EDIT)
        version = await self.services.flows.publish(row.id, note=note or "")
        return {key: version[key] for key in ("flow_id", "version", "note", "created_at")}

    # ------------------------------------------------------------------------------- runs
    async def run_flow(
        self, who: Principal, flow_id: str, inputs: Any = None, version: str | int | None = None
    ) -> dict[str, Any]:
        """Run the flow: `version` N, "latest" or "draft"; by default the latest published
        version, or the draft when there is none."""
        who.require(Scope.RUN)
        row = await self.services.access.flow(who, flow_id, Access.EDIT)
        spec = str(version).strip().lower() if version is not None else None
        if spec is None:
            spec = "latest" if row.latest_version else "draft"
        if spec == "draft":
            return await self._run_draft(who, row.id, row.owner_id, row.draft, inputs)
        if spec == "latest":
            if not row.latest_version:  # 0: never published
                raise Invalid(
                    f"flow {row.id!r} has no published version",
                    hint="publish it with publish_flow, or run the draft (version: draft)",
                )
            return await self.run_version(who, row.id, row.latest_version, inputs)
        if not spec.isdigit():
            raise Invalid(f"version must be a number, latest or draft, not {version!r}")
        return await self.run_version(who, row.id, int(spec), inputs)

    async def _run_draft(
        self, who: Principal, flow_id: str, owner_id: str | None, draft: dict[str, Any], inputs: Any
    ) -> dict[str, Any]:
        catalog = await self.catalog(owner_id or who.user_id)
        runner = AssistantFlowRunner(
            self.services.runs, flow_id=flow_id, owner_id=who.user_id, timeout_s=self.run_timeout_s
        )
        toolkit = Toolkit(WorkingFlow(draft, catalog), catalog, runner=runner)
        result = await toolkit.call("run_flow", {} if inputs is None else {"inputs": inputs})
        return {**result, "version": "draft"}

    async def run_version(self, who: Principal, flow_id: str, version: int, inputs: Any) -> dict[str, Any]:
        """Run published version `version` (the caller's rights already checked) and wait for
        its end (at most `run_timeout_s`: then the answer says it is still running)."""
        document = (await self.services.flows.get_version(flow_id, version))["document"]
        run_inputs = run_inputs_of(document, inputs)
        started = time.perf_counter()
        run_id, _task = await self.services.runs.start(
            flow_id, run_inputs, version=version, owner_id=who.user_id
        )
        try:
            await self.services.runs.wait(run_id, timeout=self.run_timeout_s)
        except TimeoutError:
            return {
                "run_id": run_id,
                "status": "running",
                "version": version,
                "error": f"the run is still going after {self.run_timeout_s:.0f} s; follow it in plait",
            }
        view = await self.services.runs.result_view(run_id)
        usage = view.get("usage") or {}
        tokens_in, tokens_out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        out: dict[str, Any] = {
            "status": view["status"],
            "result": view.get("outputs") or {},
            "run_id": run_id,
            "version": version,
            "duration_seconds": round(time.perf_counter() - started, 4),
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "total_tokens": int(usage.get("total_tokens") or tokens_in + tokens_out),
        }
        if view.get("tasks"):
            out["tasks"] = view["tasks"]  # the run waits for a person (a human node)
        elif view["status"] not in RUN_OK_STATUSES:
            out["error"] = f"the run {view['status']}: {view.get('error') or 'no error message'}"
        return out


def run_inputs_of(document: Mapping[str, Any], given: Any) -> dict[str, Any]:
    """A run's inputs from a tool argument: an object as it is, a text for the flow's only input."""
    if given is None:
        return {}
    if isinstance(given, Mapping):
        return dict(given)
    if isinstance(given, str):
        fields = flow_io.run_inputs(document)
        names = [f["name"] for f in fields if f.get("required")] or [f["name"] for f in fields]
        if len(names) <= 1:
            return {names[0] if names else "text": given}
        raise Invalid(f"the flow takes several run inputs ({', '.join(names)}): pass inputs as an object")
    raise Invalid(f"inputs must be an object of run inputs (or a text), got {type(given).__name__}")


__all__ = ["CATALOG_TOOLS", "EDIT_TOOLS", "READ_TOOLS", "FlowTools", "flow_id_for", "run_inputs_of"]
