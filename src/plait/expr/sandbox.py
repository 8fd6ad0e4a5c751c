"""The Jinja sandbox templates run in, with time and size bounds on everything a template can do.

`ImmutableSandboxedEnvironment` stops escapes (no `__class__`, no `list.append`), not resource use.
This module adds the bounds of budget.py at every place a template spends time or memory:

- **Parse and compile never evaluate user expressions.** Jinja folds constants while compiling
  (`{{ 'x' | center(400000000) }}` ran inside `/flows/validate`): the optimizer is off, every
  filter, test and the finalizer take the render context (Jinja never folds those), and every
  arithmetic operator is intercepted (Jinja never folds those either).
- **Loops, calls, filters and outputs tick the budget.** `bound_ast` rewrites the parsed template:
  every `for` iterates through `__plait_loop` (one tick per item), literal text in loops, macros
  and call blocks becomes a constant that goes through the finalizer (so all text they write, even
  into `{% set %}` blocks and macro bodies, is counted), `~` goes through `__plait_concat` and
  list/tuple/dict literals through `__plait_value` (both measured).
- **Sizes are checked before allocating.** Padding methods and filters (`ljust`, `center`,
  `zfill`, `indent`...), `str.format` and `%` widths, `join`, `replace`, `*` on sequences and
  numbers, `sum` of lists, `batch`/`slice` counts, `lipsum` are checked from their arguments;
  other results are measured right after (they are at most a small multiple of their inputs).

`is_light` tells templates whose running time is bounded by their size (no loops, calls or
macros, few expressions, cheap filters) from the others: template.py renders light ones inline
and others on a worker thread (worker.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import update_wrapper, wraps
from types import BuiltinMethodType, MethodType
from typing import Any

import jinja2
from jinja2 import nodes, pass_context, pass_environment, pass_eval_context
from jinja2.exceptions import SecurityError
from jinja2.filters import make_attrgetter
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import generate_lorem_ipsum
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

from plait.expr.budget import Budget, TemplateLimitError, active

_MAX_POW = 10_000
_LIGHT_MAX_EXPRESSIONS = 100
_MAX_JSON_INDENT = 32
_MAX_SLICES = 100_000
# Filters a light template may use: each costs at most one pass over its input.
_LIGHT_FILTERS = frozenset(
    {
        "abs", "capitalize", "count", "d", "default", "e", "escape", "first", "float", "forceescape",
        "int", "join", "last", "length", "lower", "replace", "round", "safe", "string", "striptags",
        "title", "tojson", "trim", "truncate", "upper", "urlencode", "wordcount",
    }
)  # fmt: skip
# Nodes that make a template's running time depend on its data, not its size.
_HEAVY_NODES = (
    nodes.For,
    nodes.Macro,
    nodes.CallBlock,
    nodes.Call,
    nodes.FilterBlock,
    nodes.Include,
    nodes.Import,
    nodes.FromImport,
    nodes.Extends,
)
# Filters whose result is (part of) their input: nothing new to measure.
_UNMEASURED = frozenset(
    {
        "abs", "attr", "count", "d", "default", "first", "float", "int", "last", "length", "map",
        "max", "min", "random", "reject", "rejectattr", "round", "select", "selectattr", "wordcount",
    }
)  # fmt: skip
_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([diouxXeEfFgGcrsab%])")
_DIGITS = re.compile(r"\d+")
_FORMATS = ("format", "format_map")
_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


def _pass_kind(decorator: Callable[[Any], Any]) -> Any:
    return getattr(decorator(lambda: None), "jinja_pass_arg", None)


_PASS_CONTEXT = _pass_kind(pass_context)
_PASS_EVAL_CONTEXT = _pass_kind(pass_eval_context)
_PASS_ENVIRONMENT = _pass_kind(pass_environment)


def text_of(value: Any) -> str:
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


# --- size checks made before allocating -------------------------------------------------------------


def _arg(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str, default: Any) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def _width(budget: Budget, width: Any, what: str) -> None:
    if isinstance(width, int) and width > budget.max_chars:
        raise budget.too_large(what, width)


def check_printf(budget: Budget, fmt: str | bytes, values: Any) -> None:
    """`fmt % values`: no field width or precision (written or taken by `*`) above the limit."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    if "%" not in text:
        return
    positional = values if isinstance(values, tuple) else (values,)
    index = 0
    for match in _PRINTF.finditer(text):
        width, precision, conversion = match.groups()
        for spec in (width, precision):
            if spec == "*":
                star = positional[index] if index < len(positional) else None
                index += 1
                _width(budget, star, "a formatted field")
            elif spec is not None:
                _width(budget, int(spec), "a formatted field")
        if conversion != "%":
            index += 1


def _check_format_spec(budget: Budget, spec: str) -> None:
    for digits in _DIGITS.findall(spec):
        if len(digits) > 18 or int(digits) > budget.max_chars:
            raise budget.too_large("a formatted field", int(digits) if len(digits) <= 18 else None)


class _BoundedFormatter(SandboxedFormatter):
    """`str.format` in the sandbox, refusing widths and precisions above the size limit."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        _check_format_spec(active(), format_spec)
        return super().format_field(value, format_spec)


class _BoundedEscapeFormatter(SandboxedEscapeFormatter):
    def format_field(self, value: Any, format_spec: str) -> Any:
        _check_format_spec(active(), format_spec)
        return super().format_field(value, format_spec)


def _materialize(budget: Budget, items: Any) -> list[Any]:
    if isinstance(items, (list, tuple)):
        return list(items)
    out = []
    for item in items:
        budget.tick()
        out.append(item)
    return out


def _join_size(budget: Budget, separator: str | bytes, items: list[Any]) -> int:
    return len(separator) * max(len(items) - 1, 0) + budget.weight(items) - 1


def _replace_size(text: Any, old: Any, new: Any, count: Any) -> int:
    if not isinstance(old, type(text)) or not isinstance(new, type(text)):
        return len(text)
    hits = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * (len(new) - len(old))


def _method_args(
    budget: Budget, method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """Check a call of a built-in method before it allocates; returns the arguments to call with."""
    owner: Any = getattr(method, "__self__", None)
    name = getattr(method, "__name__", "")
    if isinstance(owner, (str, bytes, bytearray)):
        return _text_method_args(budget, owner, name, args, kwargs)
    if isinstance(owner, int) and name == "to_bytes":
        _width(budget, _arg(args, kwargs, 0, "length", 1), "a byte string")
    elif method is generate_lorem_ipsum:
        n, most = _arg(args, kwargs, 0, "n", 5), _arg(args, kwargs, 3, "max", 100)
        if isinstance(n, int) and isinstance(most, int):
            budget.check_size(n * max(most, 1) * 12, "placeholder text")
    return args


def _text_method_args(
    budget: Budget, owner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    """`_method_args` for str/bytes methods (`owner` is the string)."""
    if name in ("ljust", "rjust", "center", "zfill"):
        _width(budget, _arg(args, kwargs, 0, "width", 0), f"a string padded by {name}()")
    elif name == "expandtabs":
        tabsize = _arg(args, kwargs, 0, "tabsize", 8)
        if isinstance(tabsize, int):
            tabs = owner.count("\t" if isinstance(owner, str) else b"\t")
            budget.check_size(len(owner) + tabs * tabsize, "a string with expanded tabs")
    elif name == "join" and args:
        items = _materialize(budget, args[0])
        budget.check_size(_join_size(budget, owner, items), "a joined string")
        return (items, *args[1:])
    elif name == "replace" and len(args) >= 2:
        count = args[2] if len(args) > 2 else kwargs.get("count", -1)
        budget.check_size(_replace_size(owner, args[0], args[1], count), "a replaced string")
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, (str, bytes))), default=1)
        budget.check_size(len(owner) * max(longest, 1), "a translated string")
    return args


# --- filters and tests: context-taking (never folded at compile time), ticking, measured --------------


def _check_filter(
    budget: Budget, name: str, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Pre-allocation checks of the filters that can build much more than they are given."""
    if name == "center":
        _width(budget, _arg(args, kwargs, 0, "width", 80), "a centered string")
    elif name == "indent":
        width = _arg(args, kwargs, 0, "width", 4)
        pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        lines = str(value).count("\n") + 1
        budget.check_size(len(str(value)) + lines * pad, "an indented string")
    elif name == "wordwrap":
        wrap = _arg(args, kwargs, 2, "wrapstring", None)
        width = _arg(args, kwargs, 0, "width", 79)
        if isinstance(wrap, str) and isinstance(width, int) and width > 0:
            text = str(value)
            budget.check_size(len(text) + (len(text) // width + 1) * len(wrap), "a wrapped string")
    elif name == "format":
        check_printf(budget, str(value), kwargs or args)
    elif name == "replace" and len(args) >= 2:
        count = _arg(args, kwargs, 2, "count", -1)
        budget.check_size(_replace_size(str(value), str(args[0]), str(args[1]), count), "a replaced string")
    elif name == "tojson":
        indent = _arg(args, kwargs, 0, "indent", None)
        if isinstance(indent, int) and indent > _MAX_JSON_INDENT or isinstance(indent, str):
            raise TemplateLimitError(f"tojson indent must be a number up to {_MAX_JSON_INDENT}")
        budget.check_value(value)
    elif name in ("string", "pprint", "urlencode", "xmlattr"):
        budget.check_value(value)
    elif name == "batch":
        _width(budget, _arg(args, kwargs, 0, "linecount", 1), "a batch")
    elif name == "slice":
        slices = _arg(args, kwargs, 0, "slices", 1)
        if isinstance(slices, int) and slices > min(budget.max_chars, _MAX_SLICES):
            raise budget.too_large("a list of slices", slices)


def _join(budget: Budget, join: Callable[..., Any], first: Any, value: Any, args: Any, kwargs: Any) -> Any:
    separator = str(_arg(args, kwargs, 0, "d", ""))
    if isinstance(value, str):  # its characters, joined
        budget.check_size(len(value) + len(separator) * max(len(value) - 1, 0), "a joined string")
        return join(first, value, *args, **kwargs)
    items = _materialize(budget, value)
    if _arg(args, kwargs, 1, "attribute", None) is None:
        budget.check_size(_join_size(budget, separator, items), "a joined string")
    return join(first, items, *args, **kwargs)


def _sum(budget: Budget, add: Callable[..., Any], env: Any, value: Any, args: Any, kwargs: Any) -> Any:
    start = _arg(args, kwargs, 1, "start", 0)
    if not isinstance(start, (list, tuple)):
        return add(env, value, *args, **kwargs)
    # Sequences: built in one pass (sum() would copy the growing result once per item).
    items = _materialize(budget, value)
    attribute = _arg(args, kwargs, 0, "attribute", None)
    if attribute is not None:
        getter = make_attrgetter(env, attribute)
        items = [getter(item) for item in items]
    out = list(start)
    size = budget.weight(start)
    for item in items:
        budget.tick()
        if type(item) is not type(start):
            raise TypeError(f'can only concatenate {type(start).__name__} (not "{type(item).__name__}")')
        size += budget.weight(item)
        budget.check_size(size, "a summed list")
        out.extend(item)
    return type(start)(out)


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    kind = getattr(func, "jinja_pass_arg", None)
    measured = name not in _UNMEASURED

    @pass_context
    @wraps(func)
    def guarded(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        budget = active()
        budget.tick()
        _check_filter(budget, name, value, args, kwargs)
        if kind is _PASS_CONTEXT:
            first: Any = context
        elif kind is _PASS_EVAL_CONTEXT:
            first = context.eval_ctx
        elif kind is _PASS_ENVIRONMENT:
            first = context.environment
        else:
            first = None
        if name == "join":
            result = _join(budget, func, first, value, args, kwargs)
        elif name == "sum":
            result = _sum(budget, func, first, value, args, kwargs)
        elif first is None:
            result = func(value, *args, **kwargs)
        else:
            result = func(first, value, *args, **kwargs)
        return budget.check_value(result) if measured else result

    return guarded


def _guard_test(func: Any) -> Callable[..., Any]:
    kind = getattr(func, "jinja_pass_arg", None)

    @pass_context
    @wraps(func)
    def guarded(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        active().tick()
        if kind is _PASS_CONTEXT:
            return func(context, value, *args, **kwargs)
        if kind is _PASS_EVAL_CONTEXT:
            return func(context.eval_ctx, value, *args, **kwargs)
        if kind is _PASS_ENVIRONMENT:
            return func(context.environment, value, *args, **kwargs)
        return func(value, *args, **kwargs)

    return guarded


@pass_context
def _loop(context: Any, iterable: Iterable[Any]) -> Iterator[Any]:
    """What every `{% for %}` iterates: the iterable, one budget tick per item."""
    tick = active().tick
    for item in iterable:
        tick()
        yield item


@pass_context
def _concat(context: Any, parts: tuple[Any, ...]) -> str:
    """`a ~ b`, measured before the result is allocated."""
    budget = active()
    texts = [part if type(part) is str else str(budget.check_value(part)) for part in parts]
    budget.check_size(sum(map(len, texts)), "a string")
    return "".join(texts)


@pass_context
def _value(context: Any, value: Any) -> Any:
    """A list, tuple or dict literal, measured (it may repeat a large value)."""
    return active().check_value(value)


@pass_context
def _finalize(context: Any, value: Any) -> str:
    """Every write: literal text and `{{ }}` values, counted against the size limit."""
    budget = active()
    budget.tick()
    if isinstance(value, (list, tuple, dict)):
        budget.check_value(value, "an output")
    return budget.write(text_of(value))


# --- the environment -----------------------------------------------------------------------------------


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The stock immutable sandbox, loud about escapes and bounded in time and size."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})

    def __init__(self) -> None:
        super().__init__(
            autoescape=False,
            undefined=jinja2.ChainableUndefined,
            keep_trailing_newline=True,
            finalize=_finalize,
            optimized=False,
        )
        self.filters = {name: _guard_filter(name, f) for name, f in self.filters.items()}
        self.filters.update({"__plait_loop": _loop, "__plait_concat": _concat, "__plait_value": _value})
        self.tests = {name: _guard_test(t) for name, t in self.tests.items()}

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # The stock sandbox returns an Undefined, which ChainableUndefined would render as "".
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe")

    def getattr(self, obj: Any, attribute: str) -> Any:
        # `{{ out.items }}` means the key, not dict.items: flow data is dicts, not objects.
        if isinstance(obj, Mapping) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        budget = active()
        if operator == "*":
            _check_repeat(budget, left, right)
        elif operator == "**":
            _check_power(budget, left, right)
        elif operator == "+" and isinstance(left, (str, bytes, list, tuple)) and type(left) is type(right):
            size = budget.weight(left) + budget.weight(right)
            budget.check_size(size, "a value")
            return budget.remember(super().call_binop(context, operator, left, right), size)
        elif operator == "%" and isinstance(left, (str, bytes)):
            check_printf(budget, left, right)
            return budget.check_value(super().call_binop(context, operator, left, right))
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        budget = active()
        budget.tick()
        args = _method_args(budget, __obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        return budget.check_value(result)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        # The stock method, with formatters that refuse huge widths (`'{:400000000}'.format(1)`).
        if not isinstance(value, (MethodType, BuiltinMethodType)) or value.__name__ not in _FORMATS:
            return None
        owner = value.__self__
        if not isinstance(owner, str):
            return None
        kind = type(owner)
        is_map = value.__name__ == "format_map"
        formatter: SandboxedFormatter
        if isinstance(owner, Markup):
            formatter = _BoundedEscapeFormatter(self, escape=owner.escape)
        else:
            formatter = _BoundedFormatter(self)

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one positional argument")
                kwargs, args = args[0], ()
            return kind(formatter.vformat(owner, args, kwargs))

        return update_wrapper(wrapper, value)


def _check_repeat(budget: Budget, left: Any, right: Any) -> None:
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, (str, bytes, list, tuple)) and isinstance(times, int) and times > 1:
            each = budget.weight(seq, budget.max_chars // times + 1)
            budget.check_size(each * times, "a repeated sequence")
            return
    if (
        isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > 8 * budget.max_chars
    ):
        raise budget.too_large("a number")


def _check_power(budget: Budget, base: Any, exponent: Any) -> None:
    if isinstance(exponent, (int, float)) and abs(exponent) > _MAX_POW:
        raise SecurityError(f"exponent {exponent} is too large")
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and base.bit_length() * exponent > 8 * budget.max_chars
    ):
        raise budget.too_large("a number")


ENV = BoundedSandbox()
ENV.globals["lipsum"] = generate_lorem_ipsum  # checked in `call` (its arguments set its size)


# --- the parsed template: rewritten so it ticks and measures, and classified ----------------------------


def _wrap(node: Any, name: str) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)


def _literal_items(node: nodes.Expr) -> list[nodes.Node]:
    if isinstance(node, nodes.Dict):
        return [part for pair in node.items for part in (pair.key, pair.value)]
    return list(getattr(node, "items", []))


class _Bound(NodeTransformer):
    """The rewrite described in the module docstring. Literal text outside loops, macros and
    call blocks is written once, at most the template's size: it stays as it is (uncounted)."""

    def __init__(self) -> None:
        self._repeating = 0  # inside a body that may run many times

    def _repeated(self, node: nodes.Node) -> nodes.Node:
        self._repeating += 1
        try:
            return self.generic_visit(node)
        finally:
            self._repeating -= 1

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self._repeated(node)  # rewrites the node in place
        node.iter = _wrap(node.iter, "__plait_loop")
        return node

    visit_Macro = visit_CallBlock = _repeated

    def visit_TemplateData(self, node: nodes.TemplateData) -> nodes.Node:
        return nodes.Const(node.data, lineno=node.lineno) if self._repeating else node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _wrap(nodes.Tuple(list(node.nodes), "load", lineno=node.lineno), "__plait_concat")

    def _literal(self, node: nodes.Expr) -> nodes.Node:
        self.generic_visit(node)
        if getattr(node, "ctx", "load") != "load":
            return node
        if all(isinstance(item, nodes.Const) for item in _literal_items(node)):
            return node  # as large as its text
        return _wrap(node, "__plait_value")

    visit_List = visit_Tuple = visit_Dict = _literal


def is_light(ast: nodes.Template) -> bool:
    """Whether a parsed template runs in time bounded by its size (see the module docstring)."""
    expressions = 0
    for node in ast.find_all(nodes.Node):
        if isinstance(node, _HEAVY_NODES):
            return False
        if isinstance(node, nodes.Filter) and node.name not in _LIGHT_FILTERS:
            return False
        if isinstance(node, nodes.Expr):
            expressions += 1
            if expressions > _LIGHT_MAX_EXPRESSIONS:
                return False
    return True


def bound_ast(ast: nodes.Template) -> nodes.Template:
    """The template rewritten to tick and measure (see the module docstring)."""
    _Bound().visit(ast)  # in place: the root is never replaced
    ast.set_environment(ENV)
    return ast


__all__ = ["ENV", "BoundedSandbox", "bound_ast", "check_printf", "is_light", "text_of"]
