"""Templates: plain references rendered by a fast path, anything richer by sandboxed Jinja2.

A string that is exactly one reference renders to the referenced value with its type, so
`"{{a.list}}"` hands a list to the next node. Text with references renders each one (strings
as-is, None as "", others as JSON). Strings with Jinja syntax beyond plain references (filters,
expressions, `{% %}`) compile once in the bounded sandbox (sandbox.py); there is no eval.

Every render is bounded (budget.py): text is at most PLAIT_TEMPLATE_MAX_CHARS characters, and a
Jinja render has a deadline. Where it runs depends on the template (`Template.light`):

- plain references and light Jinja templates (no loops, calls or macros, few expressions: time
  bounded by their size) render inline, wherever they are asked for. This is the hot path.
- other Jinja templates may run up to their deadline, so they must not run on the event loop:
  `arender` (what async code awaits) renders them on a render thread (worker.py), with
  PLAIT_TEMPLATE_TIMEOUT_S or the caller's `timeout_s`, whichever is shorter. The synchronous
  `render`, when called on a thread that runs an event loop, gets the short
  PLAIT_TEMPLATE_INLINE_TIMEOUT_S instead, so a sync caller stalls the loop for at most that;
  off the loop (a render thread, a script) it gets the full budget.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from functools import lru_cache, partial
from typing import Any

import jinja2
from jinja2 import meta
from jinja2.exceptions import SecurityError

from plait.expr.budget import Budget, TemplateLimitError, current, enter, leave, limits
from plait.expr.refs import Lookup, Ref, TemplateError, get_path, scan
from plait.expr.sandbox import ENV, bound_ast, is_light, text_of
from plait.expr.worker import run_bounded

_JINJA_MARKERS = ("{%", "{{", "{#")
_JINJA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JINJA_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_SUB = "__plait_ref_"  # Jinja variable names for references Jinja cannot parse (`a@b`, `{sys.x}`)
# Compiling costs time and memory (about 50 µs per syntax node), before the template ever runs.
MAX_JINJA_SOURCE = 256 * 1024  # characters of one Jinja template
MAX_JINJA_TAGS = 1_000  # `{{ }}` and `{% %}` tags in one template
MAX_JINJA_NODES = 5_000  # syntax nodes of one parsed template

_text = text_of


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
    so rendering is a fill-in and a join. Jinja mode keeps the compiled Jinja template; `light`
    says whether it may render inline (see the module docstring).
    """

    __slots__ = (
        "text",
        "refs",
        "is_static",
        "light",
        "_parts",
        "_slots",
        "_whole",
        "_jinja",
        "_names",
        "_subs",
        "_literal_size",
    )

    def __init__(self, text: str) -> None:
        self.text = text
        self.light = True
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
            self._literal_size = 0
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
        self._literal_size = sum(map(len, parts))
        self.refs: tuple[Ref, ...] = tuple(ref for _, ref in slots)
        self.is_static = not slots
        if len(slots) == 1 and not "".join(literal).strip():
            self._whole = slots[0][1]

    def _compile_jinja(self, found: list[tuple[int, int, Ref, bool]]) -> bool:
        """Compile the text as Jinja; False (stay literal) only for a stray `{#` that is not Jinja.

        Compiling never runs the template (sandbox.py), so validating a flow costs only its size.
        """
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
        _check_source_size(text)
        try:
            ast = ENV.parse("".join(source))
            _check_syntax_size(ast)
            names = sorted(
                n
                for n in meta.find_undeclared_variables(ast)
                if not n.startswith(_SUB) and n not in ENV.globals
            )
            self.light = is_light(ast)
            self._jinja = ENV.from_string(bound_ast(ast))
        except jinja2.TemplateSyntaxError as exc:
            if "{%" in text or "{{" in text:
                raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from exc
            return False
        except (RecursionError, MemoryError, SyntaxError) as exc:
            raise TemplateError(
                "template is nested too deeply to compile", hint="use fewer nested brackets and blocks"
            ) from exc
        self._names = tuple((n, n.lower()) for n in names)
        self._subs = tuple((name, ref) for _, name, ref in subs)
        ordered = [(at, ref) for at, _, ref in subs] + [(text.find(n), Ref(n.lower(), (), n)) for n in names]
        ordered.sort(key=lambda item: item[0])
        self.refs = tuple(ref for _, ref in ordered)
        return True

    def render(self, lookup: Lookup, timeout_s: float | None = None) -> Any:
        """Render against `lookup`; a whole-value reference keeps its type, anything else is a str.

        `timeout_s` caps the time budget of a Jinja render (the caller's own deadline).
        """
        if self.is_static:
            return self.text
        if self._whole is not None:
            return _resolve(self._whole, lookup)
        if self._jinja is not None:
            budget = current()
            if budget is not None:  # inside a bounded render (a render thread, an outer call)
                return self._run(self._variables(lookup), budget)
            return self._run_with(self._variables(lookup), self._own_budget(timeout_s))
        parts = list(self._parts)
        size = self._literal_size
        max_chars = limits().max_chars
        for i, ref in self._slots:
            text = _text(_resolve(ref, lookup))
            size += len(text)
            if size > max_chars:
                raise Budget(None, max_chars).too_large("a text", size)
            parts[i] = text
        return "".join(parts)

    async def arender(self, lookup: Lookup, timeout_s: float | None = None) -> Any:
        """Render without blocking the event loop: a Jinja template that is not light runs on a
        render thread; anything else renders inline as `render` does."""
        if self._jinja is None or self.light:
            return self.render(lookup, timeout_s)
        variables = self._variables(lookup, snapshot=True)
        budget = _budget(limits().timeout_s, timeout_s, "PLAIT_TEMPLATE_TIMEOUT_S", polite=True)
        return await run_bounded(partial(self._run_with, variables, budget), budget)

    def _own_budget(self, timeout_s: float | None) -> Budget:
        settings = limits()
        if self.light:  # its time is bounded by its size: no clock to read
            return Budget(None, settings.max_chars)
        if not _on_event_loop():  # a render thread, a script
            return _budget(settings.timeout_s, timeout_s, "PLAIT_TEMPLATE_TIMEOUT_S", polite=True)
        return _budget(
            settings.inline_timeout_s,
            timeout_s,
            "PLAIT_TEMPLATE_INLINE_TIMEOUT_S, for templates this node renders on the server's event loop",
        )

    def _variables(self, lookup: Lookup, snapshot: bool = False) -> dict[str, Any]:
        """The Jinja variables: substituted references as text, roots as values. `snapshot` copies
        dict roots (a render thread must not see the run's variables change under it)."""
        variables: dict[str, Any] = {name: _text(_resolve(ref, lookup)) for name, ref in self._subs}
        for name, root in self._names:
            try:
                value = lookup(root)
            except KeyError:
                continue  # left undefined: renders as "" and chains through attributes
            variables[name] = dict(value) if snapshot and type(value) is dict else value
        return variables

    def _run_with(self, variables: dict[str, Any], budget: Budget) -> str:
        token = enter(budget)
        try:
            return self._run(variables, budget)
        finally:
            leave(token)

    def _run(self, variables: dict[str, Any], budget: Budget) -> str:
        jinja = self._jinja
        assert jinja is not None
        try:
            budget.tick()
            return jinja.render(variables)
        except TemplateError:
            raise
        except SecurityError as exc:
            raise TemplateError(f"template blocked by the sandbox: {exc}") from exc
        except jinja2.TemplateError as exc:
            raise TemplateError(f"template error: {exc}") from exc
        except RecursionError as exc:
            raise TemplateLimitError(
                "template recursion is too deep", hint="call macros (or loop(...)) less deeply"
            ) from exc
        except MemoryError as exc:
            raise TemplateLimitError("template ran out of memory", hint="render less data") from exc
        except Exception as exc:  # errors inside expressions, e.g. `{{ 1 / 0 }}`
            raise TemplateError(f"template error: {type(exc).__name__}: {exc}") from exc

    def __repr__(self) -> str:
        return f"Template({self.text!r})"


def _check_source_size(text: str) -> None:
    hint = "split it into several templates, or build the text in a code node"
    if len(text) > MAX_JINJA_SOURCE:
        raise TemplateLimitError(
            f"template is {len(text):,} characters long; a Jinja template may have up to {MAX_JINJA_SOURCE:,}",
            hint=hint,
        )
    tags = text.count("{{") + text.count("{%")
    if tags > MAX_JINJA_TAGS:
        raise TemplateLimitError(
            f"template has {tags:,} tags; a Jinja template may have up to {MAX_JINJA_TAGS:,}", hint=hint
        )


def _check_syntax_size(ast: jinja2.nodes.Template) -> None:
    for count, _ in enumerate(ast.find_all(jinja2.nodes.Node), 1):
        if count > MAX_JINJA_NODES:
            raise TemplateLimitError(
                f"template has more than {MAX_JINJA_NODES:,} expressions and statements",
                hint="split it into several templates, or build the text in a code node",
            )


def _budget(limit_s: float, timeout_s: float | None, setting: str, polite: bool = False) -> Budget:
    """A budget of `limit_s`, or less when the caller has less time: then the render stops a
    little before the caller's own deadline, so the template's message is the one people read."""
    if timeout_s is not None:
        timeout_s -= min(0.1, timeout_s / 10)
        if timeout_s < limit_s:
            return Budget(
                max(timeout_s, 0.0), limits().max_chars, setting="the node's timeout_s", polite=polite
            )
    return Budget(limit_s, limits().max_chars, setting=setting, polite=polite)


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@lru_cache(maxsize=4096)
def compile_template(text: str) -> Template:
    """Compile (and cache) a template; raises TemplateError for broken Jinja syntax."""
    return Template(text)


def render(value: Any, lookup: Lookup, *, timeout_s: float | None = None) -> Any:
    """Render references/templates in a value, deeply; keys and non-string leaves are unchanged.

    Synchronous: see the module docstring for what that means on an event loop (`arender`).
    """
    if isinstance(value, str):
        if "{" not in value:
            return value
        return compile_template(value).render(lookup, timeout_s)
    if isinstance(value, dict):
        return {k: render(v, lookup, timeout_s=timeout_s) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, lookup, timeout_s=timeout_s) for v in value]
    return value


async def arender(value: Any, lookup: Lookup, *, timeout_s: float | None = None) -> Any:
    """`render` for async code: templates that are not light render on a render thread, within
    PLAIT_TEMPLATE_TIMEOUT_S or `timeout_s` (the caller's remaining time), whichever is shorter."""
    if not needs_thread(value):
        return render(value, lookup, timeout_s=timeout_s)
    return await _arender(value, lookup, timeout_s)


async def _arender(value: Any, lookup: Lookup, timeout_s: float | None) -> Any:
    if isinstance(value, str):
        if "{" not in value:
            return value
        return await compile_template(value).arender(lookup, timeout_s)
    if isinstance(value, dict):
        return {k: await _arender(v, lookup, timeout_s) for k, v in value.items()}
    if isinstance(value, list):
        return [await _arender(v, lookup, timeout_s) for v in value]
    return value


def needs_thread(value: Any) -> bool:
    """Whether rendering `value` may take a template's whole time budget (a Jinja template with
    loops, calls or macros): such values should be rendered with `arender`, off the event loop."""
    if isinstance(value, str):
        return "{" in value and not compile_template(value).light
    if isinstance(value, dict):
        return any(needs_thread(v) for v in value.values())
    if isinstance(value, list):
        return any(needs_thread(v) for v in value)
    return False


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
