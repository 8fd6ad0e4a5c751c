"""Pure data nodes: `data_ops`, `list_ops`, `text` and `transform` (RAGFlow DataOperations,
ListOperations, StringTransform; n8n's Set)."""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Literal

from jsonpath_ng.exceptions import JsonPathParserError
from jsonpath_ng.ext import parse as parse_jsonpath
from pydantic import BaseModel, ConfigDict, Field, field_validator

from plait.expr import get_path
from plait.nodes.base import Node, NodeContext, NodeError
from plait.nodes.builtin._conditions import Operator, compare
from plait.nodes.registry import register

_SOURCE_DOC = "Template/reference for the data; default: the value on the input port."


class ItemCondition(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str | None = Field(None, description="Dot path inside each item (empty: the item itself).")
    op: Operator = "=="
    value: Any = None


def _item_matches(ctx: NodeContext, item: Any, conditions: list[ItemCondition], logic: str) -> bool:
    results = (
        compare(
            get_path(item, c.key.split(".")) if c.key else item,
            c.op,
            ctx.render(c.value),
            ref=c.key or "item",
        )
        for c in conditions
    )
    return all(results) if logic == "and" else any(results)


def _source(ctx: NodeContext, source: Any) -> Any:
    return ctx.input if source is None else ctx.render(source)


def _parse_literal(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise NodeError(f"cannot parse {text[:80]!r} as a JSON or Python literal", retryable=False) from None


class DataOpsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operation: Literal[
        "select_keys", "literal_eval", "combine", "filter", "append_or_update", "remove", "rename"
    ]
    source: Any = Field(None, description=_SOURCE_DOC)
    keys: list[str] = Field(default_factory=list, description="select_keys / remove: the keys.")
    sources: list[Any] = Field(default_factory=list, description="combine: the objects to merge, in order.")
    conditions: list[ItemCondition] = Field(default_factory=list, description="filter: item conditions.")
    logic: Literal["and", "or"] = "and"
    updates: dict[str, Any] = Field(default_factory=dict, description="append_or_update: keys to set.")
    renames: dict[str, str] = Field(default_factory=dict, description="rename: old key -> new key.")


@register
class DataOpsNode(Node):
    type_name = "data_ops"
    title = "Data operations"
    description = "select_keys, literal_eval, combine, filter, append_or_update, remove, rename on objects."
    category = "data"
    Config = DataOpsConfig
    inline = True

    def execute(self, ctx: NodeContext) -> Any:
        cfg: DataOpsConfig = self.config  # type: ignore[assignment]
        op = cfg.operation
        if op == "combine":
            parts = [ctx.render(s) for s in cfg.sources] or _as_list(_source(ctx, cfg.source))
            out: dict[str, Any] = {}
            for i, part in enumerate(parts):
                if not isinstance(part, dict):
                    raise NodeError(
                        f"combine: source {i} is {type(part).__name__}, not an object", retryable=False
                    )
                out.update(part)
            return out
        data = _source(ctx, cfg.source)
        if op == "literal_eval":
            return [_parse_literal(d) for d in data] if isinstance(data, list) else _parse_literal(data)
        if op == "filter":
            return [d for d in _as_list(data) if _item_matches(ctx, d, cfg.conditions, cfg.logic)]
        updates = ctx.render(cfg.updates) if op == "append_or_update" else None

        def one(obj: Any) -> Any:
            if not isinstance(obj, dict):
                raise NodeError(
                    f"{op}: expected an object (or a list of objects), got {type(obj).__name__}",
                    hint="point `source` at an object",
                    retryable=False,
                )
            if op == "select_keys":
                return {k: obj[k] for k in cfg.keys if k in obj}
            if op == "remove":
                return {k: v for k, v in obj.items() if k not in cfg.keys}
            if op == "rename":
                return {cfg.renames.get(k, k): v for k, v in obj.items()}
            return {**obj, **updates}

        return [one(d) for d in data] if isinstance(data, list) else one(data)


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    raise NodeError(
        f"expected a list, got {type(value).__name__}", hint="point `source` at a list", retryable=False
    )


class ListOpsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operation: Literal["nth", "head", "tail", "filter", "sort", "drop_duplicates"]
    source: Any = Field(None, description=_SOURCE_DOC)
    n: int = Field(1, description="nth: index (negative from the end); head/tail: how many.")
    key: str | None = Field(None, description="sort/drop_duplicates: dot path inside each item.")
    reverse: bool = False
    conditions: list[ItemCondition] = Field(default_factory=list)
    logic: Literal["and", "or"] = "and"


@register
class ListOpsNode(Node):
    type_name = "list_ops"
    title = "List operations"
    description = "nth, head, tail, filter, sort, drop_duplicates on a list."
    category = "data"
    Config = ListOpsConfig
    inline = True

    def execute(self, ctx: NodeContext) -> Any:
        cfg: ListOpsConfig = self.config  # type: ignore[assignment]
        items = _as_list(_source(ctx, cfg.source))
        op = cfg.operation
        if op == "nth":
            if not -len(items) <= cfg.n < len(items):
                raise NodeError(
                    f"nth: index {cfg.n} is out of range for a list of {len(items)}", retryable=False
                )
            return items[cfg.n]
        if op == "head":
            return items[: max(cfg.n, 0)]
        if op == "tail":
            return items[-cfg.n :] if cfg.n > 0 else []
        if op == "filter":
            return [i for i in items if _item_matches(ctx, i, cfg.conditions, cfg.logic)]

        def key_of(item: Any) -> Any:
            return get_path(item, cfg.key.split(".")) if cfg.key else item

        if op == "sort":
            try:
                return sorted(items, key=lambda i: (key_of(i) is None, key_of(i)), reverse=cfg.reverse)
            except TypeError:
                raise NodeError(
                    "sort: items have values of different types",
                    hint="set `key` to a field that has the same type in every item",
                    retryable=False,
                ) from None
        seen: list[Any] = []
        out = []
        for item in items:
            k = key_of(item)
            if k not in seen:
                seen.append(k)
                out.append(item)
        return out


class TextConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    operation: Literal["split", "merge", "template"]
    source: Any = Field(None, description=_SOURCE_DOC)
    delimiters: list[str] = Field(default_factory=lambda: [","], description="split: any of these separates.")
    keep_empty: bool = False
    separator: str = Field("", description="merge: placed between items.")
    template: str = Field("", description="template: text with references / Jinja.")


@register
class TextNode(Node):
    type_name = "text"
    title = "Text"
    description = "split text by delimiters, merge a list into text, or render a template."
    category = "data"
    Config = TextConfig
    inline = True

    def execute(self, ctx: NodeContext) -> Any:
        cfg: TextConfig = self.config  # type: ignore[assignment]
        if cfg.operation == "template":
            rendered = ctx.render(cfg.template)
            return rendered if isinstance(rendered, str) else json.dumps(rendered, ensure_ascii=False)
        data = _source(ctx, cfg.source)
        if cfg.operation == "split":
            if not isinstance(data, str):
                raise NodeError(f"split: expected text, got {type(data).__name__}", retryable=False)
            pattern = "|".join(re.escape(d) for d in cfg.delimiters if d) or r"\s+"
            parts = [p.strip() for p in re.split(pattern, data)]
            return parts if cfg.keep_empty else [p for p in parts if p]
        return cfg.separator.join(
            x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in _as_list(data)
        )


class TransformConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mapping: dict[str, Any] = Field(
        ..., description="Output key -> template, or a JSONPath starting with '$'."
    )
    source: Any = Field(None, description="Data JSONPath expressions read; default: the input value.")
    keep_source: bool = Field(False, description="Start from the source object and add the mapped keys.")

    @field_validator("mapping")
    @classmethod
    def _valid_jsonpath(cls, mapping: dict[str, Any]) -> dict[str, Any]:
        for key, expr in mapping.items():
            if isinstance(expr, str) and expr.startswith("$"):
                try:
                    parse_jsonpath(expr)
                except (JsonPathParserError, Exception) as exc:
                    raise ValueError(f"mapping[{key!r}]: invalid JSONPath {expr!r}: {exc}") from None
        return mapping


@register
class TransformNode(Node):
    type_name = "transform"
    title = "Transform"
    description = "Builds an object from templates and JSONPath expressions."
    category = "data"
    Config = TransformConfig
    inline = True

    def __init__(self, node_id: str, config: BaseModel) -> None:
        super().__init__(node_id, config)
        self._paths = {
            k: parse_jsonpath(v)
            for k, v in config.mapping.items()  # type: ignore[attr-defined]
            if isinstance(v, str) and v.startswith("$")
        }

    def execute(self, ctx: NodeContext) -> dict[str, Any]:
        cfg: TransformConfig = self.config  # type: ignore[assignment]
        source = _source(ctx, cfg.source)
        if isinstance(source, str) and source.strip().startswith(("{", "[")):
            source = _parse_literal(source)
        out: dict[str, Any] = dict(source) if cfg.keep_source and isinstance(source, dict) else {}
        for key, expr in cfg.mapping.items():
            path = self._paths.get(key)
            if path is None:
                out[key] = ctx.render(expr)
                continue
            matches = [m.value for m in path.find(source)]
            out[key] = (
                None
                if not matches
                else matches[0]
                if len(matches) == 1 and "*" not in expr and ".." not in expr and "?" not in expr
                else matches
            )
        return out
