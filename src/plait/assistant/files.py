"""The agent's file tools, in a sandbox directory of the user and session (spec 1.12).

    files = FileSandbox.for_session(base_dir, user_id, session_id)
    files.write_file("FLOW_DOCS.md", "# Support triage\\n...")   # {"path", "size", "status"}
    files.read_file("FLOW_DOCS.md")                                # content with line numbers
    files.drain()                                                  # [FileWritten(...)]

Every path is relative to the sandbox root. Absolute paths, `..`, symlinks that lead out of the
root and the reserved segment `.components` (compared case-insensitively, `/` and `\\` both
separators) are refused with `{"error": ..., "path": ...}`: a tool result, never an exception, and
never a `file_written` event. A file is at most `MAX_FILE_BYTES` (10 MB), written or read.

`write_file` and `edit_file` append a `FileWritten` event to `pending` (the write with its content
inline, decision 10; the edit without); reads and searches append nothing. Outputs are bounded:
`read_file` returns at most `MAX_READ_LINES` lines per call, `glob_search` `MAX_GLOB_RESULTS`
paths, `grep_search` `MAX_GREP_MATCHES` matches.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from plait.assistant.events import FileWritten
from plait.errors import PlaitError

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_READ_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_GLOB_RESULTS = 200
MAX_GREP_MATCHES = 100
MAX_GREP_LINE_CHARS = 300
MAX_PATH_CHARS = 1024
RESERVED_SEGMENTS = frozenset({".components", ".lfsig"})
_DRIVE = re.compile(r"^[A-Za-z]:")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class FilePathError(PlaitError, PermissionError):
    """A path the sandbox refuses (outside the root, absolute, reserved)."""

    code = "file_path_refused"


def _segments(path: str) -> list[str]:
    return [s for s in re.split(r"[\\/]+", path) if s not in ("", ".")]


def check_relative(path: Any, *, what: str = "path") -> list[str]:
    """The segments of a safe relative path; raises FilePathError with what is wrong."""
    if not isinstance(path, str) or not path.strip():
        raise FilePathError(f"{what} must be a non-empty relative path")
    if len(path) > MAX_PATH_CHARS or "\x00" in path:
        raise FilePathError(f"{what} is not a valid path")
    if path.startswith(("/", "\\", "~")) or _DRIVE.match(path):
        raise FilePathError(
            f"{what} must be relative to your file area, not absolute", hint="e.g. docs/NOTES.md"
        )
    segments = _segments(path)
    for segment in segments:
        if segment == "..":
            raise FilePathError(f"{what} may not leave your file area ('..')", hint="use a path inside it")
        if segment.casefold() in RESERVED_SEGMENTS:
            raise FilePathError(f"Path component {segment.casefold()!r} is reserved")
    return segments


class FileSandbox:
    """The file tools over one directory (the user's and session's)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._real_root = self.root.resolve()
        self.pending: list[FileWritten] = []

    @classmethod
    def for_session(cls, base: Path | str, user_id: str | None, session_id: str) -> FileSandbox:
        """The sandbox of (user, session) under `base` (decision 4): the user as a hash, the
        session id with unsafe characters replaced."""
        user = hashlib.sha256((user_id or "anonymous").encode()).hexdigest()[:32]
        session = _SAFE.sub("_", session_id or "default")[:128].strip(".") or "default"
        return cls(Path(base) / user / session)

    def drain(self) -> list[FileWritten]:
        out, self.pending[:] = list(self.pending), []
        return out

    # ------------------------------------------------------------------------------- paths
    def resolve(self, path: Any) -> Path:
        """The real path of a relative `path` inside the root; raises FilePathError."""
        segments = check_relative(path)
        if not segments:
            return self._real_root
        real = (self._real_root / PurePosixPath(*segments)).resolve()
        if real != self._real_root and self._real_root not in real.parents:
            raise FilePathError("path leads outside your file area (a link?)")
        return real

    def _relative(self, real: Path) -> str:
        return real.relative_to(self._real_root).as_posix()

    @staticmethod
    def _refused(exc: FilePathError, path: Any) -> dict[str, Any]:
        return {"error": exc.with_hint(), "path": path}

    # ------------------------------------------------------------------------------- tools
    def read_file(self, path: str, offset: int = 1, limit: int = MAX_READ_LINES) -> dict[str, Any]:
        """The file's lines `offset`.. (1-based) with line numbers, at most `limit` of them."""
        try:
            real = self.resolve(path)
        except FilePathError as exc:
            return self._refused(exc, path)
        if not real.is_file():
            return {
                "error": f"no file {path!r}",
                "path": path,
                "hint": "glob_search('**/*') lists your files",
            }
        size = real.stat().st_size
        if size > MAX_FILE_BYTES:
            return {"error": f"the file is {size} bytes; the limit is {MAX_FILE_BYTES}", "path": path}
        try:
            text = real.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return {"error": "the file is not UTF-8 text", "path": path}
        lines = text.splitlines()
        offset = max(1, int(offset or 1))
        limit = max(1, min(int(limit or MAX_READ_LINES), MAX_READ_LINES))
        chosen = lines[offset - 1 : offset - 1 + limit]
        width = len(str(offset + len(chosen)))
        numbered = "\n".join(
            f"{n:>{width}}\t{line[:MAX_LINE_CHARS]}" for n, line in enumerate(chosen, start=offset)
        )
        out: dict[str, Any] = {"path": self._relative(real), "content": numbered, "total_lines": len(lines)}
        if offset - 1 + len(chosen) < len(lines):
            out["truncated"] = True
            out["next_offset"] = offset + len(chosen)
        return out

    def write_file(self, path: str, content: str) -> dict[str, Any]:
        """Create or replace a file (parent folders made); a `file_written` event with the content."""
        if not isinstance(content, str):
            return {"error": "content must be text", "path": path}
        try:
            real = self.resolve(path)
        except FilePathError as exc:
            return self._refused(exc, path)
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            return {"error": f"the content is {len(data)} bytes; the limit is {MAX_FILE_BYTES}", "path": path}
        if real == self._real_root or real.is_dir():
            return {"error": f"{path!r} is a folder", "path": path}
        self._write(real, data)
        rel = self._relative(real)
        self.pending.append(FileWritten("write_file", rel, len(data), content))
        return {"path": rel, "size": len(data), "status": "written"}

    def edit_file(
        self, path: str, old_string: str, new_string: str, replace_all: bool = False
    ) -> dict[str, Any]:
        """Replace `old_string` (which must occur exactly once, unless `replace_all`) by
        `new_string`; a `file_written` event without content."""
        if not isinstance(old_string, str) or not isinstance(new_string, str):
            return {"error": "old_string and new_string must be text", "path": path}
        if not old_string:
            return {"error": "old_string is empty", "path": path, "hint": "use write_file to create a file"}
        try:
            real = self.resolve(path)
        except FilePathError as exc:
            return self._refused(exc, path)
        if not real.is_file():
            return {"error": f"no file {path!r}", "path": path, "hint": "use write_file to create it"}
        if real.stat().st_size > MAX_FILE_BYTES:
            return {"error": f"the file is larger than {MAX_FILE_BYTES} bytes", "path": path}
        try:
            text = real.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return {"error": "the file is not UTF-8 text", "path": path}
        count = text.count(old_string)
        if count == 0:
            return {
                "error": "old_string was not found in the file",
                "path": path,
                "hint": "read_file it first",
            }
        if count > 1 and not replace_all:
            return {
                "error": f"old_string occurs {count} times",
                "path": path,
                "hint": "include more surrounding text to make it unique, or set replace_all",
            }
        new_text = (
            text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
        )
        data = new_text.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            return {
                "error": f"the result would be {len(data)} bytes; the limit is {MAX_FILE_BYTES}",
                "path": path,
            }
        self._write(real, data)
        rel = self._relative(real)
        self.pending.append(FileWritten("edit_file", rel, len(data)))
        return {
            "path": rel,
            "size": len(data),
            "replacements": count if replace_all else 1,
            "status": "edited",
        }

    def glob_search(self, pattern: str = "**/*") -> dict[str, Any]:
        """The files matching a glob pattern (`**` recurses), sorted, at most MAX_GLOB_RESULTS."""
        try:
            check_relative(pattern, what="pattern")
        except FilePathError as exc:
            return self._refused(exc, pattern)
        found: list[str] = []
        truncated = False
        try:
            matches = sorted(self.root.glob(pattern.replace("\\", "/")))
        except (ValueError, NotImplementedError) as exc:
            return {"error": f"invalid pattern: {exc}", "path": pattern}
        for match in matches:
            rel = self._safe_file(match)
            if rel is None:
                continue
            if len(found) >= MAX_GLOB_RESULTS:
                truncated = True
                break
            found.append(rel)
        out: dict[str, Any] = {"pattern": pattern, "files": found, "count": len(found)}
        if truncated:
            out["truncated"] = True
        return out

    def grep_search(self, pattern: str, path: str | None = None) -> dict[str, Any]:
        """Lines matching a regular expression (or the literal text, when it is not one) in the
        files under `path` (a file or folder; the whole area by default)."""
        if not isinstance(pattern, str) or not pattern:
            return {"error": "pattern must be non-empty text", "path": path}
        try:
            regex = re.compile(pattern)
        except re.error:
            regex = re.compile(re.escape(pattern))
        try:
            start = self.resolve(path) if path not in (None, "", ".") else self._real_root
        except FilePathError as exc:
            return self._refused(exc, path)
        if not start.exists():
            return {"error": f"no file or folder {path!r}", "path": path}
        matches: list[dict[str, Any]] = []
        truncated = False
        for file in self._files_under(start):
            rel = self._safe_file(file)
            if rel is None or file.stat().st_size > MAX_FILE_BYTES:
                continue
            try:
                text = file.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(text.splitlines(), start=1):
                if regex.search(line):
                    if len(matches) >= MAX_GREP_MATCHES:
                        truncated = True
                        break
                    matches.append({"path": rel, "line": n, "text": line[:MAX_GREP_LINE_CHARS]})
            if truncated:
                break
        out: dict[str, Any] = {"pattern": pattern, "matches": matches, "count": len(matches)}
        if truncated:
            out["truncated"] = True
        return out

    # ------------------------------------------------------------------------------- helpers
    def _files_under(self, start: Path) -> Iterator[Path]:
        if start.is_file():
            yield start
            return
        for folder, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d.casefold() not in RESERVED_SEGMENTS)
            for name in sorted(files):
                yield Path(folder) / name

    def _safe_file(self, path: Path) -> str | None:
        """The relative path of a regular file inside the root, not reserved; else None."""
        try:
            real = path.resolve()
        except OSError:
            return None
        if self._real_root not in real.parents or not real.is_file():
            return None
        rel = real.relative_to(self._real_root).as_posix()
        if any(s.casefold() in RESERVED_SEGMENTS for s in _segments(rel)):
            return None
        return rel

    @staticmethod
    def _write(real: Path, data: bytes) -> None:
        real.parent.mkdir(parents=True, exist_ok=True)
        tmp = real.with_name(f".{real.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, real)


__all__ = [
    "MAX_FILE_BYTES",
    "MAX_GLOB_RESULTS",
    "MAX_GREP_MATCHES",
    "RESERVED_SEGMENTS",
    "FilePathError",
    "FileSandbox",
    "check_relative",
]
