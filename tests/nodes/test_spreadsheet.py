"""The `spreadsheet` node: xlsx and csv read and written with openpyxl, through run artifacts."""

from __future__ import annotations

import base64
import csv
import io

import pytest
from openpyxl import Workbook, load_workbook

import plait
from plait.engine.checkpoint import InMemoryCheckpointer
from plait.engine.services import RunServices
from plait.nodes.artifacts import MemoryArtifacts


def workbook_bytes() -> bytes:
    book = Workbook()
    ws = book.active
    ws.title = "Sales"
    ws.append(["region", "q1", "q2"])
    ws.append(["North", 10, 12.5])
    ws.append(["South", 20, 18])
    ws.append(["West", 5, None])
    other = book.create_sheet("Notes")
    other.append(["note"])
    other.append(["hello"])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def flow(*nodes: dict, edges: list | None = None) -> dict:
    return {"schema": "plait/flow@1", "id": "sheets", "nodes": list(nodes), "edges": edges or []}


async def test_read_xlsx_sheet_range_and_objects():
    source = {"base64": base64.b64encode(workbook_bytes()).decode(), "filename": "sales.xlsx"}
    result = await plait.run(
        flow({"id": "read", "type": "spreadsheet", "config": {"source": "{{inputs.file}}"}}), {"file": source}
    )
    assert result.status == "completed", result.error
    out = result.nodes["read"].output
    assert out["sheet"] == "Sales" and out["columns"] == ["region", "q1", "q2"]
    assert out["rows"] == [
        {"region": "North", "q1": 10, "q2": 12.5},
        {"region": "South", "q1": 20, "q2": 18},
        {"region": "West", "q1": 5, "q2": None},
    ]
    assert out["markdown"].splitlines()[:3] == [
        "| region | q1 | q2 |",
        "|---|---|---|",
        "| North | 10 | 12.5 |",
    ]
    assert out["summary"] == "sales.xlsx: 3 rows, 3 columns (region, q1, q2)"

    ranged = await plait.run(
        flow({"id": "read", "type": "spreadsheet",
              "config": {"source": "{{inputs.file}}", "range": "A2:B3", "header": False}}),
        {"file": source},
    )  # fmt: skip
    assert ranged.nodes["read"].output["rows"] == [["North", 10], ["South", 20]]
    notes = await plait.run(
        flow(
            {"id": "read", "type": "spreadsheet", "config": {"source": "{{inputs.file}}", "sheet": "Notes"}}
        ),
        {"file": source},
    )
    assert notes.nodes["read"].output["rows"] == [{"note": "hello"}]


async def test_write_then_read_back_through_an_artifact_of_the_run():
    store = MemoryArtifacts()
    doc = flow(
        {"id": "write", "type": "spreadsheet",
         "config": {"operation": "write", "data": "{{inputs.data}}", "filename": "report"}},
        {"id": "read", "type": "spreadsheet", "config": {"sheet": "People"}},
        edges=[{"source": "write", "target": "read"}],
    )  # fmt: skip
    data = {"People": [{"name": "Ann", "age": 31}, {"name": "Bob", "city": "Paris"}], "Empty": []}
    result = await plait.run(doc, {"data": data}, services=RunServices(artifacts=store))
    assert result.status == "completed", result.error
    written = result.nodes["write"].output
    assert written["filename"] == "report.xlsx" and written["sheets"] == {"People": 2, "Empty": 0}
    _, raw = await store.get(result.run_id, written["artifact_id"])
    book = load_workbook(io.BytesIO(raw))
    assert book.sheetnames == ["People", "Empty"]
    assert [list(r) for r in book["People"].iter_rows(values_only=True)] == [
        ["name", "age", "city"], ["Ann", 31, None], ["Bob", None, "Paris"]
    ]  # fmt: skip
    assert result.nodes["read"].output["rows"] == [
        {"name": "Ann", "age": 31, "city": None},
        {"name": "Bob", "age": None, "city": "Paris"},
    ]


async def test_csv_write_neutralises_formulas_and_reads_csv_text():
    store = MemoryArtifacts()
    doc = flow(
        {"id": "write", "type": "spreadsheet",
         "config": {"operation": "write", "file_format": "csv", "data": "{{inputs.rows}}"}},
    )  # fmt: skip
    rows = [{"a": '=HYPERLINK("http://evil")', "b": -3}, {"a": "plain", "b": 4}]
    result = await plait.run(doc, {"rows": rows}, services=RunServices(artifacts=store))
    out = result.nodes["write"].output
    assert out["mime_type"].startswith("text/csv") and out["filename"] == "spreadsheet.csv"
    _, raw = await store.get(result.run_id, out["artifact_id"])
    assert list(csv.reader(io.StringIO(raw.decode()))) == [
        ["a", "b"], ['\'=HYPERLINK("http://evil")', "-3"], ["plain", "4"]
    ]  # fmt: skip

    text = "name;score\nann;3\nbob;5\n"
    read = await plait.run(
        flow({"id": "read", "type": "spreadsheet", "config": {"source": "{{inputs.csv}}"}}), {"csv": text}
    )
    assert read.nodes["read"].output["rows"] == [{"name": "ann", "score": "3"}, {"name": "bob", "score": "5"}]


@pytest.mark.parametrize(
    ("config", "inputs", "says"),
    [
        ({"source": "{{inputs.x}}", "sheet": "Nope"}, {"x": {"base64": base64.b64encode(workbook_bytes()).decode(), "filename": "a.xlsx"}}, "no sheet 'Nope'"),
        ({"source": "{{inputs.x}}", "range": "not a range"}, {"x": "a,b\n1,2"}, "is not a cell range"),
        ({"source": "{{inputs.x}}", "file_format": "xlsx"}, {"x": {"base64": base64.b64encode(b"hello").decode()}}, "not a readable xlsx"),
        ({"source": "{{inputs.x}}"}, {"x": "0" * 64}, "no file 000000000000... in this run"),
        ({"operation": "write", "data": "{{inputs.x}}"}, {"x": 42}, "data must be a list of rows"),
    ],
)  # fmt: skip
async def test_bad_input_names_the_node_and_the_fix(config, inputs, says):
    result = await plait.run(flow({"id": "s", "type": "spreadsheet", "config": config}), inputs)
    assert result.status == "failed"
    assert "spreadsheet node 's'" in result.nodes["s"].error and says in result.nodes["s"].error


async def test_input_files_are_bounded(monkeypatch):
    monkeypatch.setenv("PLAIT_MAX_ARTIFACT_BYTES", "100")
    source = {"base64": base64.b64encode(workbook_bytes()).decode(), "filename": "sales.xlsx"}
    result = await plait.run(
        flow({"id": "s", "type": "spreadsheet", "config": {"source": "{{inputs.file}}"}}), {"file": source}
    )
    assert "over the limit of 100 bytes" in result.nodes["s"].error


async def test_retry_from_the_reading_node_reads_the_file_of_the_retried_run():
    store = MemoryArtifacts()
    services = RunServices(artifacts=store)
    checkpointer = InMemoryCheckpointer()
    doc = flow(
        {"id": "write", "type": "spreadsheet", "config": {"operation": "write", "data": "{{inputs.rows}}"}},
        {"id": "read", "type": "spreadsheet", "config": {}},
        edges=[{"source": "write", "target": "read"}],
    )
    first = await plait.run(doc, {"rows": [{"a": 1}]}, services=services, checkpointer=checkpointer)
    assert first.status == "completed", first.error
    again = await plait.retry(doc, first.run_id, "read", checkpointer=checkpointer, services=services)
    assert again.status == "completed", again.error
    assert again.nodes["write"].reused and again.nodes["read"].output["rows"] == [{"a": 1}]
