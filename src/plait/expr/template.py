"""Templates: plain references rendered by a fast path, anything richer by sandboxed Jinja2.

A string that is exactly one reference renders to the referenced value with its type, so
`"{{a.list}}"` hands a list to the next node. Text with references renders each one (strings
as-is, None as "", others as JSON). Strings with Jinja syntax beyond plain references (filters,
expressions, `{% %}`) compile once into an `ImmutableSandboxedEnvironment`; there is no eval.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import meta
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from plait.expr.refs import Lookup, Ref, TemplateError, get_path, scan

_JINJA_MARKERS = ("{%", "{{", "{#")
_JINJA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JINJA_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_SUB = "__plait_ref_"  # Jinja variable names for references Jinja cannot parse (`a@b`, `{sys.x}`)
_MAX_POW = 10_000
_MAX_SEQ = 1_000_000


_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


def _text(value: Any) -> str:
    """How a value reads inside text: JSON for data so prompts get `true`/`{"a": 1}`, not Python repr."""
    if type(value) is str:  # the hot case first
        return value
    if value is None:
        return ""
    kind = type(value)
    if kind is int:  # the hot cases first: no encoder for a number
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float, dict, list, tuple)):
        return _JSON.encode(value)
    return str(value)


class _Sandbox(ImmutableSandboxedEnvironment):
    """The stock sandbox, made loud about escapes and safe about obvious resource bombs."""

    intercepted_binops = frozenset({"**", "*"})

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # The stock sandbox returns an Undefined, which ChainableUndefined would render as "".
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe")

    def getattr(self, obj: Any, attribute: str) -> Any:
        # `{{ out.items }}` means the key, not dict.items: flow data is dicts, not objects.
        if isinstance(obj, Mapping) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, (int, float)) and abs(right) > _MAX_POW:
            raise SecurityError(f"exponent {right} is too large")
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > _MAX_SEQ:
                    raise SecurityError("sequence repetition is too large")
        return super().call_binop(context, operator, left, right)


_ENV = _Sandbox(
    autoescape=False, undefined=jinja2.ChainableUndefined, keep_trailing_newline=True, finalize=_text
)


def _resolve(ref: Ref, lookup: Lookup) -> Any:
    try:
        root = lookup(ref.root)
    except KeyError:
        return None
    return get_path(root, ref.path) if ref.path else root


def _jinja_safe(ref: Ref) -> bool:
    """Whether Jinja reads this plain `{{ a.b.0 }}` the same way (identifier root, simple segments)."""
    if not _JINJA_NAME.fullmatch(ref.root):
        return False
    return all(
        isinstance(s, int) and s >= 0 or isinstance(s, str) and _JINJA_SEGMENT.fullmatch(s) for s in ref.path
    )


class Template:
    """A compiled template; build with `compile_template` (cached) so each text is parsed once.

    Plain mode keeps `_parts` (literals, with "" where a reference goes) and `_slots` (index, ref)
    so rendering is a fill-in and a join. Jinja mode keeps the compiled Jinja template.
    """

    __slots__ = ("text", "refs", "is_static", "_parts", "_slots", "_whole", "_jinja", "_names", "_subs")

    def __init__(self, text: str) -> None:
        self.text = text
        self._whole: Ref | None = None
        self._jinja: jinja2.Template | None = None
        self._names: tuple[tuple[str, str], ...] = ()  # (jinja name, lookup root)
        self._subs: tuple[tuple[str, Ref], ...] = ()  # (jinja name, substituted reference)
        found = list(scan(text))
        literal = []
        pos = 0
        for start, end, _, _ in found:
            literal.append(text[pos:start])
            pos = end
        literal.append(text[pos:])
        jinja_like = any(marker in chunk for chunk in literal for marker in _JINJA_MARKERS)
        if jinja_like and self._compile_jinja(found):
            self._parts: tuple[str, ...] = ()
            self._slots: tuple[tuple[int, Ref], ...] = ()
            self.is_static = False
            return
        parts: list[str] = []
        slots: list[tuple[int, Ref]] = []
        for chunk, (_, _, ref, _) in zip(literal, found, strict=False):
            if chunk:
                parts.append(chunk)
            slots.append((len(parts), ref))
            parts.append("")
        if literal[-1]:
            parts.append(literal[-1])
        self._parts = tuple(parts)
        self._slots = tuple(slots)
        self.refs: tuple[Ref, ...] = tuple(ref for _, ref in slots)
        self.is_static = not slots
        if len(slots) == 1 and not "".join(literal).strip():
            self._whole = slots[0][1]

    def _compile_jinja(self, found: list[tuple[int, int, Ref, bool]]) -> bool:
        """Compile the text as Jinja; False (stay literal) only for a stray `{#` that is not Jinja."""
        text = self.text
        source: list[str] = []
        subs: list[tuple[int, str, Ref]] = []  # (position, name, ref)
        pos = 0
        for start, end, ref, plain in found:
            source.append(text[pos:start])
            if plain and _jinja_safe(ref):
                source.append(text[start:end])
            else:
                name = f"{_SUB}{len(subs)}"
                subs.append((start, name, ref))
                source.append("{{ " + name + " }}")
            pos = end
        source.append(text[pos:])
        try:
            ast = _ENV.parse("".join(source))
        except jinja2.TemplateSyntaxError as exc:
            if "{%" in text or "{{" in text:
                raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from exc
            return False
        names = sorted(
            n for n in meta.find_undeclared_variables(ast) if not n.startswith(_SUB) and n not in _ENV.globals
        )
        self._jinja = _ENV.from_string(ast)
        self._names = tuple((n, n.lower()) for n in names)
        self._subs = tuple((name, ref) for _, name, ref in subs)
        ordered = [(at, ref) for at, _, ref in subs] + [(text.find(n), Ref(n.lower(), (), n)) for n in names]
        ordered.sort(key=lambda item: item[0])
        self.refs = tuple(ref for _, ref in ordered)
        return True

    def render(self, lookup: Lookup) -> Any:
        """Render against `lookup`; a whole-value reference keeps its type, anything else is a str."""
        if self.is_static:
            return self.text
        if self._whole is not None:
            return _resolve(self._whole, lookup)
        if self._jinja is not None:
            return self._render_jinja(self._jinja, lookup)
        parts = list(self._parts)
        for i, ref in self._slots:
            parts[i] = _text(_resolve(ref, lookup))
        return "".join(parts)

    def _render_jinja(self, jinja: jinja2.Template, lookup: Lookup) -> str:
        variables: dict[str, Any] = {name: _text(_resolve(ref, lookup)) for name, ref in self._subs}
        for name, root in self._names:
            try:
                variables[name] = lookup(root)
            except KeyError:
                continue  # left undefined: renders as "" and chains through attributes
        try:
            return jinja.render(variables)
        except SecurityError as exc:
            raise TemplateError(f"template blocked by the sandbox: {exc}") from exc
        except jinja2.TemplateError as exc:
            raise TemplateError(f"template error: {exc}") from exc
        except Exception as exc:  # errors inside expressions, e.g. `{{ 1 / 0 }}`
            raise TemplateError(f"template error: {type(exc).__name__}: {exc}") from exc

    def __repr__(self) -> str:
        return f"Template({self.text!r})"


@lru_cache(maxsize=4096)
def compile_template(text: str) -> Template:
    """Compile (and cache) a template; raises TemplateError for broken Jinja syntax."""
    return Template(text)


def render(value: Any, lookup: Lookup) -> Any:
    """Render references/templates in a value, deeply; keys and non-string leaves are unchanged."""
    if isinstance(value, str):
        if "{" not in value:
            return value
        return compile_template(value).render(lookup)
    if isinstance(value, dict):
        return {k: render(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, lookup) for v in value]
    return value


def find_refs(value: Any) -> list[Ref]:
    """Every reference in a value (dict values, list items, strings), in order, duplicates kept.

    Raises TemplateError for a string that is broken Jinja, so validation can report it up front.
    It lives here, not in refs.py, because Jinja text declares its references only once compiled.
    """
    out: list[Ref] = []
    _walk(value, out)
    return out


def _walk(value: Any, out: list[Ref]) -> None:
    if isinstance(value, str):
        if "{" in value:
            out.extend(compile_template(value).refs)
    elif isinstance(value, Mapping):
        for item in value.values():
            _walk(item, out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk(item, out)
