"""Flow documents are read within limits: YAML bombs, self-references, deep nesting and huge texts
are clear problems (document_too_large / document_too_deep), found fast and without building them."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import plait
from plait.spec.loader import DocumentLimits, check_document_data, read_document_data
from plait.spec.problems import FlowValidationError

REPO = Path(__file__).resolve().parents[2]

# The ~600-byte "billion laughs": 9 levels of 9 aliases, 9**9 strings once expanded.
LAUGHS = "id: laughs\n" + "".join(
    f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9 if prev else ['"lol"'] * 9) + "]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f", "g", "h"], "abcdefghi", strict=True)
)


def problem(source: Any, limits: DocumentLimits | None = None) -> tuple[str, str, str]:
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(FlowValidationError) as info:
            read_document_data(source, limits)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 2
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    first = info.value.problems[0]
    return first.code, first.message, first.hint or ""


def test_billion_laughs_is_refused_before_it_is_built() -> None:
    assert len(LAUGHS) < 700
    code, message, hint = problem(LAUGHS)
    assert code == "document_too_large"
    assert "aliases expanded" in message and "2,097,152 characters" in message
    assert "PLAIT_DOCUMENT_MAX_CHARS" in hint


@pytest.mark.parametrize(
    "text", ["id: s\na: &a [*a]\n", "id: s\na: &a {b: *a}\n", "id: s\na: &a [1, [2, *a]]\n"]
)
def test_self_referencing_alias(text: str) -> None:
    code, message, _ = problem(text)
    assert code == "document_too_large"
    assert "contains itself" in message


@pytest.mark.parametrize(
    "text",
    [
        "id: d\nnodes: " + "[" * 5000 + "]" * 5000,
        "id: d\nnodes: " + "[" * 1_000_000 + "]" * 1_000_000,  # libyaml alone: minutes, then a C crash
        "id: d\nnodes: " + "{a: " * 5000 + "}" * 5000,
        "id: d\nnodes:\n" + "- " * 5000 + "x\n",
        '{"id": "d", "nodes": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"id": "d", "nodes": ' + "[" * 101 + "]" * 101 + "}",
    ],
    ids=["yaml-5000", "yaml-1M", "yaml-maps", "yaml-block", "json-5000", "json-101"],
)
def test_deep_nesting(text: str) -> None:
    code, message, hint = problem(text)
    assert code == "document_too_deep"
    assert "more than 100 levels" in message
    assert "PLAIT_DOCUMENT_MAX_DEPTH" in hint


def test_large_documents() -> None:
    assert problem("id: x\nv: '" + "y" * (2 << 20) + "'\n")[0] == "document_too_large"
    # A 100 KB string repeated through 100 aliases: 10 MB once expanded.
    bomb = "id: x\na: &a '" + "x" * 100_000 + "'\nb: [" + ", ".join(["*a"] * 100) + "]\n"
    assert problem(bomb)[0] == "document_too_large"
    many = "id: x\na: &a 1\nb: [" + ", ".join(["*a"] * 1001) + "]\n"
    code, message, hint = problem(many)
    assert code == "document_too_large" and "more than 1,000 aliases" in message
    assert "PLAIT_DOCUMENT_MAX_ALIASES" in hint


def test_large_files_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("id: x\nv: '" + "y" * 5000 + "'\n")
    code, message, _ = problem(path, DocumentLimits(max_chars=1000))
    assert code == "document_too_large" and "bytes" in message


def test_parsed_data_is_checked_too() -> None:
    deep: dict[str, Any] = {"id": "d", "nodes": []}
    inner: list[Any] = deep["nodes"]
    for _ in range(900):
        inner.append([])
        inner = inner[0]
    assert problem(deep)[0] == "document_too_deep"
    leaf = ["x" * 1000]
    shared: list[Any] = [leaf] * 100
    for _ in range(5):
        shared = [shared] * 100
    assert problem({"id": "s", "v": shared})[0] == "document_too_large"
    loop: dict[str, Any] = {"id": "l"}
    loop["self"] = [loop]
    assert problem(loop)[0] == "document_too_large"
    check_document_data({"id": "ok", "nodes": [{"id": "a", "type": "start"}]})


def test_limits_from_env_and_small_limits() -> None:
    limits = DocumentLimits.from_env(
        {
            "PLAIT_DOCUMENT_MAX_CHARS": "500",
            "PLAIT_DOCUMENT_MAX_DEPTH": "3",
            "PLAIT_DOCUMENT_MAX_ALIASES": "2",
        }
    )
    assert limits == DocumentLimits(500, 3, 2)
    assert DocumentLimits.from_env({"PLAIT_DOCUMENT_MAX_DEPTH": "deep"}) == DocumentLimits()
    assert problem("id: x\na: [[[1]]]\n", limits)[0] == "document_too_deep"
    assert problem("id: x\na: &a 1\nb: [*a, *a, *a]\n", limits)[0] == "document_too_large"
    assert problem("id: x\na: '" + "y" * 600 + "'\n", limits)[0] == "document_too_large"
    assert read_document_data("id: x\na: [[1]]\n", limits) == {"id": "x", "a": [[1]]}


def test_legit_documents_still_load() -> None:
    anchors = "id: x\ndefaults: &d {timeout_s: 5}\nnodes:\n  - {id: a, type: start, <<: *d}\n"
    assert read_document_data(anchors)["nodes"] == [{"id": "a", "type": "start", "timeout_s": 5}]
    doc = {
        "id": "big",
        "nodes": [{"id": f"n{i}", "type": "message", "config": {"text": "hi {{a}}"}} for i in range(3000)],
    }
    assert read_document_data(json.dumps(doc)) == doc
    examples = sorted((REPO / "examples").rglob("*.yaml")) + sorted((REPO / "examples").rglob("*.json"))
    loaded = 0
    for path in examples:
        try:
            data = read_document_data(path)
        except FlowValidationError as exc:
            assert all(p.code not in ("document_too_large", "document_too_deep") for p in exc.problems), path
            continue
        if data.get("nodes"):
            plait.load_flow(path)
            loaded += 1
    assert loaded > 0
