"""The `plait` command line (Typer + Rich)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from plait.cli.admin import admin_app
from plait.cli.formats import export_app, import_app
from plait.cli.mcp import mcp_command
from plait.engine import events as ev
from plait.engine.api import resume, run
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.engine.errors import ResumeError, RunInputError
from plait.engine.event_schema import events_json_schema
from plait.engine.events import Event
from plait.engine.flow import Flow, load_flow
from plait.engine.results import RunResult
from plait.engine.status import RunStatus
from plait.nodes.base import NodeError
from plait.nodes.registry import default_registry
from plait.spec.models import FlowDocument
from plait.spec.problems import FlowValidationError

app = typer.Typer(
    help="plait: a visual, durable orchestrator for AI agent flows.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(admin_app, name="admin")
app.add_typer(import_app, name="import")
app.add_typer(export_app, name="export")
app.command("mcp")(mcp_command)
console = Console()
err_console = Console(stderr=True)

EXIT_FAILED = 1
EXIT_WAITING = 3
EXIT_CANCELLED = 130
# The exit code per final run status (anything else: EXIT_FAILED).
_EXIT_CODES: dict[str, int] = {RunStatus.COMPLETED: 0, RunStatus.CANCELLED: EXIT_CANCELLED}


def _parse_inputs(pairs: list[str], json_file: Path | None) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if json_file is not None:
        try:
            loaded = json.loads(json_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise typer.BadParameter(f"cannot read {json_file}: {exc}", param_hint="--input-json") from exc
        if not isinstance(loaded, dict):
            raise typer.BadParameter("must contain a JSON object", param_hint="--input-json")
        data.update(loaded)
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"{pair!r} is not name=value", param_hint="--input")
        try:
            data[name] = json.loads(raw)
        except json.JSONDecodeError:
            data[name] = raw
    return data


def _print_problems(exc: FlowValidationError | RunInputError) -> None:
    err_console.print(f"[bold red]{exc.args[0].splitlines()[0]}[/]")
    for p in exc.problems:
        where = p.node_id or "flow"
        field = f" [dim]{p.field}[/]" if p.field else ""
        err_console.print(f"  [red]✗[/] [bold]{where}[/]{field}: {p.message}")
        if p.hint:
            err_console.print(f"      [dim]fix:[/] {p.hint}")


class _Progress:
    """Prints one line per node transition as events arrive."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: Event) -> None:
        node, data = event.node_id, event.data
        match data:
            case ev.NodeStarted(node_type=node_type, attempt=attempt):
                again = f" (attempt {attempt})" if attempt > 1 else ""
                self.console.print(f"[cyan]▶[/] {node} [dim]{node_type} running{again}[/]")
            case ev.NodeFinished(ok=ok, branch=branch, error=error, duration_ms=duration_ms):
                ms = f"{duration_ms or 0:.1f} ms"
                if ok:
                    fired = f" → {', '.join(branch)}" if branch else ""
                    self.console.print(f"[green]✓[/] {node} [dim]ok {ms}{fired}[/]")
                else:
                    self.console.print(f"[red]✗[/] {node} [red]error[/] [dim]{ms}[/]: {error}")
            case ev.NodeSkipped():
                self.console.print(f"[dim]⊘ {node} skipped[/]")
            case ev.NodeRetrying(error=error):
                self.console.print(f"[yellow]↻[/] {node} failed ({error}), retrying")
            case ev.NodeRerun(attempt=attempt, reason=reason):
                self.console.print(f"[yellow]↻[/] {node} runs again (attempt {attempt}): {escape(reason)}")
            case ev.Waiting():
                self.console.print(f"[yellow]⏸[/] {node} waiting for input")
            case ev.Decision():  # edge-LLM flows: what the decider chose, and why
                chosen = ", ".join(item["node"] for item in data.next) or "-"
                skips = f", skip {', '.join(data.skips)}" if data.skips else ""
                reason = f": {data.reason}" if data.reason else ""
                text = escape(f"{data.mode} {chosen}{skips}{reason}")
                self.console.print(f"[magenta]◆[/] decision {data.step} [dim]{text}[/]", highlight=False)


@app.command("run")
def run_command(
    flow_path: Annotated[Path, typer.Argument(metavar="FLOW", help="Flow file (JSON or YAML).")],
    input_: Annotated[
        list[str], typer.Option("--input", "-i", help="Input as name=value (JSON values ok).")
    ] = [],  # noqa: B006
    input_json: Annotated[
        Path | None, typer.Option("--input-json", help="JSON file with the inputs.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run result as JSON only.")] = False,
    server: Annotated[
        str | None, typer.Option("--server", help="Run the stored flow FLOW (an id) on this plait server.")
    ] = None,
    api_key: Annotated[
        str | None, typer.Option("--api-key", envvar="PLAIT_API_KEY", help="API key for --server.")
    ] = None,
) -> None:
    """Run a flow, showing live per-node progress and the outputs."""
    if server is not None:
        inputs = _parse_inputs(input_, input_json)
        raise typer.Exit(run_remote(server, str(flow_path), inputs, api_key, as_json))
    try:
        flow = load_flow(flow_path)
        inputs = _parse_inputs(input_, input_json)
    except FlowValidationError as exc:
        _print_problems(exc)
        raise typer.Exit(EXIT_FAILED) from exc
    code = asyncio.run(_run_interactive(flow, inputs, as_json))
    raise typer.Exit(code)


async def _run_interactive(flow: Flow, inputs: dict[str, Any], as_json: bool) -> int:
    checkpointer = InMemoryCheckpointer()
    on_event = None if as_json else _Progress(console)
    try:
        result = await run(flow, inputs, checkpointer=checkpointer, on_event=on_event)
    except RunInputError as exc:
        _print_problems(exc)
        return EXIT_FAILED
    while result.status == RunStatus.WAITING:
        task = result.interrupt
        assert task is not None
        if not sys.stdin.isatty():
            print(
                json.dumps({"status": RunStatus.WAITING, "run_id": result.run_id, "task": task}, default=str)
            )
            return EXIT_WAITING
        answer = _prompt_task(task)
        try:
            result = await resume(
                flow,
                result.run_id,
                answer,
                node_id=task["node_id"],
                checkpointer=checkpointer,
                on_event=on_event,
            )
        except (ResumeError, NodeError) as exc:
            err_console.print(f"[red]{exc}[/]")
    return _report(result, as_json)


def run_remote(server: str, flow_id: str, inputs: dict[str, Any], api_key: str | None, as_json: bool) -> int:
    """Start a stored flow on a server in stream mode and show its events as they arrive."""
    import httpx

    url = f"{server.rstrip('/')}/api/v1/flows/{flow_id}/runs"
    headers = {"x-api-key": api_key} if api_key else {}
    progress = None if as_json else _Progress(console)
    final: dict[str, Any] | None = None
    try:
        with (
            httpx.Client(timeout=httpx.Timeout(10.0, read=None), headers=headers) as client,
            client.stream("POST", url, params={"mode": "stream"}, json={"inputs": inputs}) as resp,
        ):
            if resp.status_code >= 400:
                resp.read()
                try:
                    error = resp.json()["error"]
                    err_console.print(f"[red]{resp.status_code} {error['code']}: {error['message']}[/]")
                    for p in (error.get("details") or {}).get("problems", []):
                        err_console.print(
                            f"  [red]✗[/] {p.get('field') or p.get('node_id') or ''}: {p['message']}"
                        )
                except (ValueError, KeyError, TypeError):
                    err_console.print(f"[red]{resp.status_code}: {resp.text[:500]}[/]")
                return EXIT_FAILED
            for event in _sse_events(resp.iter_lines()):
                if progress is not None:
                    progress(event)
                if isinstance(event.data, ev.Waiting):
                    waiting = {"status": RunStatus.WAITING, "run_id": event.run_id, "task": event.data.wire()}
                    print(json.dumps(waiting, default=str))
                    return EXIT_WAITING
                if isinstance(event.data, ev.RunFinished):
                    final = {"run_id": event.run_id, **event.data.wire()}
                    break
    except httpx.HTTPError as exc:
        err_console.print(f"[red]cannot reach {server}: {exc}[/]")
        return EXIT_FAILED
    if final is None:
        err_console.print("[red]the server closed the stream before the run finished[/]")
        return EXIT_FAILED
    if as_json:
        print(json.dumps(final, default=str, ensure_ascii=False))
    else:
        console.print(
            f"\n[bold]{final.get('status')}[/] in {final.get('duration_ms', 0):.1f} ms (run {final['run_id']})"
        )
        if final.get("error"):
            console.print(f"[red]{final['error']}[/]")
        if final.get("outputs"):
            console.print_json(json.dumps(final["outputs"], default=str, ensure_ascii=False))
    return _EXIT_CODES.get(str(final.get("status")), EXIT_FAILED)


def _sse_events(lines: Any) -> Any:
    """Parse server-sent events (id/event/data fields) into engine Events."""
    data_lines: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data_lines.append(line[5:].strip())
        elif not line and data_lines:
            payload = json.loads("\n".join(data_lines))
            data_lines = []
            yield Event.from_dict(payload)


def _prompt_task(task: dict[str, Any]) -> dict[str, Any]:
    from rich.prompt import Prompt

    payload = task.get("payload", {})
    console.print(f"\n[bold yellow]{task['node_id']}[/] asks: {payload.get('message', '')}")
    values: dict[str, Any] = {}
    prefill = payload.get("prefill", {})
    for field in payload.get("fields", []):
        label = field.get("label") or field["name"]
        choices = field.get("options") or (["true", "false"] if field.get("type") == "boolean" else None)
        default = prefill.get(field["name"])
        values[field["name"]] = Prompt.ask(
            f"  {label}", choices=choices, default=None if default is None else str(default)
        )
    actions = payload.get("actions") or ["submit"]
    action = actions[0] if len(actions) == 1 else Prompt.ask("  action", choices=actions, default=actions[0])
    return {"action": action, "values": values}


def _report(result: RunResult, as_json: bool) -> int:
    if as_json:
        print(json.dumps(result.to_dict(), default=str, ensure_ascii=False))
    else:
        style = {RunStatus.COMPLETED: "green", RunStatus.FAILED: "red", RunStatus.CANCELLED: "yellow"}.get(
            RunStatus(result.status), "white"
        )
        console.print(f"\n[bold {style}]{result.status}[/] in {result.duration_ms:.1f} ms")
        if result.error:
            console.print(f"[red]{result.error}[/]")
        if result.outputs:
            console.print_json(json.dumps(result.outputs, default=str, ensure_ascii=False))
    return _EXIT_CODES.get(result.status, EXIT_FAILED)


@app.command("validate")
def validate_command(
    flow_path: Annotated[Path, typer.Argument(metavar="FILE", help="Flow file (JSON or YAML).")],
) -> None:
    """Check a flow and report every problem at once (exit 1 if there are any)."""
    try:
        flow = load_flow(flow_path)
    except FlowValidationError as exc:
        _print_problems(exc)
        raise typer.Exit(EXIT_FAILED) from exc
    console.print(
        f"[green]✓[/] {flow_path}: flow {flow.id!r} is valid ({len(flow.doc.nodes)} nodes, "
        f"{len(flow.doc.edges)} edges)"
    )


@app.command("schema")
def schema_command(
    events: Annotated[
        bool, typer.Option("--events", help="Print the JSON Schema of the run events' wire form instead.")
    ] = False,
) -> None:
    """Print the JSON Schema of the plait/flow@1 document (or, with --events, of the run events)."""
    schema = events_json_schema() if events else FlowDocument.model_json_schema(by_alias=True)
    print(json.dumps(schema, indent=2))


@app.command("nodes")
def nodes_command(
    node_type: Annotated[str | None, typer.Argument(help="Show one type's config schema and ports.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the node types (or describe one)."""
    registry = default_registry()
    if node_type is not None:
        if node_type not in registry:
            err_console.print(
                f"[red]unknown node type {node_type!r}[/]; known: {', '.join(registry.names())}"
            )
            raise typer.Exit(EXIT_FAILED)
        print(json.dumps(registry.describe(node_type), indent=2))
        return
    described = registry.describe_all()
    if as_json:
        print(json.dumps(described, indent=2))
        return
    table = Table("type", "category", "ports out", "description")
    for d in described:
        ports = d["output_ports"] if isinstance(d["output_ports"], str) else ", ".join(d["output_ports"])
        table.add_row(d["name"], d["category"], ports, d["description"])
    console.print(table)


@app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    examples: Annotated[
        Path | None,
        typer.Option(help="Flows imported (and published) when the library is empty; default ./examples."),
    ] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    access_log: Annotated[bool, typer.Option(help="Log every request (uvicorn's access log).")] = True,
) -> None:
    """Serve the HTTP API and the web UI: migrates the database, imports the example flows into an
    empty library, continues runs left unfinished by a crash, and prints a one-time sign-in link
    (`plait admin link` prints a new one). Settings: PLAIT_DATABASE_URL, PLAIT_API_KEY, ..."""
    import uvicorn

    from plait.api import create_app
    from plait.service import Settings
    from plait.service.log_format import log_format_from_env, uvicorn_log_config
    from plait.service.metrics import metrics_mode_from_env

    try:
        settings = Settings.from_env()
        log_format = log_format_from_env()  # PLAIT_LOG_FORMAT: text (uvicorn's lines) or json
        metrics_mode_from_env()  # PLAIT_METRICS: a wrong value is said here, not as a traceback
    except ValueError as exc:
        err_console.print(f"[red]{exc}[/]")
        raise typer.Exit(EXIT_FAILED) from exc
    folder = examples if examples is not None else Path.cwd() / "examples"
    if folder.is_dir():
        settings.import_examples = True
        settings.examples_dir = folder
    # The one-time link that signs the browser in as the local admin (printed at every start).
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    settings.signin_link_base = f"http://{shown_host}:{port}"
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        timeout_graceful_shutdown=5,
        **_log_config(uvicorn_log_config(log_format, log_level)),
    )


def _log_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """uvicorn.run's `log_config` argument: only when set (None would turn uvicorn's logging off)."""
    return {} if config is None else {"log_config": config}


@app.command("worker")
def worker_command(
    concurrency: Annotated[
        int,
        typer.Option(envvar="PLAIT_WORKER_CONCURRENCY", help="Queued runs this worker executes at once."),
    ] = 256,
    name: Annotated[str, typer.Option(help="The worker's name in Celery (name@host).")] = "plait",
    log_level: Annotated[str, typer.Option(help="Celery's log level.")] = "WARNING",
    metrics_port: Annotated[
        int | None,
        typer.Option(
            envvar="PLAIT_WORKER_METRICS_PORT",
            help="Serve this worker's Prometheus /metrics on 127.0.0.1:PORT (default: not served).",
        ),
    ] = None,
) -> None:
    """Execute queued runs (queue mode: PLAIT_EXECUTOR=celery, PLAIT_DATABASE_URL on PostgreSQL,
    PLAIT_REDIS_URL). One asyncio loop executes every run the worker holds; it also continues
    runs whose worker died (their lease expired) and expires human tasks, as a server does."""
    import dataclasses

    from plait.service import Services, Settings
    from plait.service.log_format import install_log_format, log_format_from_env
    from plait.service.observability import Observability
    from plait.workers.events import EventRelay
    from plait.workers.worker import LoopThread, QueueWorker

    try:
        settings = Settings.from_env()
        if settings.executor != "celery":
            raise ValueError("plait worker executes queued runs: set PLAIT_EXECUTOR=celery")
    except ValueError as exc:
        err_console.print(f"[red]{exc}[/]")
        raise typer.Exit(EXIT_FAILED) from exc
    assert settings.redis_url is not None  # check_executor
    # A worker executes in this process what it takes from the queue (the server only queues).
    # Recovered runs count against its concurrency, as queued ones do.
    local = dataclasses.replace(settings, executor="inline", max_active_runs=concurrency)
    loop = LoopThread()
    services = loop.call(Services.open(local))
    # The events this worker commits go to the API servers' streams through Redis.
    relay = EventRelay(settings.redis_url)
    services.store.checkpointer.listeners.append(relay.stored)
    loop.call(relay.start())
    # Metrics, traces and the JSON log context of the runs this worker executes, as a server has.
    install_log_format(log_format_from_env())
    observability = Observability.from_env(services)
    observability.attach()
    if metrics_port is not None:
        loop.call(observability.serve_metrics(metrics_port))
    try:
        QueueWorker(
            settings.redis_url,
            services.runs.control.execute_queued,
            loop,
            concurrency=concurrency,
            name=name,
            log_level=log_level,
        ).run()
    finally:
        loop.call(observability.close())
        loop.call(services.close())
        loop.call(relay.close())
        loop.stop()


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
