"""Exporting plait flows as RAGFlow agent documents, and the round trip import -> export -> import."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_ragflow_import import with_retrieval  # the stand-in `retrieval` node type

from plait.nodes.registry import default_registry
from plait.spec.formats import import_ragflow
from plait.spec.formats.ragflow_export import RagflowExportError, export_ragflow
from plait.spec.loader import parse_document

FIXTURES = Path(__file__).parent / "ragflow_fixtures"
EXAMPLES = Path(__file__).parents[2] / "examples"
IMPORTABLE = ["agent_msg", "dfx_picture_parser", "questions_category", "subaget", "switch"]


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def normal(doc: dict[str, Any]) -> dict[str, Any]:
    """A document with defaults filled in and edges in a fixed order (their order means nothing)."""
    out = parse_document(copy.deepcopy(doc)).to_dict()

    def sort(graph: dict[str, Any]) -> None:
        graph["edges"] = sorted(graph["edges"], key=lambda e: json.dumps(e, sort_keys=True))
        for n in graph["nodes"]:
            body = (n.get("config") or {}).get("body")
            if isinstance(body, dict):
                sort(body)

    sort(out)
    return out


def without_plait(exported: dict[str, Any]) -> dict[str, Any]:
    """The export as a RAGFlow user would have it after editing every node (no plait specs)."""
    out = copy.deepcopy(exported)
    out.pop("plait", None)
    for node in out["graph"]["nodes"]:
        node["data"].pop("plait", None)
    return out


@pytest.mark.parametrize("name", IMPORTABLE)
def test_fixture_round_trip_gives_the_same_flow(name: str) -> None:
    first = import_ragflow(load(name), catalog=default_registry()).document
    exported = json.loads(json.dumps(export_ragflow(first)))
    assert set(exported) >= {"components", "graph", "globals", "variables"}
    again = import_ragflow(exported, catalog=default_registry())
    assert again.problems == []
    assert again.document == first


@pytest.mark.parametrize("name", IMPORTABLE)
def test_export_converts_back_without_plait_specs(name: str) -> None:
    """The RAGFlow params alone carry the flow: converting them again gives a valid flow with
    the same nodes, types and edges."""
    first = import_ragflow(load(name), catalog=default_registry()).document
    second = import_ragflow(without_plait(export_ragflow(first)), catalog=default_registry())
    assert second.problems == []

    def shape(doc: dict[str, Any]) -> Any:
        return (
            sorted((n["id"], n["type"]) for n in doc["nodes"]),
            sorted(json.dumps(e, sort_keys=True) for e in doc["edges"]),
        )

    assert shape(second.document) == shape(first)
    assert second.document["nodes"] == first["nodes"] or name in ("subaget",)


@pytest.mark.parametrize("example", ["branching.json", "llm_triage.json"])
def test_plait_examples_round_trip(example: str) -> None:
    flow = yaml.safe_load((EXAMPLES / example).read_text(encoding="utf-8"))
    exported = json.loads(json.dumps(export_ragflow(flow)))
    back = import_ragflow(exported, catalog=default_registry())
    assert back.problems == []
    assert normal(back.document) == normal(flow)
    # And once more: export -> import is stable.
    assert normal(
        import_ragflow(export_ragflow(back.document), catalog=default_registry()).document
    ) == normal(flow)
    # Converted from the RAGFlow params alone, the flow is still valid with the same nodes.
    converted = import_ragflow(without_plait(exported), catalog=default_registry())
    assert converted.problems == []
    assert len(converted.document["nodes"]) == len(flow["nodes"])


def test_exported_components_read_like_ragflow() -> None:
    flow = yaml.safe_load((EXAMPLES / "llm_triage.json").read_text(encoding="utf-8"))
    out = export_ragflow(flow)
    components = out["components"]
    assert components["begin"]["obj"]["component_name"] == "Begin"
    route = components["route"]["obj"]["params"]
    assert route["category_description"]["billing"]["to"] == ["billing_reply", "team"]
    assert route["query"] == "begin@message"
    llm = components["billing_reply"]["obj"]["params"]
    assert llm["llm_id"].endswith("@OpenAI-API-Compatible")
    assert "{begin@message}" in llm["prompts"][0]["content"]


@pytest.mark.parametrize(
    ("example", "named"),
    [
        ("subflow.json", ["first", "second"]),
        ("agent.json", ["agent"]),
        ("http_fetch.yaml", ["pick"]),
    ],
)
def test_flows_with_nodes_ragflow_lacks_are_refused_by_name(example: str, named: list[str]) -> None:
    flow = yaml.safe_load((EXAMPLES / example).read_text(encoding="utf-8"))
    with pytest.raises(RagflowExportError) as err:
        export_ragflow(flow)
    assert [n["id"] for n in err.value.nodes] == named
    assert all(n["reason"] for n in err.value.nodes)


def test_edge_llm_flows_are_refused() -> None:
    flow = yaml.safe_load((EXAMPLES / "edge_support.yaml").read_text(encoding="utf-8"))
    with pytest.raises(RagflowExportError, match="edge_llm"):
        export_ragflow(flow)


def test_loop_map_and_sub_agents_survive_conversion() -> None:
    flow = {
        "schema": "plait/flow@1",
        "id": "shapes",
        "variables": {"n": 0},
        "nodes": [
            {"id": "start", "type": "start", "config": {"trigger": "chat"}},
            {
                "id": "split",
                "type": "text",
                "config": {"operation": "split", "source": "{{sys.query}}", "delimiters": [","]},
            },
            {
                "id": "each",
                "type": "map",
                "config": {
                    "items": "{{split}}",
                    "body": {
                        "nodes": [
                            {
                                "id": "up",
                                "type": "text",
                                "config": {"operation": "template", "template": "{{index}}={{item}}"},
                            }
                        ],
                        "edges": [],
                    },
                },
            },
            {
                "id": "count",
                "type": "loop",
                "config": {
                    "max_iterations": 5,
                    "until": [{"ref": "{{vars.n}}", "op": ">=", "value": 3}],
                    "body": {
                        "nodes": [
                            {
                                "id": "inc",
                                "type": "assign",
                                "config": {"assignments": [{"variable": "n", "op": "+=", "value": 1}]},
                            }
                        ],
                        "edges": [],
                    },
                },
            },
            {
                "id": "boss",
                "type": "agent",
                "config": {
                    "provider": "auto",
                    "prompt": "{{sys.query}}",
                    "sub_agents": [
                        {
                            "name": "helper",
                            "description": "helps",
                            "agent": {"provider": "auto", "tools": ["wikipedia"]},
                        }
                    ],
                },
            },
            {"id": "say", "type": "message", "config": {"text": "{{boss.content}} {{vars.n}}"}},
        ],
        "edges": [
            {"source": "start", "target": "split"},
            {"source": "split", "target": "each"},
            {"source": "each", "target": "count"},
            {"source": "count", "target": "boss"},
            {"source": "boss", "target": "say"},
        ],
    }
    exported = export_ragflow(flow)
    names = {cid: c["obj"]["component_name"] for cid, c in exported["components"].items()}
    assert names["each"] == "Iteration" and names["IterationItem:each"] == "IterationItem"
    assert names["count"] == "Loop" and names["LoopItem:count"] == "LoopItem"
    assert names["boss_helper"] == "Agent"
    assert exported["components"]["up"]["parent_id"] == "each"
    assert (
        exported["components"]["up"]["obj"]["params"]["script"]
        == "{IterationItem:each@index}={IterationItem:each@item}"
    )
    assert normal(import_ragflow(exported, catalog=default_registry()).document) == normal(flow)
    converted = import_ragflow(without_plait(exported), catalog=default_registry())
    assert converted.problems == []
    nodes = {n["id"]: n for n in converted.document["nodes"]}
    assert nodes["boss"]["config"]["sub_agents"][0]["name"] == "helper"
    assert nodes["boss"]["config"]["sub_agents"][0]["agent"]["tools"] == ["wikipedia"]
    assert nodes["count"]["config"]["until"] == [{"ref": "{{vars.n}}", "op": ">=", "value": 3}]


def test_all_json_round_trips_once_a_retrieval_node_exists() -> None:
    """Loops, iterations, exposed body values and 12-way switches survive both ways: unchanged,
    and converted from the RAGFlow params alone."""
    registry = with_retrieval()
    first = import_ragflow(load("all"), catalog=registry).document
    exported = json.loads(json.dumps(export_ragflow(first)))
    assert exported["components"]["Retrieval:KBSearch"]["obj"]["params"]["top_n"] == 5
    assert import_ragflow(exported, catalog=registry).document == first
    converted = import_ragflow(without_plait(exported), catalog=registry)
    assert converted.problems == []

    def shape(doc: dict[str, Any], prefix: str = "") -> list[Any]:
        out: list[Any] = []
        for n in doc["nodes"]:
            out.append((prefix + n["id"], n["type"]))
            body = (n.get("config") or {}).get("body")
            if body:
                out += shape(body, f"{prefix}{n['id']}/")
        out += [(prefix, json.dumps(e, sort_keys=True)) for e in doc["edges"]]
        return sorted(out)

    assert shape(converted.document) == shape(first)
