"""Reference parsing and path resolution.

Two syntaxes reach the same `Ref`: plait's `{{node.port.path}}` and RAGFlow's `{cpn_id@param.path}`
(any number of braces, spaces inside, ids with `:`). Ids are case-insensitive, so roots are
lower-cased; path segments keep their case.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Lookup = Callable[[str], Any]

_SEGMENT = r"[A-Za-z0-9_:\-]+"
_PATH = rf"{_SEGMENT}(?:\.{_SEGMENT})*"
# `@` form: root may contain `:`; path after `@` is dotted. Any number of braces and spaces.
_AT_REF = rf"(?P<at_root>{_SEGMENT})@(?P<at_path>{_PATH})"
_SYS_REF = rf"(?P<sys>(?:sys|env)\.{_PATH})"
BRACED_REF = re.compile(rf"\{{+\s*(?:{_AT_REF}|{_SYS_REF})\s*\}}+|\{{\{{\s*(?P<plain>{_PATH})\s*\}}\}}")
_BARE = re.compile(rf"\s*(?:(?P<at_root>{_SEGMENT})@(?P<at_path>{_PATH})|(?P<plain>{_PATH}))\s*")


class TemplateError(ValueError):
    """A template or reference that cannot be parsed; the message says what and where."""


@dataclass(frozen=True, slots=True)
class Ref:
    root: str
    path: tuple[str | int, ...]
    text: str


def _segments(dotted: str) -> tuple[str | int, ...]:
    return tuple(int(s) if s.lstrip("-").isdigit() else s for s in dotted.split("."))


def ref_from_match(m: re.Match[str], text: str) -> Ref:
    if m.group("at_root"):
        return Ref(m.group("at_root").lower(), _segments(m.group("at_path")), text)
    dotted = m.groupdict().get("sys") or m.group("plain")
    root, *rest = _segments(dotted)
    return Ref(str(root).lower(), tuple(rest), text)


def parse_ref(text: str) -> Ref:
    """Parse `a.b.0`, `{{ a.b }}`, `{cpn:x@param}` or `sys.query` into a Ref."""
    m = BRACED_REF.fullmatch(text.strip())
    if m is None:
        m = _BARE.fullmatch(text)
    if m is None:
        raise TemplateError(
            f"{text!r} is not a reference (expected node.path, {{{{node.path}}}} or cpn@param)"
        )
    return ref_from_match(m, text)


def find_refs(value: Any) -> list[Ref]:
    """Every reference in a value (dict values, list items, strings), in order."""
    out: list[Ref] = []
    _walk(value, out)
    return out


def _walk(value: Any, out: list[Ref]) -> None:
    if isinstance(value, str):
        if "{" in value:
            from plait.expr.template import compile_template

            out.extend(compile_template(value).refs)
    elif isinstance(value, dict):
        for item in value.values():
            _walk(item, out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk(item, out)


def get_path(value: Any, path: Sequence[str | int]) -> Any:
    """Walk dict keys and list indexes; JSON strings are decoded on the way; missing -> None."""
    for seg in path:
        if isinstance(value, str):
            stripped = value.strip()
            if not stripped.startswith(("{", "[")):
                return None
            try:
                value = json.loads(stripped)
            except ValueError:
                return None
        if isinstance(value, dict):
            if seg in value:
                value = value[seg]
            elif isinstance(seg, int) and str(seg) in value:
                value = value[str(seg)]
            else:
                return None
        elif isinstance(value, (list, tuple)):
            try:
                value = value[int(seg)]
            except (ValueError, IndexError):
                return None
        else:
            return None
    return value
