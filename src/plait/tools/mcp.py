"""MCP client: tools of Model Context Protocol servers as plait tools (official `mcp` SDK).

Where servers are configured (see docs/tools.md):

- **Server-side, once for every flow:** the file named by ``PLAIT_MCP_CONFIG`` (JSON or YAML, the
  common ``{"mcpServers": {"name": {...}}}`` shape). Trusted: stdio commands are allowed and HTTP
  URLs are not SSRF-checked (an operator may point at an internal server).
- **In a flow:** ``settings.mcp_servers`` with the same entries. HTTP URLs pass the SSRF guard
  (``PLAIT_HTTP_ALLOW`` opts internal hosts in); stdio commands from a flow document would let
  anyone who can save a flow run programs, so they are refused unless ``PLAIT_MCP_FLOW_STDIO=1``.
  A flow entry with the same name as a server-side one replaces it for that flow.

Values in ``env`` and ``headers`` may name secrets as ``${NAME}``: they are looked up when
connecting and never written into the flow. In a flow's settings they read the stored variables
only (what ``{{env.NAME}}`` reads), never the server's environment: otherwise a flow could name
``PLAIT_SECRET_KEY`` or a cloud credential and send it to a server of its choosing. The server-side
file is the operator's, so there ``${NAME}`` reads the stored variables, then the environment.

Connections belong to an `MCPConnections` pool that travels with the run (`RunServices.mcp`,
read as `ctx.services.mcp`): the server makes one and closes it at shutdown, `plait.run` uses the
engine's documented default unless the caller passes one; a context without a pool cannot reach MCP
servers. A pool holds one connection per (event loop, server configuration), opened on first use
and kept by a background task that owns the SDK client (its anyio scopes must stay in one task) and
closes after ``idle_timeout_s`` without calls. A server that dies or cannot be reached fails the
call with a `ToolError(fatal=True)` naming the server (and tool); the broken connection leaves its
pool, so the next use reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import httpcore2
import httpx2
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from plait.net.guard import (
    BlockedURLError,
    acheck_url,
    allowlist_from_env,
    guarded_backend_class,
)
from plait.tools.base import Tool, ToolCallContext, ToolError

CONFIG_ENV = "PLAIT_MCP_CONFIG"
FLOW_STDIO_ENV = "PLAIT_MCP_FLOW_STDIO"
_SECRET = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_STDERR_TAIL = 600


class MCPServerConfig(BaseModel):
    """One MCP server: a stdio command (`command`, `args`, `env`, `cwd`) or an HTTP `url` (+ `headers`)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["stdio", "http", "streamable-http", "streamable_http"] | None = Field(
        None, description="Optional: inferred from `command` / `url`."
    )
    command: str | None = Field(None, description="Program to start (stdio transport).")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment; ${NAME} reads a secret."
    )
    cwd: str | None = None
    url: str | None = Field(None, description="Streamable HTTP endpoint, e.g. https://host/mcp.")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers; ${NAME} reads a secret.")
    tools: list[str] | None = Field(None, description="Expose only these tools of the server.")
    timeout_s: float = Field(60.0, gt=0, le=3600, description="Limit for one tool call.")
    connect_timeout_s: float = Field(30.0, gt=0, le=600)
    idle_timeout_s: float = Field(300.0, gt=0, description="Close the connection after this long unused.")

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either `command` (stdio) or `url` (streamable HTTP)")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"


def _parse_servers(raw: Any, where: str) -> dict[str, MCPServerConfig]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping) and isinstance(raw.get("mcpServers"), Mapping):
        raw = raw["mcpServers"]
    if not isinstance(raw, Mapping):
        raise ToolError(f"{where} must map server names to settings", fatal=True)
    out: dict[str, MCPServerConfig] = {}
    for name, value in raw.items():
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", str(name)):
            raise ToolError(
                f"{where}: invalid MCP server name {name!r}",
                hint="use letters, digits, '_', '-' or '.'",
                fatal=True,
            )
        try:
            out[str(name)] = MCPServerConfig.model_validate(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise ToolError(
                f"{where}.{name}{'.' + loc if loc else ''}: {err['msg']}",
                hint="see docs/tools.md (MCP servers)",
                fatal=True,
            ) from exc
    return out


def server_side_servers() -> dict[str, MCPServerConfig]:
    """The servers of the ``PLAIT_MCP_CONFIG`` file (re-read when the file changes)."""
    path = os.environ.get(CONFIG_ENV)
    if not path:
        return {}
    try:
        return _read_config(path, Path(path).stat().st_mtime)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ToolError(f"cannot read {CONFIG_ENV} file {path!r}: {exc}", fatal=True) from exc


@functools.lru_cache(maxsize=1)
def _read_config(path: str, mtime: float) -> dict[str, MCPServerConfig]:
    """The parsed file as it was at `mtime`: a memo of a pure read (every run asks for it), not
    state; a changed file has a new mtime and is read again."""
    text = Path(path).read_text()
    raw = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    return _parse_servers(raw, CONFIG_ENV)


def run_servers(ctx: Any) -> dict[str, tuple[MCPServerConfig, bool]]:
    """Servers visible to a run: name -> (config, trusted). Flow settings override server-side ones."""
    servers = {name: (cfg, True) for name, cfg in server_side_servers().items()}
    services = getattr(ctx, "services", None)
    flow_raw = getattr(services, "mcp_servers", None) or {}
    for name, cfg in _parse_servers(flow_raw, "settings.mcp_servers").items():
        servers[name] = (cfg, False)
    return servers


def server_config(ctx: Any, server: str) -> tuple[MCPServerConfig, bool]:
    servers = run_servers(ctx)
    if server not in servers:
        known = ", ".join(sorted(servers)) or "none configured"
        raise ToolError(
            f"unknown MCP server {server!r} (known: {known})",
            hint=f"add it to the flow's settings.mcp_servers or to the {CONFIG_ENV} file",
            fatal=True,
        )
    return servers[server]


# --------------------------------------------------------------------------- connections


class _Job:
    __slots__ = ("tool", "args", "future")

    def __init__(self, tool: str, args: dict[str, Any], future: asyncio.Future[Any]) -> None:
        self.tool, self.args, self.future = tool, args, future


class _Connection:
    """A live session with one server, owned by one background task (the SDK's scopes need that)."""

    def __init__(
        self,
        name: str,
        cfg: MCPServerConfig,
        env: dict[str, str],
        headers: dict[str, str],
        *,
        trusted: bool,
        on_closed: Callable[[_Connection], None],
    ) -> None:
        self.name = name
        self.on_closed = on_closed  # the pool forgets it (the next use reconnects)
        self.cfg = cfg
        self.env = env
        self.headers = headers
        self.jobs: asyncio.Queue[_Job | None] = asyncio.Queue()
        self.tools: list[Any] = []
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False
        self.inflight: set[asyncio.Future[Any]] = set()
        self.trusted = trusted
        self.http_problem: str | None = None  # the last HTTP failure (the SDK hides it)
        self.http_down = False
        # The server's stderr, for error messages; closed in aclose().
        self.errlog = tempfile.TemporaryFile(mode="w+") if cfg.command else None  # noqa: SIM115
        self.task = asyncio.get_running_loop().create_task(self._serve(), name=f"mcp:{name}")

    def describe(self) -> str:
        if self.cfg.command:
            return f"MCP server {self.name!r} (stdio: {self.cfg.command})"
        return f"MCP server {self.name!r} ({self.cfg.url})"

    def stderr_tail(self) -> str:
        if self.errlog is None:
            return ""
        try:
            self.errlog.flush()
            self.errlog.seek(0)
            text = self.errlog.read().strip()
        except (OSError, ValueError):
            return ""
        lines = [" ".join(line.split()) for line in text.splitlines()[-5:]]
        return " | ".join(line for line in lines if line)[-_STDERR_TAIL:]

    async def _serve(self) -> None:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        cfg = self.cfg
        error: BaseException | None = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                if cfg.command and self.errlog is not None:  # errlog is opened for stdio servers
                    params = StdioServerParameters(
                        command=cfg.command, args=cfg.args, env=self.env, cwd=cfg.cwd
                    )
                    transport: Any = stdio_client(params, errlog=self.errlog)
                else:
                    http = await stack.enter_async_context(
                        httpx2.AsyncClient(
                            transport=_WatchingTransport(self),
                            headers=self.headers,
                            timeout=httpx2.Timeout(cfg.timeout_s, connect=cfg.connect_timeout_s),
                            trust_env=False,
                        )
                    )
                    transport = streamable_http_client(cfg.url or "", http_client=http)
                client = await stack.enter_async_context(
                    Client(transport, read_timeout_seconds=cfg.timeout_s)
                )
                self.tools = await _list_all_tools(client)
                self.ready.set_result(None)
                await self._loop(client)
        except BaseException as exc:  # noqa: BLE001 - every way out must fail the waiting calls
            error = exc
        finally:
            self.closed = True
            for waiter in [self.ready, *self.inflight]:
                if not waiter.done():
                    waiter.set_exception(_ConnectionLost(error))
            while not self.jobs.empty():
                job = self.jobs.get_nowait()
                if job is not None and not job.future.done():
                    job.future.set_exception(_ConnectionLost(error))
            self.on_closed(self)
        if isinstance(error, asyncio.CancelledError):
            raise error

    async def _loop(self, client: Any) -> None:
        import anyio

        async with anyio.create_task_group() as tg:
            while True:
                try:
                    job = await asyncio.wait_for(self.jobs.get(), self.cfg.idle_timeout_s)
                except TimeoutError:
                    if self.inflight:
                        continue
                    job = None
                if job is None:
                    tg.cancel_scope.cancel()
                    return
                self.inflight.add(job.future)
                tg.start_soon(self._call, client, job)

    async def _call(self, client: Any, job: _Job) -> None:
        try:
            result = await client.call_tool(job.tool, job.args)
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            error: Exception = exc
            if self.http_down and self.http_problem:
                error = ConnectionError(self.http_problem)
            if _is_connection_loss(error):
                # The server is gone: fail this call as such and retire the connection, so the
                # next call starts a new one instead of reusing a dead session.
                error = _ConnectionLost(error)
                self.closed = True
                self.on_closed(self)
                self.jobs.put_nowait(None)
            if not job.future.done():
                job.future.set_exception(error)
        else:
            if not job.future.done():
                job.future.set_result(result)
        finally:
            self.inflight.discard(job.future)

    async def call(self, tool: str, args: dict[str, Any]) -> Any:
        if self.closed:  # closed since it was handed out (idle timeout): the caller reconnects
            raise _Retired
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self.jobs.put(_Job(tool, args, future))
        return await future

    async def aclose(self) -> None:
        if not self.closed:
            await self.jobs.put(None)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(self.task), 10)
        if self.errlog is not None:
            self.errlog.close()


# The SSRF guard's backend for httpcore2 (the MCP SDK uses httpx2): resolve, check every address,
# connect to a checked address (no re-resolution).
_PinnedBackend = guarded_backend_class(httpcore2)


class _WatchingTransport(httpx2.AsyncBaseTransport):
    """Records HTTP failures for error messages and answers network errors with a 503.

    The SDK's streamable-HTTP client logs a failed POST and leaves the request waiting for its read
    timeout; a 503 makes it resolve the request at once, and `http_problem` says why. For servers
    from flow documents every connection goes through the SSRF guard, pinned to the checked address.
    """

    def __init__(self, conn: _Connection) -> None:
        self.conn = conn
        self.inner = httpx2.AsyncHTTPTransport(trust_env=False)
        if not conn.trusted:
            self.inner._pool = httpcore2.AsyncConnectionPool(  # same swap as plait.net.guard.GuardedTransport
                ssl_context=httpx2.create_ssl_context(),
                max_connections=10,
                network_backend=_PinnedBackend(allowlist_from_env()),
            )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except BlockedURLError as exc:
            self.conn.http_down = True
            self.conn.http_problem = exc.message
            return httpx2.Response(403, request=request, text=exc.message)
        except httpx2.TransportError as exc:
            self.conn.http_down = True
            self.conn.http_problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return httpx2.Response(503, request=request, text=self.conn.http_problem)
        if response.status_code >= 400 and request.method != "DELETE":
            self.conn.http_problem = f"HTTP {response.status_code} from {request.url.copy_with(query=None)}"
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Retired(Exception):
    """The connection closed itself (idle) before the call was queued; nothing was sent."""


class _ConnectionLost(Exception):
    """The server went away; `cause` (also the `__cause__`, for logs) is why, when known."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__(_describe(cause) if cause else "the connection was closed")
        self.cause = cause
        self.__cause__ = cause


async def _list_all_tools(client: Any) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _is_connection_loss(exc: BaseException) -> bool:
    import anyio
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED and "closed" in exc.error.message.lower()
    return isinstance(
        exc, (httpx2.TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)
    )


def _describe(exc: BaseException) -> str:
    """The deepest meaningful message of an exception (task groups wrap errors in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, _ConnectionLost) and exc.cause is not None:
        return _describe(exc.cause)
    from mcp import MCPError

    if isinstance(exc, MCPError):
        return exc.error.message
    text = str(exc).strip()
    if isinstance(exc, (ConnectionError, OSError)) or not text:
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text


def stored_variable(ctx: Any, name: str) -> str | None:
    """The stored variable `name` of the caller's run (what `{{env.NAME}}` reads: its `env`
    reference root); None when it has none or the caller is not in a run."""
    lookup = getattr(ctx, "lookup", None)
    if lookup is None:
        return None
    try:
        variables = lookup("env")
    except KeyError:
        return None
    value = variables.get(name) if isinstance(variables, Mapping) else None
    return None if value is None else str(value)


def _resolve_secrets(
    values: Mapping[str, str], ctx: ToolCallContext | None, server: str, field: str, *, trusted: bool
) -> dict[str, str]:
    """`${NAME}` in `values` replaced by the variable's value (see the module docstring for where
    it is looked up: stored variables only, and the environment too for `trusted` servers)."""
    out: dict[str, str] = {}
    for key, value in values.items():

        def sub(m: re.Match[str], key: str = key) -> str:
            secret = stored_variable(ctx, m[1])
            if secret is None and trusted:
                secret = os.environ.get(m[1])
            if secret is None:
                where = "Settings > Variables, or the environment" if trusted else "Settings > Variables"
                raise ToolError(
                    f"MCP server {server!r}: {field}.{key} needs the variable {m[1]}",
                    hint=f"store {m[1]} as a variable ({where})"
                    + ("" if trusted else "; a flow's MCP settings never read the server's environment"),
                    fatal=True,
                )
            return secret

        out[key] = _SECRET.sub(sub, value)
    return out


class MCPConnections:
    """Live MCP sessions, one per (event loop, server configuration); closed by the owner (`aclose`,
    on the loop that used them). Sessions and their tasks are bound to their loop, so a session is
    never used from another loop; those of closed loops are dropped."""

    __slots__ = ("_connections", "_locks")

    def __init__(self) -> None:
        self._connections: dict[asyncio.AbstractEventLoop, dict[str, _Connection]] = {}
        self._locks: dict[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = {}

    async def connect(
        self, name: str, cfg: MCPServerConfig, ctx: ToolCallContext | None, *, trusted: bool
    ) -> _Connection:
        """The live connection to a server (opened now if needed); raises ToolError(fatal) on failure."""
        if cfg.command and not trusted and os.environ.get(FLOW_STDIO_ENV) != "1":
            raise ToolError(
                f"MCP server {name!r}: stdio commands in a flow's settings are disabled on this installation",
                hint=f"configure the server in the {CONFIG_ENV} file, or set {FLOW_STDIO_ENV}=1 if flow authors are trusted",
                fatal=True,
            )
        env = _resolve_secrets(cfg.env, ctx, name, "env", trusted=trusted)
        headers = _resolve_secrets(cfg.headers, ctx, name, "headers", trusted=trusted)
        if cfg.url and not trusted:
            try:
                await acheck_url(cfg.url)
            except BlockedURLError as exc:
                raise ToolError(f"MCP server {name!r}: {exc.message}", fatal=True) from exc
            except ValueError as exc:
                raise ToolError(f"MCP server {name!r}: {exc}", fatal=True) from exc
        fingerprint = hashlib.sha256(
            json.dumps([name, cfg.model_dump(), env, headers], sort_keys=True).encode()
        ).hexdigest()
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._connections if lp.is_closed()]:
            self._connections.pop(old, None)
            self._locks.pop(old, None)
        per_loop = self._connections.setdefault(loop, {})
        lock = self._locks.setdefault(loop, {}).setdefault(fingerprint, asyncio.Lock())
        async with lock:
            conn = per_loop.get(fingerprint)
            if conn is None or conn.closed:
                conn = per_loop[fingerprint] = _Connection(
                    name, cfg, env, headers, trusted=trusted, on_closed=self._forget
                )
            try:
                async with asyncio.timeout(cfg.connect_timeout_s):
                    await asyncio.shield(conn.ready)
            except TimeoutError as exc:
                await conn.aclose()
                raise ToolError(
                    f"cannot connect to {conn.describe()}: no answer within {cfg.connect_timeout_s:g}s",
                    fatal=True,
                ) from exc
            except _ConnectionLost as exc:
                tail = conn.stderr_tail()
                why = f"{exc} ({conn.http_problem})" if conn.http_problem else str(exc)
                raise ToolError(
                    f"cannot connect to {conn.describe()}: {why}" + (f"; its stderr: {tail}" if tail else ""),
                    hint="check the server's command/URL, headers and that it is running",
                    fatal=True,
                ) from exc
        return conn

    def _forget(self, conn: _Connection) -> None:
        for per_loop in self._connections.values():
            for key, value in list(per_loop.items()):
                if value is conn:
                    del per_loop[key]

    async def aclose(self) -> None:
        """Close the connections of the running event loop (server shutdown, tests)."""
        for conn in list(self._connections.pop(asyncio.get_running_loop(), {}).values()):
            await conn.aclose()
        self._locks.pop(asyncio.get_running_loop(), None)


def connections_of(ctx: ToolCallContext | None) -> MCPConnections:
    """The MCP connection pool of the caller's run (`ctx.services.mcp`)."""
    pool: MCPConnections | None = getattr(getattr(ctx, "services", None), "mcp", None)
    if pool is None:
        raise ToolError(
            "MCP servers are not available here: the caller's context has no MCP connection pool",
            hint="run the flow with plait.run or on the server, or give the context "
            "services=RunServices(mcp=MCPConnections())",
            fatal=True,
        )
    return pool


async def connect(
    name: str, cfg: MCPServerConfig, ctx: ToolCallContext | None, *, trusted: bool
) -> _Connection:
    """The live connection to a server in the pool of `ctx`'s run (see `MCPConnections.connect`)."""
    return await connections_of(ctx).connect(name, cfg, ctx, trusted=trusted)


# --------------------------------------------------------------------------- tools


def _result_value(result: Any) -> Any:
    if result.structured_content is not None:
        value = result.structured_content
        # Servers wrap non-object results as {"result": value} for older protocol versions.
        if isinstance(value, dict) and set(value) == {"result"}:
            return value["result"]
        return value
    parts: list[Any] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append({"type": kind, **{k: v for k, v in block.model_dump().items() if k != "data"}})
    if all(isinstance(p, str) for p in parts):
        return "\n".join(parts)
    return parts[0] if len(parts) == 1 else parts


def _error_text(result: Any) -> str:
    texts = [getattr(b, "text", "") for b in result.content if getattr(b, "type", "") == "text"]
    return " ".join(t for t in texts if t) or "the tool reported an error"


def _make_tool(server: str, cfg: MCPServerConfig, trusted: bool, spec: Any) -> Tool:
    tool_name = spec.name

    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        conn = await connect(server, cfg, ctx, trusted=trusted)
        try:
            try:
                result = await asyncio.wait_for(conn.call(tool_name, dict(args or {})), cfg.timeout_s)
            except _Retired:
                conn = await connect(server, cfg, ctx, trusted=trusted)
                result = await asyncio.wait_for(conn.call(tool_name, dict(args or {})), cfg.timeout_s)
        except TimeoutError as exc:
            raise ToolError(
                f"MCP tool {server}/{tool_name} did not answer within {cfg.timeout_s:g}s",
                hint=f"raise timeout_s of MCP server {server!r}",
            ) from exc
        except _ConnectionLost as exc:
            tail = conn.stderr_tail()
            raise ToolError(
                f"{conn.describe()} went away while calling tool {tool_name!r}: {exc}"
                + (f"; its stderr: {tail}" if tail else ""),
                hint="check that the server is running; plait reconnects on the next call",
                fatal=True,
            ) from exc
        except Exception as exc:  # MCPError (unknown tool, bad arguments...), validation errors
            raise ToolError(f"MCP tool {server}/{tool_name} failed: {_describe(exc)}") from exc
        if result.is_error:
            raise ToolError(f"MCP tool {server}/{tool_name} failed: {_error_text(result)}")
        return _result_value(result)

    schema = dict(spec.input_schema or {"type": "object"})
    schema.setdefault("type", "object")
    return Tool(
        name=tool_name,
        description=spec.description or spec.title or tool_name,
        parameters=schema,
        call=call,
        source=f"mcp:{server}",
    )


async def server_tools(ctx: Any, server: str) -> list[Tool]:
    """The tools of one configured server (connecting if needed), filtered by its `tools` list."""
    cfg, trusted = server_config(ctx, server)
    conn = await connect(server, cfg, ctx, trusted=trusted)
    specs = conn.tools
    if cfg.tools is not None:
        names = {t.name for t in specs}
        missing = [n for n in cfg.tools if n not in names]
        if missing:
            raise ToolError(
                f"MCP server {server!r} has no tool {missing[0]!r} (it offers: {', '.join(sorted(names))})",
                fatal=True,
            )
        specs = [t for t in specs if t.name in cfg.tools]
    return [_make_tool(server, cfg, trusted, spec) for spec in specs]
