"""Pure data nodes: `data_ops`, `list_ops`, `text` (RAGFlow DataOperations, ListOperations,
StringTransform) and `transform` (n8n's Set: build an object from templates and JSONPath).

They share one idea of "the data": the `source` field, a reference or template rendered at run
time, defaulting to the value on the input port. Each node outputs its result directly (no
`result` wrapper), so `{{node}}`, `{{node.0}}` and `{{node.-1}}` read it, its first and last item.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from functools import cached_property, lru_cache
from typing import Any, Literal

from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JSONPathError
from jsonpath_ng.ext.iterable import Len
from jsonpath_ng.ext.parser import parse as parse_jsonpath
from jsonpath_ng.jsonpath import Child, Fields, Index, Root, This
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from plait.expr import get_path
from plait.nodes.base import MultiInput, Node, NodeContext, NodeError
from plait.nodes.builtin._conditions import (
    CASE_SENSITIVE_DESCRIPTION,
    LOGIC_DESCRIPTION,
    ItemCondition,
    Logic,
    as_text,
    item_filter,
    preview,
)

_SOURCE_DOC = (
    "The data: a reference or template such as '{{fetch.body.items}}'. Default: the value on the input "
    "port (with several incoming edges, the list of delivered values in edge order). JSON text is decoded."
)


# ----------------------------------------------------------------------------- shared helpers
def read_source(ctx: NodeContext, source: Any) -> Any:
    """The data a node works on: `source` rendered, or the input (several deliveries -> their list)."""
    if source is not None:
        return ctx.render(source)
    delivered = ctx.input
    if isinstance(delivered, MultiInput):
        return list(delivered.values())
    return delivered


def decode_json_text(value: Any) -> Any:
    """JSON text (an HTTP body, an LLM answer) as data; any other value unchanged."""
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _expect_list(data: Any, operation: str) -> list[Any]:
    if isinstance(data, list):
        return data
    raise NodeError(
        f"{operation}: `source` is {_kind(data)}, not a list",
        hint="point `source` at a list, e.g. '{{search.results}}'",
        retryable=False,
    )


def _expect_objects(data: Any, operation: str) -> list[dict[str, Any]]:
    """A dict or a list of dicts as a list of dicts; anything else is an error naming `source`.

    Lists inside the list are spliced in, as RAGFlow does when `source` lists several references
    that each hold a list of objects ('{{a.rows}}', '{{b.rows}}').
    """
    if isinstance(data, dict):
        return [data]
    if not isinstance(data, list):
        raise NodeError(
            f"{operation}: `source` is {_kind(data)}, not an object or a list of objects",
            hint="point `source` at an object, e.g. '{{fetch.body}}'",
            retryable=False,
        )
    objects: list[dict[str, Any]] = []
    for index, item in enumerate(data):
        for obj in item if isinstance(item, list) else [item]:
            if not isinstance(obj, dict):
                raise NodeError(
                    f"{operation}: `source[{index}]` is {_kind(obj)}, not an object",
                    hint="data_ops works on an object or a list of objects",
                    retryable=False,
                )
            objects.append(obj)
    return objects


_KIND_NAMES = {
    bool: "a boolean",
    int: "a number",
    float: "a number",
    str: "text",
    list: "a list",
    dict: "an object",
}


def _kind(value: Any) -> str:
    """How error messages describe a value: its JSON kind and a short preview."""
    if value is None:
        return "empty (None)"
    return f"{_KIND_NAMES.get(type(value), type(value).__name__)} {preview(value, 40)}"


class ItemFilter(BaseModel):
    """Keeps the items for which the conditions hold (the same operators as switch/if)."""

    model_config = ConfigDict(extra="forbid", title="Filter")

    when: list[ItemCondition] = Field(..., min_length=1, title="When", description="Tests on each item.")
    logic: Logic = Field("and", title="Logic", description=LOGIC_DESCRIPTION)
    case_sensitive: bool = Field(False, title="Case-sensitive", description=CASE_SENSITIVE_DESCRIPTION)

    def predicate(self, ctx: NodeContext) -> Callable[[Any], bool]:
        return item_filter(ctx, self.when, self.logic, self.case_sensitive)


# ----------------------------------------------------------------------------- data_ops
DataOperation = Literal[
    "select_keys", "literal_eval", "combine", "filter", "append_or_update", "remove", "rename"
]
# The field each operation cannot do without (checked when the flow is validated, not at run time).
_REQUIRED_FIELD = {
    "select_keys": "keys",
    "remove": "keys",
    "filter": "filter",
    "append_or_update": "updates",
    "rename": "renames",
}


class DataOpsConfig(BaseModel):
    """Operations on an object or a list of objects; a list in gives a list out (filter: always a list,
    combine: one object)."""

    model_config = ConfigDict(extra="forbid", title="Data operations")

    operation: DataOperation = Field(
        ...,
        title="Operation",
        description="select_keys: keep `keys`; remove: drop `keys`; rename: apply `renames`; "
        "append_or_update: set `updates`; filter: keep the objects matching `filter`; combine: merge "
        "a list of objects into one (values of a repeated key are collected in a list); literal_eval: "
        "parse JSON / Python literal text (nested text fields that look like literals too).",
    )
    source: Any = Field(None, title="Source", description=_SOURCE_DOC)
    keys: list[str] = Field(
        default_factory=list, title="Keys", description="select_keys / remove: top-level keys."
    )
    filter: ItemFilter | None = Field(None, title="Filter", description="filter: which objects to keep.")
    updates: dict[str, Any] = Field(
        default_factory=dict,
        title="Updates",
        description="append_or_update: key -> value to set on every object (values may be templates).",
    )
    renames: dict[str, str] = Field(
        default_factory=dict, title="Renames", description="rename: old key -> new key."
    )

    @model_validator(mode="after")
    def _operation_has_its_field(self) -> DataOpsConfig:
        field = _REQUIRED_FIELD.get(self.operation)
        if field is not None and not getattr(self, field):
            raise ValueError(f"operation {self.operation!r} needs `{field}`")
        return self


class DataOpsNode(Node[DataOpsConfig]):
    type_name = "data_ops"
    title = "Data operations"
    description = "select_keys, literal_eval, combine, filter, append_or_update, remove, rename on objects."
    category = "data"
    Config = DataOpsConfig
    inline = True

    def execute(self, ctx: NodeContext) -> Any:
        config = self.config
        operation = config.operation
        data = read_source(ctx, config.source)
        if operation == "literal_eval":
            return literal_eval(data)
        data = decode_json_text(data)
        objects = _expect_objects(data, operation)
        if operation == "combine":
            return _combine(objects)
        if operation == "filter":
            assert config.filter is not None  # the config's validator requires it for "filter"
            keep = config.filter.predicate(ctx)
            return [obj for obj in objects if keep(obj)]
        change = self._object_change(ctx, config)
        return change(data) if isinstance(data, dict) else [change(obj) for obj in objects]

    @staticmethod
    def _object_change(ctx: NodeContext, config: DataOpsConfig) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The per-object function of select_keys / remove / rename / append_or_update."""
        if config.operation == "select_keys":
            return lambda obj: {key: obj[key] for key in config.keys if key in obj}
        if config.operation == "remove":
            dropped = set(config.keys)
            return lambda obj: {key: value for key, value in obj.items() if key not in dropped}
        if config.operation == "rename":
            return lambda obj: _rename(obj, config.renames)
        updates = ctx.render(config.updates)  # rendered once per run, not per object
        return lambda obj: {**obj, **updates}


def _rename(obj: dict[str, Any], renames: dict[str, str]) -> dict[str, Any]:
    """Renames in place (key order kept); a renamed key wins over an existing key of the new name."""
    targets = {renames[key] for key in obj if key in renames}
    return {
        renames.get(key, key): value for key, value in obj.items() if key in renames or key not in targets
    }


def _combine(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """RAGFlow's combine: the union of the keys; a key seen again collects its values in a list."""
    merged: dict[str, Any] = {}
    for obj in objects:
        for key, value in obj.items():
            if key not in merged:
                merged[key] = value
                continue
            previous = merged[key] if isinstance(merged[key], list) else [merged[key]]
            merged[key] = [*previous, *(value if isinstance(value, list) else [value])]
    return merged


_LITERAL_START = ("{", "[", "(", "'", '"')
_LITERAL_WORDS = frozenset({"true", "false", "null", "none"})
_NUMERAL = re.compile(r"-?\d+(\.\d+)?")


def literal_eval(data: Any) -> Any:
    """Text is parsed (JSON, then Python literals via ast.literal_eval, never eval); objects and lists
    have their text fields parsed when they look like literals and are left alone when they do not."""
    if isinstance(data, str):
        try:
            return _parse_literal(data)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            raise NodeError(
                f"literal_eval: cannot parse `source` {preview(data)} as a JSON or Python literal",
                hint="literal_eval reads data such as {'a': 1} or [1, 2]; it never runs code",
                retryable=False,
            ) from exc
    return _eval_nested(data)


def _eval_nested(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _eval_nested(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_eval_nested(item) for item in value]
    if isinstance(value, str) and _looks_literal(value):
        try:
            return _parse_literal(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return value
    return value


def _looks_literal(text: str) -> bool:
    stripped = text.strip()
    return (
        stripped.startswith(_LITERAL_START)
        or stripped.lower() in _LITERAL_WORDS
        or _NUMERAL.fullmatch(stripped) is not None
    )


def _parse_literal(text: str) -> Any:
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    return _json_data(ast.literal_eval(stripped))


def _json_data(value: Any) -> Any:
    """Python literal values as JSON data (tuples and sets become lists), so outputs persist as JSON."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_data(item) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [_json_data(item) for item in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, dict):
        return {
            key if isinstance(key, str) else as_text(_json_data(key)): _json_data(item)
            for key, item in value.items()
        }
    raise ValueError(f"{type(value).__name__} values are not JSON data")


# ----------------------------------------------------------------------------- list_ops
ListOperation = Literal["nth", "head", "tail", "filter", "sort", "drop_duplicates"]


class ListOpsConfig(BaseModel):
    """Operations on a list. nth gives one item; the others give a list."""

    model_config = ConfigDict(extra="forbid", title="List operations")

    operation: ListOperation = Field(
        ...,
        title="Operation",
        description="nth: the item at position `n`; head / tail: the first / last `n` items; filter: the "
        "items matching `filter`; sort: by `key` (missing values last); drop_duplicates: the first item "
        "of each distinct `key`.",
    )
    source: Any = Field(None, title="Source", description=_SOURCE_DOC)
    n: int = Field(
        1,
        title="N",
        description="nth: position counted from 1 (-1 is the last item); head / tail: how many items.",
    )
    key: str = Field(
        "",
        title="Key",
        description="sort / drop_duplicates: dot path inside each item, e.g. 'score'; empty uses the item.",
    )
    reverse: bool = Field(False, title="Descending", description="sort: largest first.")
    filter: ItemFilter | None = Field(None, title="Filter", description="filter: which items to keep.")

    @model_validator(mode="after")
    def _operation_has_its_field(self) -> ListOpsConfig:
        if self.operation == "nth" and self.n == 0:
            raise ValueError("nth counts from 1 (or from -1 at the end); n cannot be 0")
        if self.operation in ("head", "tail") and self.n < 0:
            raise ValueError(f"{self.operation} needs n >= 0")
        if self.operation == "filter" and self.filter is None:
            raise ValueError("operation 'filter' needs `filter`")
        return self

    @cached_property
    def key_path(self) -> tuple[str, ...]:
        return tuple(self.key.split(".")) if self.key else ()


class ListOpsNode(Node[ListOpsConfig]):
    type_name = "list_ops"
    title = "List operations"
    description = "nth, head, tail, filter, sort, drop_duplicates on a list."
    category = "data"
    Config = ListOpsConfig
    inline = True

    def execute(self, ctx: NodeContext) -> Any:
        config = self.config
        operation = config.operation
        items = _expect_list(decode_json_text(read_source(ctx, config.source)), operation)
        if operation == "nth":
            return _nth(items, config.n)
        if operation == "head":
            return items[: config.n]
        if operation == "tail":
            return items[-config.n :] if config.n else []
        if operation == "filter":
            assert config.filter is not None  # the config's validator requires it for "filter"
            keep = config.filter.predicate(ctx)
            return [item for item in items if keep(item)]
        if operation == "sort":
            return _sort(items, config)
        return _drop_duplicates(items, config.key_path)


def _nth(items: list[Any], n: int) -> Any:
    if not -len(items) <= n <= len(items):
        raise NodeError(
            f"nth: n={n} is out of range for a list of {len(items)} items",
            hint="check the list is long enough first (if: not_empty), or use head",
            retryable=False,
        )
    return items[n - 1 if n > 0 else n]


def _sort(items: list[Any], config: ListOpsConfig) -> list[Any]:
    """Stable sort by `key`; items without a value go last in either direction."""
    keyed = [(get_path(item, config.key_path), item) for item in items]
    present = [pair for pair in keyed if pair[0] is not None]
    missing = [item for value, item in keyed if value is None]
    try:
        ordered = sorted(present, key=lambda pair: pair[0], reverse=config.reverse)
    except TypeError as exc:
        raise NodeError(
            f"sort: the values at key {config.key or '(the items themselves)'!r} cannot be ordered "
            "(mixed types, or objects)",
            hint="set `key` to a field that holds numbers or text in every item",
            retryable=False,
        ) from exc
    return [item for _, item in ordered] + missing


def _drop_duplicates(items: list[Any], key_path: tuple[str, ...]) -> list[Any]:
    seen: set[str] = set()
    kept: list[Any] = []
    for item in items:
        identity = json.dumps(get_path(item, key_path), sort_keys=True, ensure_ascii=False, default=str)
        if identity not in seen:
            seen.add(identity)
            kept.append(item)
    return kept


# ----------------------------------------------------------------------------- text
class TextConfig(BaseModel):
    """Text operations: split text into a list, merge a list into text, or render a template."""

    model_config = ConfigDict(extra="forbid", title="Text")

    operation: Literal["split", "merge", "template"] = Field(
        ...,
        title="Operation",
        description="split: text -> list at any of `delimiters`; merge: list -> text joined by `separator`; "
        "template: render `template`.",
    )
    source: Any = Field(None, title="Source", description=_SOURCE_DOC + " Used by split and merge.")
    delimiters: list[str] = Field(
        default_factory=lambda: [","],
        min_length=1,
        title="Delimiters",
        description="split: any of these separates two parts.",
    )
    trim: bool = Field(
        True,
        title="Trim",
        description="split: strip spaces around each part and drop empty parts (off: exact parts, as RAGFlow).",
    )
    separator: str = Field(",", title="Separator", description="merge: placed between two items.")
    template: str = Field(
        "",
        title="Template",
        description="template: text with references and Jinja, e.g. 'Dear {{inputs.name | title}}'.",
    )

    @field_validator("delimiters")
    @classmethod
    def _delimiters_not_empty(cls, delimiters: list[str]) -> list[str]:
        if any(not delimiter for delimiter in delimiters):
            raise ValueError("a delimiter cannot be empty text")
        return delimiters

    @model_validator(mode="after")
    def _template_given(self) -> TextConfig:
        if self.operation == "template" and not self.template:
            raise ValueError("operation 'template' needs `template`")
        return self

    @cached_property
    def split_pattern(self) -> re.Pattern[str]:
        # Longest first, so '\r\n' wins over '\n'.
        ordered = sorted(self.delimiters, key=len, reverse=True)
        return re.compile("|".join(re.escape(delimiter) for delimiter in ordered))


class TextNode(Node[TextConfig]):
    type_name = "text"
    title = "Text"
    description = "Split text by delimiters, merge a list into text, or render a template."
    category = "data"
    Config = TextConfig
    inline = True

    def execute(self, ctx: NodeContext) -> Any:
        config = self.config
        if config.operation == "template":
            return as_text(ctx.render(config.template))
        data = read_source(ctx, config.source)
        if config.operation == "split":
            return _split(data, config)
        return config.separator.join(as_text(item) for item in _expect_list(decode_json_text(data), "merge"))


def _split(text: Any, config: TextConfig) -> list[str]:
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise NodeError(
            f"split: `source` is {_kind(text)}, not text",
            hint="point `source` at text, or use list_ops on lists",
            retryable=False,
        )
    parts = config.split_pattern.split(text)
    if not config.trim:
        return parts
    return [part.strip() for part in parts if part.strip()]


# ----------------------------------------------------------------------------- transform
_JSONPATH_START = re.compile(r"\$(?:$|[.\[])")


def is_jsonpath(value: Any) -> bool:
    """'$', '$.a' and '$[0]' are JSONPath; other text (even '$5 off') is a template."""
    return isinstance(value, str) and _JSONPATH_START.match(value) is not None


@lru_cache(maxsize=1024)
def compile_jsonpath(expression: str) -> JSONPath:
    """Parse once: config validation and every node built from the same text share the result."""
    return parse_jsonpath(expression)


def _is_definite(path: JSONPath) -> bool:
    """Whether a path names at most one value (no wildcard, slice, filter, union or '..')."""
    if isinstance(path, (Root, This, Len)):
        return True
    if isinstance(path, Child):
        return _is_definite(path.left) and _is_definite(path.right)
    if isinstance(path, Fields):
        return len(path.fields) == 1 and path.fields[0] != "*"
    if isinstance(path, Index):
        return len(path.indices) == 1
    return False


class TransformConfig(BaseModel):
    """Builds an object: each output key gets a template's value or a JSONPath query of `source`."""

    model_config = ConfigDict(extra="forbid", title="Transform")

    mapping: dict[str, Any] = Field(
        ...,
        min_length=1,
        title="Mapping",
        description="Output key -> a template ('Hi {{inputs.name}}', '{{fetch.body.id}}') or a JSONPath "
        "on `source` starting with '$.' or '$[' ('$.items[*].name'). A path naming one value gives that "
        "value (or None); a path with *, .., a slice or a filter gives a list.",
    )
    source: Any = Field(
        None,
        title="Source",
        description="What JSONPath expressions query: " + _SOURCE_DOC,
    )
    keep_source: bool = Field(
        False,
        title="Keep source",
        description="Start from the source object and add or replace the mapped keys.",
    )

    @field_validator("mapping")
    @classmethod
    def _jsonpaths_parse(cls, mapping: dict[str, Any]) -> dict[str, Any]:
        for key, expression in mapping.items():
            if is_jsonpath(expression):
                try:
                    compile_jsonpath(expression)
                except (JSONPathError, ValueError, TypeError) as exc:
                    raise ValueError(f"mapping[{key!r}]: invalid JSONPath {expression!r}: {exc}") from exc
        return mapping


class TransformNode(Node[TransformConfig]):
    type_name = "transform"
    title = "Transform"
    description = "Builds an object from templates and JSONPath expressions (like n8n's Set)."
    category = "data"
    Config = TransformConfig
    inline = True

    def __init__(self, node_id: str, config: TransformConfig) -> None:
        super().__init__(node_id, config)
        mapping: dict[str, Any] = config.mapping
        self._paths: dict[str, tuple[JSONPath, bool]] = {}
        for key, expression in mapping.items():
            if is_jsonpath(expression):
                path = compile_jsonpath(expression)
                self._paths[key] = (path, _is_definite(path))

    @classmethod
    def reference_texts(cls, config: TransformConfig) -> list[tuple[str, Any]]:
        templates = {key: value for key, value in config.mapping.items() if not is_jsonpath(value)}
        return [("mapping", templates), ("source", config.source)]

    def execute(self, ctx: NodeContext) -> dict[str, Any]:
        config = self.config
        source = decode_json_text(read_source(ctx, config.source))
        if config.keep_source and not isinstance(source, dict):
            raise NodeError(
                f"keep_source: `source` is {_kind(source)}, not an object",
                hint="turn keep_source off, or point `source` at an object",
                retryable=False,
            )
        output: dict[str, Any] = dict(source) if config.keep_source else {}
        for key, expression in config.mapping.items():
            compiled = self._paths.get(key)
            output[key] = ctx.render(expression) if compiled is None else self._query(key, *compiled, source)
        return output

    @staticmethod
    def _query(key: str, path: JSONPath, definite: bool, source: Any) -> Any:
        try:
            values = [match.value for match in path.find(source)]
        except Exception as exc:  # jsonpath_ng filters raise plain TypeErrors etc. on odd data
            raise NodeError(
                f"mapping[{key!r}]: JSONPath failed on this data: {type(exc).__name__}: {exc}",
                retryable=False,
            ) from exc
        if not definite:
            return values
        return values[0] if values else None
