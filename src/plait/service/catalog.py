"""What the canvas needs to edit flows: the node-type palette (with config schemas and ports),
ports computed for a config, document validation, the global variables and the tools agents and
`tool` nodes can name (built-ins and the server-side MCP servers' tools).

Everything here reads the same sources the engine and the API use (the node registry, the flow
validator, the variable store), so the editor never disagrees with a run about what is valid.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from pydantic import ValidationError

from plait.engine.context import lookup_secret
from plait.engine.services import RunServices
from plait.nodes.base import Node
from plait.nodes.builtin.component import describe_component
from plait.nodes.registry import NodeRegistry, default_registry
from plait.service.errors import Invalid, NotFound
from plait.service.flows import problems_of
from plait.spec.loader import check_document_data, read_document_data
from plait.spec.problems import FlowValidationError
from plait.store import Store
from plait.tools import ToolError, default_tools
from plait.tools.base import Tool
from plait.tools.mcp import MCPConnections, server_side_servers, server_tools

VARIABLE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
COMPONENT_PREFIX = "component:"


def ports_depend_on_config(cls: type[Node[Any]]) -> bool:
    """A type whose class overrides `output_ports` may derive its ports from its config (switch
    cases, human actions): the canvas asks `ports()` again whenever such a node's config changes."""
    return getattr(cls.output_ports, "__func__", None) is not getattr(Node.output_ports, "__func__", None)


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def config_problems(exc: ValidationError) -> list[dict[str, Any]]:
    """pydantic errors as problems with a dotted field path (`cases[0].when`)."""
    problems = []
    for err in exc.errors():
        field = _field_path(tuple(err.get("loc", ())))
        problems.append(
            {
                "code": "invalid_config",
                "message": err.get("msg", "invalid value"),
                "field": f"config.{field}" if field else "config",
            }
        )
    return problems


class CatalogService:
    def __init__(self, store: Store, registry: NodeRegistry | None = None, *, mcp: MCPConnections) -> None:
        self.store = store
        self.registry = registry or default_registry()
        self.mcp = mcp  # the server's MCP sessions (listing a server's tools connects to it)
        self._builtin: tuple[tuple[str, ...], list[dict[str, Any]]] | None = None

    def _describe_builtin(self) -> list[dict[str, Any]]:
        """The registered types' entries; computed once per set of types (config JSON Schemas
        take pydantic tens of milliseconds to generate, and the canvas asks on every open)."""
        names = tuple(self.registry.names())
        if self._builtin is None or self._builtin[0] != names:
            entries = []
            for name in names:
                entry = self.registry.describe(name)
                entry["ports_from_config"] = ports_depend_on_config(self.registry.get(name))  # type: ignore[arg-type]
                entries.append(entry)
            self._builtin = (names, entries)
        return self._builtin[1]

    # ------------------------------------------------------------------ node types
    async def node_types(self, *, owner_id: str | None = None) -> list[dict[str, Any]]:
        """Every registered node type, then the caller's custom components (`component:<Name>`
        entries, each an instance of the `component` type with `config_defaults`)."""
        out = list(self._describe_builtin())
        rows = await self.store.components.list_components(owner_id=owner_id, kind="node")
        for row in rows:
            spec = {**(row.spec or {}), "class_name": (row.spec or {}).get("class_name") or row.name}
            entry = describe_component(spec)
            entry.setdefault("description", row.description)
            entry["ports_from_config"] = False
            out.append(entry)
        return out

    def ports(self, type_name: str, config: dict[str, Any]) -> dict[str, Any]:
        """The ports of a node of `type_name` with `config`; `problems` (and the static ports)
        when the config is not valid yet, so the canvas can keep drawing the node."""
        if type_name.startswith(COMPONENT_PREFIX):
            type_name = "component"
        cls = self.registry.get(type_name)
        if cls is None:
            raise NotFound(
                f"no node type {type_name!r}",
                details={"hint": "GET /api/v1/node-types lists the types"},
            )
        if not isinstance(config, dict):
            raise Invalid("config must be a JSON object")
        try:
            parsed = cls.Config.model_validate(config)
        except ValidationError as exc:
            described = self.registry.describe(type_name)["output_ports"]
            return {
                "type": type_name,
                "input_ports": list(cls.input_ports),
                "output_ports": described if isinstance(described, list) else [],
                "valid": False,
                "problems": config_problems(exc),
            }
        return {
            "type": type_name,
            "input_ports": list(cls.input_ports),
            "output_ports": list(cls.output_ports(parsed)),
            "valid": True,
            "problems": [],
        }

    # ------------------------------------------------------------------ validation
    @staticmethod
    def validate(document: Any = None, content: str | None = None) -> dict[str, Any]:
        """Every problem of a flow document (a dict, or JSON/YAML text): the validator runs and
        the API use, so `valid` here means the draft can be published and run."""
        if document is None and content is None:
            raise Invalid("give the flow as `document` (a JSON object) or `content` (JSON/YAML text)")
        if document is None:
            try:
                document = read_document_data(str(content) + "\n")
            except FlowValidationError as exc:
                problems = [p.to_dict() for p in exc.problems]
                return {"valid": False, "problems": problems}
        if not isinstance(document, dict):
            return {
                "valid": False,
                "problems": [{"code": "invalid_document", "message": "the flow must be a JSON/YAML object"}],
            }
        check_document_data(document)  # size and nesting limits: FlowValidationError, a 422
        document = {**document}
        document.setdefault("schema", "plait/flow@1")
        document.setdefault("id", "draft")
        problems = problems_of(document)
        return {"valid": not problems, "problems": problems}

    # ------------------------------------------------------------------ variables
    async def variables(self, owner_id: str | None = None) -> list[dict[str, Any]]:
        """The variables `owner_id`'s runs read (`{{env.NAME}}`): theirs (`scope` "user"), then the
        deployment-wide ones (`scope` "global"); owner None: the deployment-wide ones only.
        Secret values are masked."""
        views = await self.store.variables.list_variables(owner_id=owner_id, reveal=False)
        return [
            {
                "name": v.name,
                "value": v.value,
                "is_secret": v.is_secret,
                "description": v.description,
                "scope": "global" if v.owner_id is None else "user",
                "updated_at": v.updated_at,
            }
            for v in sorted(views, key=lambda v: (v.owner_id is None, v.name))
        ]

    async def set_variable(
        self,
        name: str,
        value: Any,
        *,
        owner_id: str | None = None,
        is_secret: bool = False,
        description: str | None = None,
    ) -> dict[str, Any]:
        """Create or replace `owner_id`'s variable (None: a deployment-wide one)."""
        if not VARIABLE_NAME_RE.match(name or ""):
            raise Invalid(
                f"invalid variable name {name!r}",
                details={
                    "hint": "letters, digits and '_', starting with a letter or '_' (used as {{env.NAME}})"
                },
            )
        await self.store.variables.set(
            name, value, owner_id=owner_id, is_secret=is_secret, description=description
        )
        scope = "global" if owner_id is None else "user"
        return next(v for v in await self.variables(owner_id) if v["name"] == name and v["scope"] == scope)

    async def delete_variable(self, name: str, *, owner_id: str | None = None) -> None:
        if not await self.store.variables.delete(name, owner_id=owner_id):
            raise NotFound(f"no variable {name!r}")

    # ------------------------------------------------------------------ tools
    async def tools(self, *, mcp: bool = True, owner_id: str | None = None) -> dict[str, Any]:
        """The built-in tools, then each server-side MCP server (the ``PLAIT_MCP_CONFIG`` file)
        with its tools, listed by connecting to it now (`mcp=False` skips that), with `${NAME}`
        read as a run of `owner_id` reads it (its variables and the deployment-wide ones). A
        server that cannot be reached lists its error instead of failing the listing; servers that
        flows declare in `settings.mcp_servers` are connected to by their runs only."""
        builtin = [_tool_entry(tool, tool.name) for tool in default_tools().list()]
        out: dict[str, Any] = {"tools": builtin, "mcp_servers": [], "mcp_config_error": None}
        if not mcp:
            return out
        try:
            servers = server_side_servers()
        except ToolError as exc:
            out["mcp_config_error"] = str(exc)
            return out
        ctx = _SecretsContext(await self.store.variables.values(owner_id), self.mcp)
        listed = await asyncio.gather(
            *(_server_entry(ctx, name, cfg.transport) for name, cfg in servers.items())
        )
        out["mcp_servers"] = sorted(listed, key=lambda entry: entry["name"])
        return out


class _SecretsContext:
    """What listing an MCP server's tools needs of a run's context: the stored variables for
    `${NAME}` in its env/headers (its `env` reference root, as in a run; plait.tools.mcp decides
    whether the environment is read too: for the operator's server-side file only), and the
    server's MCP connection pool (`services.mcp`; no flow, so no `mcp_servers`)."""

    run_id = ""
    node_id = ""

    def __init__(self, values: dict[str, Any], mcp: MCPConnections) -> None:
        self.values = values
        self.services = RunServices(mcp=mcp)

    def lookup(self, root: str) -> Any:
        if root == "env":
            return self.values
        raise KeyError(root)

    def secret(self, name: str) -> str | None:
        return lookup_secret(self.values, name)


def _tool_entry(tool: Tool, ref: str) -> dict[str, Any]:
    return {
        "name": tool.name,
        "ref": ref,
        "description": tool.description,
        "parameters": tool.parameters,
        "source": tool.source,
    }


async def _server_entry(ctx: _SecretsContext, name: str, transport: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "ref": f"mcp:{name}",
        "transport": transport,
        "tools": [],
        "error": None,
    }
    try:
        tools = await server_tools(ctx, name)
    except ToolError as exc:
        entry["error"] = str(exc)
    else:
        entry["tools"] = [_tool_entry(tool, f"mcp:{name}/{tool.name}") for tool in tools]
    return entry
