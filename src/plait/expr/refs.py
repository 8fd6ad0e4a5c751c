"""Reference parsing and path resolution (finding every reference in a value needs templates, so
`find_refs` lives in template.py; this module imports nothing else of plait but `PlaitError`).

Two syntaxes reach the same `Ref`: plait's `{{node.port.path}}` and RAGFlow's `{cpn_id@param.path}`
(any number of braces, spaces inside, ids with `:`). Ids are case-insensitive, so roots are
lower-cased; path segments keep their case because they index user data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plait.errors import PlaitError

Lookup = Callable[[str], Any]

_ID = r"[A-Za-z0-9_:\-]+"
_PATH = rf"{_ID}(?:\.{_ID})*"
_BODY = rf"(?:(?P<at_root>{_ID})@(?P<at_path>{_PATH})|(?P<plain>{_PATH}))"
# A candidate is a run of braces (RAGFlow allows spaces between them) around a body; `scan` then
# decides how many braces belong to it, so `{"x": {a@b}}` keeps the JSON's closing brace and `{word}`
# (no `@`) stays literal text.
_CANDIDATE = re.compile(rf"(?P<open>\{{(?: *\{{)*)\s*{_BODY}\s*(?P<close>\}}(?: *\}})*)")
_BARE = re.compile(rf"{_BODY}")
_INT = re.compile(r"-?[0-9]+")
# Roots that RAGFlow also writes with single braces.
_SINGLE_BRACE_ROOTS = ("sys.", "env.")


class TemplateError(PlaitError, ValueError):
    """A template or reference that cannot be parsed; the message says what and where."""

    code = "invalid_template"


@dataclass(frozen=True, slots=True)
class Ref:
    """One reference: `root` is lower-cased, `path` walks into the root's value, `text` is as written."""

    root: str
    path: tuple[str | int, ...]
    text: str


def _segments(dotted: str) -> tuple[str | int, ...]:
    return tuple(int(s) if _INT.fullmatch(s) else s for s in dotted.split("."))


def _from_body(m: re.Match[str], text: str) -> Ref:
    at_root = m.group("at_root")
    if at_root:
        return Ref(at_root.lower(), _segments(m.group("at_path")), text)
    root, *rest = m.group("plain").split(".")
    return Ref(root.lower(), _segments(".".join(rest)) if rest else (), text)


def scan(text: str) -> Iterator[tuple[int, int, Ref, bool]]:
    """Yield `(start, end, ref, plain)` for each reference in `text`, left to right.

    `plain` marks the `{{ a.b }}` form (the only one Jinja also understands). Plain refs need exactly
    two braces, as in Jinja, so `{{{x}}}` is `{` + ref + `}`; the `@`, `sys.` and `env.` forms take as
    many braces as are balanced on both sides.
    """
    for m in _CANDIDATE.finditer(text):
        opens = [i for i in range(m.start("open"), m.end("open")) if text[i] == "{"]
        closes = [i for i in range(m.start("close"), m.end("close")) if text[i] == "}"]
        n = min(len(opens), len(closes))
        plain = m.group("plain")
        if plain is not None and not plain.lower().startswith(_SINGLE_BRACE_ROOTS):
            # Jinja's `{{`/`}}` are single tokens: two braces, adjacent.
            if n < 2 or opens[-1] - opens[-2] != 1 or closes[1] - closes[0] != 1:
                continue
            n = 2
        else:
            plain = None
        start, end = opens[-n], closes[n - 1] + 1
        yield start, end, _from_body(m, text[start:end]), plain is not None


def parse_ref(text: str) -> Ref:
    """Parse `a.b.0`, `{{ a.b }}`, `{cpn:x@param}` or `sys.query` into a Ref.

    Lenient by design (any braces and spaces are stripped) because callers pass a field that is known
    to hold exactly one reference, such as a condition's `ref`.
    """
    stripped = text.strip()
    m = _BARE.fullmatch(stripped.strip("{} \t\r\n"))
    if m is None:
        raise TemplateError(
            f"{text!r} is not a reference (expected node.path, {{{{ node.path }}}} or cpn@param)"
        )
    return _from_body(m, stripped)


def _decode(value: str) -> Any:
    # Node outputs are often JSON text (LLM answers, HTTP bodies); let paths see through them.
    stripped = value.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def get_path(value: Any, path: Sequence[str | int]) -> Any:
    """Walk dict keys and list indexes (never attributes); JSON strings are decoded; missing -> None."""
    for seg in path:
        if value is None:
            return None
        if isinstance(value, str):
            value = _decode(value)
        if isinstance(value, Mapping):
            if seg in value:
                value = value[seg]
            elif isinstance(seg, int) and str(seg) in value:
                value = value[str(seg)]
            elif isinstance(seg, str) and _INT.fullmatch(seg) and int(seg) in value:
                value = value[int(seg)]
            else:
                return None
        elif isinstance(value, (list, tuple)):
            if isinstance(seg, bool) or not (isinstance(seg, int) or _INT.fullmatch(seg)):
                return None
            try:
                value = value[int(seg)]
            except IndexError:
                return None
        else:
            return None
    return value
