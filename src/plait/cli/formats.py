"""`plait import ragflow FILE` and `plait export ragflow FLOW`: RAGFlow agent documents to plait
flows and back (docs/ragflow.md).

Conversion needs only the spec layer and the node registry, so it works without a server or a
database. `--publish` stores the imported flow in the flow library of PLAIT_DATABASE_URL (default
./.plait/plait.db), owned by the local admin, and publishes it; the service layer is imported when
that option is used, not when `plait` starts (as `plait admin` does), so `plait run` stays quick.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from plait.nodes.registry import default_registry
from plait.spec.formats.ragflow import RagflowImportError, import_ragflow
from plait.spec.formats.ragflow_export import RagflowExportError, export_ragflow
from plait.spec.loader import read_document_data
from plait.spec.problems import FlowValidationError
from plait.tools.builtin import default_tools

import_app = typer.Typer(help="Import flows from other formats (RAGFlow agents).", no_args_is_help=True)
export_app = typer.Typer(help="Export flows to other formats (RAGFlow agents).", no_args_is_help=True)
console = Console()
err_console = Console(stderr=True)

FILE_HELP = "The RAGFlow agent document (its DSL JSON, with `components` and/or `graph`)."


def _write(document: dict[str, Any], output: Path | None) -> None:
    text = json.dumps(document, indent=2, ensure_ascii=False)
    if output is None:
        print(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
        err_console.print(f"[green]✓[/] wrote {escape(str(output))}")


@import_app.command("ragflow")
def import_ragflow_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help=FILE_HELP)],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the plait flow here (default: stdout).")
    ] = None,
    publish: Annotated[
        bool,
        typer.Option(help="Store the flow in the library (PLAIT_DATABASE_URL) and publish a version."),
    ] = False,
    flow_id: Annotated[str | None, typer.Option("--id", help="The flow id (default: ragflow-agent).")] = None,
    overwrite: Annotated[bool, typer.Option(help="With --publish: replace a flow with the same id.")] = False,
) -> None:
    """Convert a RAGFlow agent into a plait flow; exits 1 naming every component plait cannot run."""
    if not file.is_file():
        err_console.print(f"[red]no such file: {escape(str(file))}[/]")
        raise typer.Exit(1)
    registry = default_registry()
    try:
        result = import_ragflow(
            file.read_text(encoding="utf-8"),
            catalog=registry,
            tools=default_tools().names(),
            flow_id=flow_id,
        )
    except RagflowImportError as exc:
        err_console.print(f"[red]{escape(exc.message)}[/]")
        if exc.hint:
            err_console.print(f"fix: {escape(exc.hint)}")
        raise typer.Exit(1) from exc
    for warning in result.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}")
    if result.problems:
        for problem in result.problems:
            err_console.print(f"[red]•[/] {escape(str(problem))}")
        raise typer.Exit(1)
    if output is not None or not publish:
        _write(result.document, output)
    if publish:
        flow = asyncio.run(_publish(result.document, overwrite=overwrite))
        err_console.print(f"[green]✓[/] published flow {flow['id']!r} version {flow['latest_version']}")


async def _publish(document: dict[str, Any], *, overwrite: bool) -> dict[str, Any]:
    from plait.service import ServiceError, Settings
    from plait.service.flows import FlowService
    from plait.service.users import UserService
    from plait.store import Store

    settings = Settings.from_env()
    store = await Store.open(settings.database_url)
    try:
        admin = await UserService(store, settings).local_admin()
        try:
            return await FlowService(store).import_document(
                document, publish=True, overwrite=overwrite, owner_id=admin.user_id, fmt="plait"
            )
        except ServiceError as exc:
            err_console.print(f"[red]{escape(exc.message)}[/]")
            raise typer.Exit(1) from exc
    finally:
        await store.close()


@export_app.command("ragflow")
def export_ragflow_command(
    flow_file: Annotated[Path, typer.Argument(metavar="FLOW", help="The plait flow (JSON or YAML).")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the RAGFlow document here (default: stdout).")
    ] = None,
) -> None:
    """Write a plait flow as a RAGFlow agent document; exits 1 naming every node RAGFlow lacks."""
    warnings: list[str] = []
    try:
        document = export_ragflow(
            read_document_data(flow_file), warnings=warnings, catalog=default_registry()
        )
    except FlowValidationError as exc:
        for problem in exc.problems:
            err_console.print(f"[red]•[/] {escape(str(problem))}")
        raise typer.Exit(1) from exc
    except RagflowExportError as exc:
        err_console.print(f"[red]{escape(exc.message)}[/]")
        raise typer.Exit(1) from exc
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}")
    _write(document, output)
