"""Read flow documents from files, strings or dicts (JSON or YAML), within limits.

A flow document comes from whoever can call the API, so reading it is bounded like running it
(issue 11): a ~600-byte YAML "billion laughs" expanded to 4.8 M strings and a 33.6 MB stored flow,
a self-referencing alias (`a: &a [*a]`) and 5,000 nested lists ended in HTTP 500, and libyaml
itself is quadratic in nesting depth (20,000 nested `[` take a second) and recursive in C when it
composes (100,000 crash the process). So every document is checked, before anything is built from
it, against `DocumentLimits` (PLAIT_DOCUMENT_MAX_CHARS, default 2 MiB of characters;
PLAIT_DOCUMENT_MAX_DEPTH, default 100 levels; PLAIT_DOCUMENT_MAX_ALIASES, default 1,000):

- **text**: at most `max_chars` characters (a file: at most that many bytes);
- **YAML**: the parser's events are read as a stream, and reading stops at the first collection
  nested deeper than `max_depth` or at the alias past `max_aliases`, so nothing deep is ever
  composed; then the composed node graph is measured with every alias expanded (counted, not
  copied) and refused if larger than `max_chars` or if an alias refers to its own collection,
  before any Python object is constructed;
- **JSON, and dicts already parsed** (a request body): nesting and size the same way.

Breaking a limit is a `FlowValidationError` with a `document_too_large` or `document_too_deep`
problem naming the limit and its setting, which the API answers with 422, never 500.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from plait.spec.models import FlowDocument
from plait.spec.problems import FlowValidationError, Problem

_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
_DONE = object()


@dataclass(frozen=True, slots=True)
class DocumentLimits:
    """How large a flow document may be; `from_env` reads the PLAIT_DOCUMENT_* settings."""

    max_chars: int = 2 << 20
    max_depth: int = 100
    max_aliases: int = 1_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> DocumentLimits:
        def number(name: str, default: int) -> int:
            try:
                value = int(environ.get(name, "") or default)
            except ValueError:
                return default
            return value if value > 0 else default

        base = cls()
        return cls(
            max_chars=number("PLAIT_DOCUMENT_MAX_CHARS", base.max_chars),
            max_depth=number("PLAIT_DOCUMENT_MAX_DEPTH", base.max_depth),
            max_aliases=number("PLAIT_DOCUMENT_MAX_ALIASES", base.max_aliases),
        )


_limits = DocumentLimits.from_env()


def document_limits() -> DocumentLimits:
    """The process-wide document limits."""
    return _limits


def set_document_limits(new: DocumentLimits) -> DocumentLimits:
    """Replace the process-wide limits (the server's settings, tests); returns the previous ones."""
    global _limits
    previous, _limits = _limits, new
    return previous


def read_document_data(
    source: str | Path | dict[str, Any], limits: DocumentLimits | None = None
) -> dict[str, Any]:
    """Parse a path, a JSON/YAML string or a dict into plain data; syntax errors and documents over
    the limits (see the module docstring) become problems."""
    limits = limits or _limits
    if isinstance(source, dict):
        check_document_data(source, limits)
        return source
    text: str
    path = Path(source) if isinstance(source, Path) or _looks_like_path(source) else None
    if path is not None:
        if not path.exists():
            raise FlowValidationError(
                [Problem("file_not_found", f"no such file: {path}", hint="check the path")]
            )
        if path.stat().st_size > limits.max_chars:
            raise _too_large(f"the file is {path.stat().st_size:,} bytes", limits)
        text = path.read_text(encoding="utf-8")
    else:
        text = str(source)
    if len(text) > limits.max_chars:
        raise _too_large(f"the document is {len(text):,} characters", limits)
    try:
        data = _load_json(text, limits) if text.lstrip().startswith("{") else _load_yaml(text, limits)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise FlowValidationError(
            [
                Problem(
                    "syntax",
                    f"cannot parse the document: {exc}",
                    hint="fix the JSON/YAML syntax at the position shown",
                )
            ]
        ) from exc
    if not isinstance(data, dict):
        raise FlowValidationError(
            [
                Problem(
                    "syntax",
                    "the document must be a JSON/YAML object",
                    hint='start from {"schema": "plait/flow@1", "nodes": [...]}',
                )
            ]
        )
    return data


def check_document_data(data: Any, limits: DocumentLimits | None = None) -> None:
    """Refuse parsed data (a request body) nested deeper than `max_depth`, larger than `max_chars`
    once written out, or containing itself; raises FlowValidationError."""
    _measure(data, _data_children, _data_size, limits or _limits)


def _looks_like_path(source: str) -> bool:
    if "\n" in source or len(source) > 4096:
        return False
    return Path(source).suffix.lower() in (".json", ".yaml", ".yml") or Path(source).is_file()


def _load_json(text: str, limits: DocumentLimits) -> Any:
    try:
        data = json.loads(text)
    except RecursionError as exc:
        raise _too_deep("the JSON", limits) from exc
    _measure(data, _data_children, _data_size, limits)
    return data


def _load_yaml(text: str, limits: DocumentLimits) -> Any:
    _scan_yaml(text, limits)
    loader = _YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _measure(node, _node_children, _node_size, limits)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _scan_yaml(text: str, limits: DocumentLimits) -> None:
    """Read the parser's events up to the first collection nested too deep or alias too many."""
    depth = aliases = 0
    for event in yaml.parse(text, Loader=_YAML_LOADER):
        if isinstance(event, _OPEN):
            depth += 1
            if depth > limits.max_depth:
                mark = event.start_mark
                raise _too_deep(f"the YAML (at line {mark.line + 1})" if mark else "the YAML", limits)
        elif isinstance(event, _CLOSE):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > limits.max_aliases:
                raise FlowValidationError(
                    [
                        Problem(
                            "document_too_large",
                            f"the YAML uses more than {limits.max_aliases:,} aliases (*name)",
                            hint="write the repeated parts out, or raise PLAIT_DOCUMENT_MAX_ALIASES",
                        )
                    ]
                )


def _data_children(value: Any) -> Iterator[Any] | None:
    if isinstance(value, dict):
        return iter([*value.keys(), *value.values()])
    if isinstance(value, (list, tuple)):
        return iter(value)
    return None


def _data_size(value: Any) -> int:
    return len(value) if isinstance(value, str) else 1


def _node_children(node: Any) -> Iterator[Any] | None:
    if isinstance(node, yaml.MappingNode):
        pairs: list[tuple[Any, Any]] = node.value
        return (part for pair in pairs for part in pair)
    if isinstance(node, yaml.SequenceNode):
        items: list[Any] = node.value
        return iter(items)
    return None


def _node_size(node: Any) -> int:
    return len(node.value) if isinstance(node, yaml.ScalarNode) else 1


def _measure(
    root: Any,
    children: Callable[[Any], Iterator[Any] | None],
    size_of: Callable[[Any], int],
    limits: DocumentLimits,
) -> None:
    """Walk a tree whose parts may be shared (YAML aliases) or loop back: refuse it if nested more
    than `max_depth`, if a part contains itself, or if it is larger than `max_chars` with every
    shared part counted each time it occurs. Each part's size is remembered, so a billion laughs
    costs its number of distinct parts, not a billion. Iterative: no recursion limit to hit."""
    sizes: dict[int, int] = {}
    open_ids: set[int] = set()
    stack: list[tuple[Any, Iterator[Any], list[int]]] = []
    total = [0]

    def add(into: list[int], size: int) -> None:
        into[0] += size
        if into[0] > limits.max_chars:
            raise _too_large("the document, with its aliases expanded, is over the limit", limits)

    def enter(value: Any, into: list[int]) -> None:
        kids = children(value)
        if kids is None:
            add(into, size_of(value))
            return
        key = id(value)
        if key in sizes:
            add(into, sizes[key])
            return
        if key in open_ids:
            raise FlowValidationError(
                [
                    Problem(
                        "document_too_large",
                        "the document contains itself (an alias refers to the collection it is in)",
                        hint="remove the self-reference",
                    )
                ]
            )
        if len(stack) >= limits.max_depth:
            raise _too_deep("the document", limits)
        open_ids.add(key)
        stack.append((value, kids, [1]))

    enter(root, total)
    while stack:
        value, kids, acc = stack[-1]
        child = next(kids, _DONE)
        if child is not _DONE:
            enter(child, acc)
            continue
        stack.pop()
        open_ids.discard(id(value))
        sizes[id(value)] = acc[0]
        add(stack[-1][2] if stack else total, acc[0])


def _too_large(what: str, limits: DocumentLimits) -> FlowValidationError:
    return FlowValidationError(
        [
            Problem(
                "document_too_large",
                f"{what}; a flow document may have up to {limits.max_chars:,} characters",
                hint="make it smaller (fewer or shorter values, fewer repeated aliases) or raise"
                " PLAIT_DOCUMENT_MAX_CHARS",
            )
        ]
    )


def _too_deep(what: str, limits: DocumentLimits) -> FlowValidationError:
    return FlowValidationError(
        [
            Problem(
                "document_too_deep",
                f"{what} is nested more than {limits.max_depth} levels deep",
                hint="flatten the data or raise PLAIT_DOCUMENT_MAX_DEPTH",
            )
        ]
    )


def parse_document(data: dict[str, Any]) -> FlowDocument:
    """Build the pydantic model, turning every shape error into a located Problem."""
    try:
        return FlowDocument.model_validate(data)
    except ValidationError as exc:
        raise FlowValidationError([_problem_from_error(data, err) for err in exc.errors()]) from exc


def _problem_from_error(data: dict[str, Any], err: ErrorDetails) -> Problem:
    loc = list(err.get("loc", ()))
    node_id = None
    if len(loc) >= 2 and loc[0] in ("nodes", "edges") and isinstance(loc[1], int):
        items = data.get(loc[0]) or []
        item = items[loc[1]] if loc[1] < len(items) and isinstance(items[loc[1]], dict) else {}
        node_id = item.get("id") if loc[0] == "nodes" else f"edge #{loc[1]}"
        loc = loc[2:]
    field = ".".join(str(p) for p in loc) or None
    hint = None
    if err.get("type") == "extra_forbidden":
        hint = "remove the field or check its spelling"
    elif err.get("type") == "missing":
        hint = "add the field"
    return Problem(
        "invalid_document", err.get("msg", "invalid value"), node_id=node_id, field=field, hint=hint
    )
