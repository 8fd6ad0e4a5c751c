"""The agent's file tools (plait.assistant.files): a per-user, per-session sandbox directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plait.assistant import files as files_module
from plait.assistant.events import FileWritten
from plait.assistant.files import FileSandbox


@pytest.fixture
def box(tmp_path: Path) -> FileSandbox:
    return FileSandbox.for_session(tmp_path / "files", "alice", "agentic_1")


def test_m_s18_write_file_emits_file_written_with_the_content(box: FileSandbox) -> None:
    result = box.write_file("docs/FLOW_DOCS.md", "# Triage\n\nRoutes messages.\n")
    assert result == {"path": "docs/FLOW_DOCS.md", "size": 27, "status": "written"}
    assert box.drain() == [
        FileWritten("write_file", "docs/FLOW_DOCS.md", 27, "# Triage\n\nRoutes messages.\n")
    ]
    assert (box.root / "docs" / "FLOW_DOCS.md").read_text() == "# Triage\n\nRoutes messages.\n"
    assert box.drain() == []


def test_m_s21_read_file_has_line_numbers_and_emits_nothing(box: FileSandbox) -> None:
    box.write_file("NOTES.md", "first\nsecond\nthird\n")
    box.drain()
    result = box.read_file("NOTES.md")
    assert result["content"] == "1\tfirst\n2\tsecond\n3\tthird"
    assert result["total_lines"] == 3 and "truncated" not in result
    part = box.read_file("NOTES.md", offset=2, limit=1)
    assert part["content"] == "2\tsecond" and part["truncated"] and part["next_offset"] == 3
    assert "no file" in box.read_file("MISSING.md")["error"]
    assert box.drain() == []


def test_m_s22_grep_search_finds_lines_and_emits_nothing(box: FileSandbox) -> None:
    box.write_file("a.md", "Set the API key in Settings.\nnothing here\n")
    box.write_file("sub/b.md", "api key\nThe API key is secret\n")
    box.drain()
    result = box.grep_search("API key")
    assert [(m["path"], m["line"]) for m in result["matches"]] == [("a.md", 1), ("sub/b.md", 2)]
    assert box.grep_search("API key", "sub")["count"] == 1
    assert box.grep_search("(unclosed")["count"] == 0  # not a regex: searched as text
    assert box.drain() == []


def test_m_s23_escapes_are_refused_without_events(box: FileSandbox, tmp_path: Path) -> None:
    for path in ("../escape.md", "a/../../escape.md", "/etc/passwd", "C:\\x.md", "\\\\server\\x", "~/x"):
        result = box.write_file(path, "x")
        assert set(result) == {"error", "path"} and result["path"] == path
    assert box.drain() == []
    assert not (tmp_path / "files" / "escape.md").exists()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    os.symlink(outside, box.root / "link")
    assert "outside" in box.read_file("link/secret.txt")["error"]
    assert "outside" in box.write_file("link/new.txt", "x")["error"]
    assert box.glob_search("**/*")["files"] == []
    assert box.grep_search("secret")["matches"] == []
    assert box.drain() == []


@pytest.mark.parametrize("segment", [".components", ".COMPONENTS", ".Components"])
def test_m_s61_the_components_folder_is_reserved_for_every_tool(box: FileSandbox, segment: str) -> None:
    path = f"{segment}/SumComponent.py"
    expected = {"error": "Path component '.components' is reserved", "path": path}
    assert box.read_file(path) == expected
    assert box.write_file(path, "x") == expected
    assert box.edit_file(path, "a", "b") == expected
    assert box.glob_search(f"{segment}/*") == {**expected, "path": f"{segment}/*"}
    assert box.grep_search("x", path) == expected
    assert box.write_file(f"sub\\{segment}\\x.py", "x")["error"] == expected["error"]  # Windows separators
    assert box.drain() == []


def test_edit_file_replaces_once_and_emits_without_content(box: FileSandbox) -> None:
    box.write_file("a.md", "one two two\n")
    box.drain()
    assert "occurs 2 times" in box.edit_file("a.md", "two", "2")["error"]
    assert "not found" in box.edit_file("a.md", "three", "3")["error"]
    result = box.edit_file("a.md", "one", "1")
    assert result["status"] == "edited" and result["size"] == len("1 two two\n")
    assert box.edit_file("a.md", "two", "2", replace_all=True)["replacements"] == 2
    assert box.read_file("a.md")["content"] == "1\t1 2 2"
    assert box.drain() == [FileWritten("edit_file", "a.md", 10), FileWritten("edit_file", "a.md", 6)]
    assert "no file" in box.edit_file("new.md", "a", "b")["error"]


def test_ten_megabytes_per_file(box: FileSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files_module, "MAX_FILE_BYTES", 100)
    assert "limit is 100" in box.write_file("big.md", "x" * 101)["error"]
    assert box.write_file("ok.md", "x" * 100)["status"] == "written"
    assert "limit is 100" in box.edit_file("ok.md", "x", "yy", replace_all=True)["error"]


def test_glob_and_grep_are_bounded(box: FileSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files_module, "MAX_GLOB_RESULTS", 3)
    monkeypatch.setattr(files_module, "MAX_GREP_MATCHES", 2)
    for i in range(5):
        box.write_file(f"f{i}.md", "hit\nhit\n")
    found = box.glob_search("*.md")
    assert found["files"] == ["f0.md", "f1.md", "f2.md"] and found["truncated"]
    grep = box.grep_search("hit")
    assert grep["count"] == 2 and grep["truncated"]


def test_each_user_and_session_has_its_own_directory(tmp_path: Path) -> None:
    a = FileSandbox.for_session(tmp_path, "alice", "s1")
    b = FileSandbox.for_session(tmp_path, "bob", "s1")
    c = FileSandbox.for_session(tmp_path, "alice", "s2")
    a.write_file("x.md", "alice")
    assert "error" in b.read_file("x.md") and "error" in c.read_file("x.md")
    assert len({a.root, b.root, c.root}) == 3
    assert "alice" not in str(a.root)  # the user id is hashed
    assert FileSandbox.for_session(tmp_path, "alice", "../../etc").root.parent == a.root.parent
