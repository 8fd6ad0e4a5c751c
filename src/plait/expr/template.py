"""Templates: plain references rendered by a fast path, anything richer by sandboxed Jinja2.

A string that is exactly one reference renders to the referenced value with its type. Text with
references renders each one (strings as-is, None as "", others as JSON). Strings with Jinja
syntax beyond plain references (filters, expressions, `{% %}`) compile once into an
`ImmutableSandboxedEnvironment` template; there is no eval anywhere.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from plait.expr.refs import BRACED_REF, Lookup, Ref, TemplateError, get_path, ref_from_match

_JINJA_MARKERS = re.compile(r"\{%|\{#|\{\{")
_ENV = ImmutableSandboxedEnvironment(
    autoescape=False, undefined=jinja2.ChainableUndefined, keep_trailing_newline=True
)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, (bool, int, float, dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _resolve(ref: Ref, lookup: Lookup) -> Any:
    try:
        root = lookup(ref.root)
    except KeyError:
        return None
    return get_path(root, ref.path) if ref.path else root


class Template:
    """A compiled template; build with `compile_template` (cached)."""

    __slots__ = ("text", "refs", "is_static", "_chunks", "_whole", "_jinja", "_jinja_names")

    def __init__(self, text: str) -> None:
        self.text = text
        self._whole: Ref | None = None
        self._jinja: jinja2.Template | None = None
        self._jinja_names: tuple[str, ...] = ()
        chunks: list[str | Ref] = []
        pos = 0
        for m in BRACED_REF.finditer(text):
            if m.start() > pos:
                chunks.append(text[pos : m.start()])
            chunks.append(ref_from_match(m, m.group(0)))
            pos = m.end()
        if pos < len(text):
            chunks.append(text[pos:])
        literal = "".join(c for c in chunks if isinstance(c, str))
        if _JINJA_MARKERS.search(literal) and self._compile_jinja(text):
            self.refs = tuple(Ref(n.lower(), (), n) for n in self._jinja_names)
            self._chunks: tuple[str | Ref, ...] = ()
            self.is_static = False
            return
        self._chunks = tuple(chunks)
        self.refs = tuple(c for c in chunks if isinstance(c, Ref))
        self.is_static = not self.refs
        if len(self.refs) == 1 and all(isinstance(c, Ref) or not c.strip() for c in chunks):
            self._whole = self.refs[0]

    def _compile_jinja(self, text: str) -> bool:
        """Jinja mode only when the leftover markers are real Jinja syntax; JSON-ish text stays literal."""
        try:
            ast = _ENV.parse(text)
        except jinja2.TemplateSyntaxError as exc:
            if "{%" in text or "{{" in text:
                raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from None
            return False
        self._jinja = _ENV.from_string(ast)
        self._jinja_names = tuple(sorted(meta.find_undeclared_variables(ast)))
        return True

    def render(self, lookup: Lookup) -> Any:
        if self.is_static:
            return self.text
        if self._whole is not None:
            return _resolve(self._whole, lookup)
        if self._jinja is not None:
            return self._render_jinja(lookup)
        return "".join(c if type(c) is str else _text(_resolve(c, lookup)) for c in self._chunks)  # type: ignore[arg-type]

    def _render_jinja(self, lookup: Lookup) -> str:
        variables: dict[str, Any] = {}
        for name in self._jinja_names:
            try:
                variables[name] = lookup(name.lower())
            except KeyError:
                continue
        try:
            return self._jinja.render(variables)  # type: ignore[union-attr]
        except SecurityError as exc:
            raise TemplateError(f"template blocked by the sandbox: {exc}") from None
        except jinja2.TemplateError as exc:
            raise TemplateError(f"template error: {exc}") from None


@lru_cache(maxsize=4096)
def compile_template(text: str) -> Template:
    return Template(text)


def render(value: Any, lookup: Lookup) -> Any:
    """Render references/templates in a value, deeply; non-string leaves are returned unchanged."""
    if type(value) is str:
        if "{" not in value:
            return value
        return compile_template(value).render(lookup)
    if isinstance(value, dict):
        return {k: render(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, lookup) for v in value]
    return value
