"""RAGFlow documents using ExeSQL, DocsGenerator, ExcelProcessor and the Email / Crawler /
TavilyExtract / PubMed / GitHub tools import onto plait's nodes and tools, and run (a real SQLite
file, a real SMTP server, a local HTTP server)."""

from __future__ import annotations

import io
import json
import socket
import sqlite3
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from openpyxl import load_workbook

from plait.engine.api import run
from plait.engine.services import RunServices
from plait.nodes.artifacts import MemoryArtifacts
from plait.nodes.registry import default_registry
from plait.spec.formats import RagflowImportError, import_ragflow
from plait.spec.formats.ragflow_export import export_ragflow
from plait.tools.builtin import default_tools

TOOLS = default_tools().names()


def component(name: str, params: dict[str, Any], down: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {"obj": {"component_name": name, "params": params}, "downstream": list(down), "upstream": []}


def imported(components: dict[str, Any]):
    result = import_ragflow({"components": components}, catalog=default_registry(), tools=TOOLS)
    return result.document, result.warnings


@pytest.fixture
def shop(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("PLAIT_SQL_SQLITE_DIRS", str(tmp_path))
    path = tmp_path / "shop.db"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE items (name TEXT, price REAL);INSERT INTO items VALUES ('apple', 1.5), ('pear', 2.25);"
    )
    con.commit()
    con.close()
    return f"sqlite:///{path}"


SQL_AGENT = {
    "begin": component("Begin", {"mode": "conversational"}, ["ExeSQL:Query"]),
    "ExeSQL:Query": component(
        "ExeSQL",
        {
            "sql": "{sys.query}",
            "db_type": "postgres",
            "host": "db.internal",
            "port": 5432,
            "database": "shop",
            "username": "reader",
            "password": "hunter2",
            "max_records": 50,
        },
        ["ExcelProcessor:Write"],
    ),  # fmt: skip
    "ExcelProcessor:Write": component(
        "ExcelProcessor",
        {
            "operation": "output",
            "transform_data": "ExeSQL:Query@json",
            "output_format": "xlsx",
            "output_filename": "items",
        },
        ["ExcelProcessor:Read"],
    ),  # fmt: skip
    "ExcelProcessor:Read": component(
        "ExcelProcessor",
        {"operation": "read", "input_files": ["ExcelProcessor:Write@attachment"], "sheet_selection": "first"},
        ["DocsGenerator:Doc"],
    ),
    "DocsGenerator:Doc": component(
        "DocsGenerator",
        {
            "content": "# Items\n\n{ExeSQL:Query@formalized_content}",
            "output_format": "docx",
            "filename": "items",
        },
        ["Message:Out"],
    ),
    "Message:Out": component(
        "Message", {"content": ["{ExcelProcessor:Read@markdown}\n{DocsGenerator:Doc@download}"]}
    ),
}


async def test_exesql_excel_and_docs_generator_import_and_run(shop):
    doc, warnings = imported(SQL_AGENT)
    nodes = {n["id"]: n for n in doc["nodes"]}
    sql = nodes["ExeSQL:Query"]
    assert sql["type"] == "sql"
    assert sql["config"] == {"connection": "SQL_URL", "query": "{{sys.query}}", "max_rows": 50}
    assert "hunter2" not in str(doc)  # the password is never imported
    assert any(
        "postgresql://reader:<password>@db.internal:5432/shop" in w and "SQL_URL" in w for w in warnings
    )
    assert nodes["ExcelProcessor:Write"]["config"] == {
        "operation": "write", "file_format": "xlsx", "data": "{{ExeSQL:Query.rows}}", "filename": "items"
    }  # fmt: skip
    assert nodes["ExcelProcessor:Read"]["config"] == {
        "operation": "read",
        "source": "{{ExcelProcessor:Write}}",
    }
    assert nodes["DocsGenerator:Doc"]["config"]["format"] == "docx"

    store = MemoryArtifacts()
    result = await run(
        doc,
        {"query": "SELECT name, price FROM items ORDER BY name"},
        env={"SQL_URL": shop},
        services=RunServices(artifacts=store),
    )
    assert result.status == "completed", result.error
    assert result.nodes["ExeSQL:Query"].output["rows"] == [
        {"name": "apple", "price": 1.5},
        {"name": "pear", "price": 2.25},
    ]
    written = result.nodes["ExcelProcessor:Write"].output
    _, xlsx = await store.get(result.run_id, written["artifact_id"])
    assert [list(r) for r in load_workbook(io.BytesIO(xlsx)).active.iter_rows(values_only=True)] == [
        ["name", "price"], ["apple", 1.5], ["pear", 2.25]
    ]  # fmt: skip
    message = result.outputs["Message:Out"]
    assert "| apple | 1.5 |" in message and "items.docx" in message
    docx = result.nodes["DocsGenerator:Doc"].output
    assert docx["filename"] == "items.docx" and docx["size"] > 0

    refused = await run(doc, {"query": "DELETE FROM items"}, env={"SQL_URL": shop})
    assert refused.status == "failed"
    assert (
        "sql node 'ExeSQL:Query' refused the statement: only SELECT statements are allowed, not DELETE"
        in (refused.nodes["ExeSQL:Query"].error)
    )


def test_excel_processor_merge_is_refused_by_name():
    with pytest.raises(RagflowImportError) as err:
        imported(
            {
                "begin": component("Begin", {}, ["ExcelProcessor:M"]),
                "ExcelProcessor:M": component("ExcelProcessor", {"operation": "merge", "input_files": []}),
            }
        )
    assert [(c["id"], c["component"]) for c in err.value.components] == [
        ("ExcelProcessor:M", "ExcelProcessor")
    ]
    assert "merge" in err.value.message


def test_agent_tools_map_and_their_settings_are_not_imported():
    doc, warnings = imported(
        {
            "begin": component("Begin", {}, ["Agent:A"]),
            "Agent:A": component(
                "Agent",
                {
                    "llm_id": "m@OpenAI",
                    "tools": [
                        {
                            "component_name": "Email",
                            "params": {
                                "smtp_server": "smtp.x",
                                "email": "a@x.com",
                                "password": "pw",
                                "smtp_port": 465,
                            },
                        },
                        {"component_name": "ExeSQL", "params": {"host": "db", "password": "pw"}},
                        {"component_name": "Crawler", "params": {}},
                        {"component_name": "TavilyExtract", "params": {"api_key": "tvly-x"}},
                        {"component_name": "PubMed", "params": {}},
                        {"component_name": "GitHub", "params": {}},
                    ],
                },
            ),  # fmt: skip
        }
    )
    agent = next(n for n in doc["nodes"] if n["id"] == "Agent:A")
    assert agent["config"]["tools"] == ["email", "sql", "crawler", "tavily_extract", "pubmed", "github"]
    assert "pw" not in str(doc) and "tvly-x" not in str(doc)
    assert any("SMTP_HOST, SMTP_PORT, SMTP_USER, SMTP_PASSWORD, SMTP_FROM" in w for w in warnings)
    assert any("SQL_URL" in w for w in warnings) and any("TAVILY_API_KEY" in w for w in warnings)


@pytest.fixture
def smtp(monkeypatch):
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    received: list[Any] = []

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # noqa: N802
            received.append(envelope)
            return "250 OK"

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    yield port, received
    controller.stop()


async def test_canvas_email_and_crawler_components_run_as_tool_nodes(smtp, tmp_path):
    port, received = smtp
    doc, _ = imported(
        {
            "begin": component("Begin", {}, ["Email:Send"]),
            "Email:Send": component(
                "Email",
                {
                    "to_email": "{sys.query}",
                    "subject": "Hi",
                    "content": "Hello from RAGFlow",
                    "smtp_server": "smtp.x",
                    "password": "pw",
                },
                ["Message:M"],
            ),  # fmt: skip
            "Message:M": component("Message", {"content": ["{Email:Send@success}"]}),
        }
    )
    send = next(n for n in doc["nodes"] if n["id"] == "Email:Send")
    assert send["type"] == "tool"
    assert send["config"] == {
        "tool": "email",
        "args": {"to": "{{sys.query}}", "subject": "Hi", "content": "Hello from RAGFlow"},
    }
    env = {
        "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": str(port),
        "SMTP_SECURITY": "none",
        "SMTP_FROM": "bot@example.com",
    }
    result = await run(doc, {"query": "ann@example.com"}, env=env)
    assert result.status == "completed", result.error
    assert result.outputs["Message:M"] == "true"
    assert received[-1].rcpt_tos == ["ann@example.com"]

    crawler, _ = imported(
        {
            "begin": component("Begin", {}, ["Crawler:C"]),
            "Crawler:C": component("Crawler", {"query": "{sys.query}", "extract_type": "content"}),
        }
    )
    node = next(n for n in crawler["nodes"] if n["id"] == "Crawler:C")
    assert node["config"] == {"tool": "crawler", "args": {"url": "{{sys.query}}", "format": "text"}}


def _without_plait(exported: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(exported))
    out.pop("plait", None)
    for node in out["graph"]["nodes"]:
        node["data"].pop("plait", None)
    return out


def test_export_round_trip_of_the_data_nodes_and_tools():
    components = {
        **SQL_AGENT,
        "Message:Out": component("Message", {"content": ["{ExcelProcessor:Read@markdown}"]}, ["Agent:A"]),
        "Agent:A": component(
            "Agent",
            {
                "llm_id": "m@OpenAI",
                "tools": [{"component_name": name} for name in ("ExeSQL", "Email", "GitHub")],
            },
            ["Crawler:C"],
        ),
        "Crawler:C": component("Crawler", {"query": "{sys.query}", "extract_type": "markdown"}, ["PubMed:P"]),
        "PubMed:P": component("PubMed", {"query": "{Crawler:C@formalized_content}", "top_n": 3}),
    }
    first, _ = imported(components)
    exported = json.loads(json.dumps(export_ragflow(first, catalog=default_registry())))
    names = {cid: c["obj"]["component_name"] for cid, c in exported["components"].items()}
    assert names["ExeSQL:Query"] == "ExeSQL" and names["DocsGenerator:Doc"] == "DocsGenerator"
    assert names["ExcelProcessor:Write"] == names["ExcelProcessor:Read"] == "ExcelProcessor"
    sql = exported["components"]["ExeSQL:Query"]["obj"]["params"]
    assert sql["sql"] == "{sys.query}" and sql["password"] == "" and sql["max_records"] == 50
    agent = exported["components"]["Agent:A"]["obj"]["params"]
    assert [t["component_name"] for t in agent["tools"]] == ["ExeSQL", "Email", "GitHub"]
    assert exported["components"]["Crawler:C"]["obj"]["params"] == {
        "query": "sys.query",
        "extract_type": "markdown",
    }

    again = import_ragflow(exported, catalog=default_registry(), tools=TOOLS)
    assert again.problems == [] and again.document == first
    # From RAGFlow's params alone (every node edited there), the same nodes and configs come back.
    converted = import_ragflow(_without_plait(exported), catalog=default_registry(), tools=TOOLS)
    by_id = {n["id"]: n for n in converted.document["nodes"]}
    for node in first["nodes"]:
        if node["type"] in ("sql", "document", "spreadsheet", "tool"):
            assert by_id[node["id"]]["config"] == node["config"], node["id"]
