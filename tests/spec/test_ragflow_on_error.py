"""RAGFlow's exception handling and per-class timeouts through the importer and exporter: a
node's `on_error` (plait.engine.on_error) is RAGFlow's `exception_method` / `exception_goto` /
`exception_default_value`, both ways, and the round trip gives the same flow."""

from __future__ import annotations

import copy
import json
from typing import Any

import plait
from plait.nodes.registry import default_registry
from plait.spec.formats import import_ragflow
from plait.spec.formats.ragflow_export import export_ragflow
from plait.spec.loader import parse_document


def scripted(node_id: str, script: list[Any], **extra: Any) -> dict[str, Any]:
    config = {"provider": "scripted", "model": "m", "prompt": "go", "script": script}
    return {"id": node_id, "type": "llm", "config": config, **extra}


def guarded_flow() -> dict[str, Any]:
    """`ask` fails and routes to `oops`; `guess` fails and answers its default."""
    return {
        "schema": "plait/flow@1",
        "id": "guarded",
        "name": "Guarded",
        "nodes": [
            {"id": "start", "type": "start"},
            scripted("ask", [{"error": "unavailable"}], on_error={"mode": "route"}),
            {"id": "reply", "type": "message", "config": {"text": "{{ask}}"}},
            {"id": "oops", "type": "message", "config": {"text": "failed: {{ask.error}}"}},
            scripted("guess", [{"error": "error"}], on_error={"mode": "default", "default": "no idea"}),
            {"id": "said", "type": "message", "config": {"text": "guess: {{guess}}"}},
        ],
        "edges": [
            {"source": "start", "target": "ask"},
            {"source": "ask", "target": "reply"},
            {"source": "ask", "source_port": "error", "target": "oops"},
            {"source": "start", "target": "guess"},
            {"source": "guess", "target": "said"},
        ],
    }


def normal(doc: dict[str, Any]) -> dict[str, Any]:
    out = parse_document(copy.deepcopy(doc)).to_dict()
    out["edges"] = sorted(out["edges"], key=lambda e: json.dumps(e, sort_keys=True))
    return out


def without_plait(exported: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(exported)
    out.pop("plait", None)
    for node in out["graph"]["nodes"]:
        node["data"].pop("plait", None)
    return out


def test_on_error_is_written_as_ragflow_exception_handling() -> None:
    exported = json.loads(json.dumps(export_ragflow(guarded_flow(), catalog=default_registry())))
    ask = exported["components"]["ask"]
    assert ask["obj"]["params"]["exception_method"] == "goto"
    assert ask["obj"]["params"]["exception_goto"] == ["oops"]
    assert set(ask["downstream"]) == {"reply", "oops"}
    guess = exported["components"]["guess"]["obj"]["params"]
    assert guess["exception_method"] == "comment" and guess["exception_default_value"] == "no idea"
    handles = {(e["source"], e["target"]): e["sourceHandle"] for e in exported["graph"]["edges"]}
    assert handles[("ask", "oops")] == "error"


def test_round_trip_gives_the_same_flow() -> None:
    flow = guarded_flow()
    exported = json.loads(json.dumps(export_ragflow(flow, catalog=default_registry())))
    back = import_ragflow(exported, catalog=default_registry())
    assert back.problems == []
    assert normal(back.document) == normal(flow)
    # From the RAGFlow params alone (every node edited in RAGFlow) the handling is the same.
    converted = import_ragflow(without_plait(exported), catalog=default_registry())
    assert converted.problems == []
    nodes = {n["id"]: n for n in converted.document["nodes"]}
    assert nodes["ask"]["on_error"] == {"mode": "route"}
    assert nodes["guess"]["on_error"] == {"mode": "default", "default": "no idea"}
    assert {"source": "ask", "source_port": "error", "target": "oops"} in converted.document["edges"]


async def test_the_imported_flow_runs_its_error_paths() -> None:
    exported = export_ragflow(guarded_flow(), catalog=default_registry())
    doc = import_ragflow(exported, catalog=default_registry()).document
    result = await plait.run(doc)
    assert result.status == "completed", result.error
    assert result.outputs["oops"] == "failed: " + result.nodes["ask"].output["error"]
    assert "unavailable" in result.nodes["ask"].output["error"]
    assert result.outputs["said"] == "guess: no idea"
    assert result.nodes["reply"].status == "skipped"


def test_a_message_default_is_its_content_and_a_bare_method_is_a_warning() -> None:
    def component(name: str, params: dict[str, Any], down: list[str] | None = None) -> dict[str, Any]:
        return {"obj": {"component_name": name, "params": params}, "downstream": down or [], "upstream": []}

    data = {
        "components": {
            "begin": component("Begin", {}, ["Message:A", "Message:B"]),
            "Message:A": component(
                "Message",
                {"content": ["hi"], "exception_method": "comment", "exception_default_value": "later"},
            ),
            "Message:B": component("Message", {"content": ["x"], "exception_method": "comment"}),
        }
    }
    result = import_ragflow(data, catalog=default_registry())
    nodes = {n["id"]: n for n in result.document["nodes"]}
    assert nodes["Message:A"]["on_error"] == {"mode": "default", "default": {"content": "later"}}
    assert "on_error" not in nodes["Message:B"]
    assert any("Message:B" in w and "fails the run" in w for w in result.warnings)
    exported = export_ragflow(result.document, catalog=default_registry())
    assert exported["components"]["Message:A"]["obj"]["params"]["exception_default_value"] == "later"


def test_per_class_timeouts_are_mapped_on_import() -> None:
    def component(name: str, params: dict[str, Any], down: list[str] | None = None) -> dict[str, Any]:
        return {"obj": {"component_name": name, "params": params}, "downstream": down or [], "upstream": []}

    data = {
        "components": {
            "begin": component("Begin", {}, ["TavilySearch:T", "DuckDuckGo:D", "Wikipedia:W"]),
            "TavilySearch:T": component("TavilySearch", {"query": "sys.query"}),
            "DuckDuckGo:D": component("DuckDuckGo", {"query": "sys.query", "timeout": 30}),
            "Wikipedia:W": component("Wikipedia", {"query": "sys.query"}),
        }
    }
    result = import_ragflow(data, catalog=default_registry(), tools=["web_search", "wikipedia"])
    timeouts = {n["id"]: n.get("timeout_s") for n in result.document["nodes"]}
    assert timeouts == {"begin": None, "TavilySearch:T": 12.0, "DuckDuckGo:D": 30.0, "Wikipedia:W": 12.0}
    sql = {
        "components": {
            "begin": component("Begin", {}, ["ExeSQL:S"]),
            "ExeSQL:S": component("ExeSQL", {"sql": "select 1", "db_type": "sqlite", "database": "x"}),
        }
    }
    nodes = import_ragflow(sql, catalog=default_registry(), tools=["sql"]).document["nodes"]
    assert [n.get("timeout_s") for n in nodes] == [None, 3.0]  # ExeSQL: 3 s, as RAGFlow
