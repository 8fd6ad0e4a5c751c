"""Flows as the engine runs them: parse, validate and compile a document once (`load_flow`), check
run inputs against it (`validate_inputs`).

`load_flow` always compiles: it keeps no cache, because only the owner of the flows knows when a
document changes (a published version never does; a draft does on every edit). Owners cache the
compiled `Flow`: the service by (flow, version, hash), a program by holding on to it. `PlanCache`
and `content_hash` are what such a cache needs; the owner creates and keeps the instance.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from plait.engine.errors import RunInputError
from plait.engine.plan import Plan, compile_flow
from plait.nodes.registry import NodeRegistry, default_registry
from plait.spec.loader import parse_document, read_document_data
from plait.spec.models import FlowDocument
from plait.spec.problems import Problem


@dataclass(slots=True, eq=False)
class Flow:
    """A validated, compiled flow: load it once, run it many times."""

    doc: FlowDocument
    plan: Plan
    base_dir: Path | None = None
    registry: NodeRegistry | None = None
    # The run-input schema compiled once (None: no schema), its defaults, and the fast check of
    # the common simple schemas (None when the schema needs the full validator).
    input_validator: Draft202012Validator | None = field(default=None, init=False, repr=False)
    input_defaults: tuple[tuple[str, Any], ...] = field(default=(), init=False, repr=False)
    inputs_surely_valid: Callable[[dict[str, Any]], bool] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        schema = self.doc.inputs
        if schema:
            self.input_validator = Draft202012Validator(schema)
            self.input_defaults = tuple(
                (name, prop["default"])
                for name, prop in (schema.get("properties") or {}).items()
                if isinstance(prop, dict) and "default" in prop
            )
            self.inputs_surely_valid = simple_object_check(schema)

    @property
    def id(self) -> str:
        return self.doc.id


FlowLike = Flow | FlowDocument | dict[str, Any] | str | Path


def load_flow(source: FlowLike, *, registry: NodeRegistry | None = None) -> Flow:
    """Parse, validate and compile a flow. Raises FlowValidationError listing every problem.

    A `Flow` is returned as it is. Nothing is cached (see the module docstring).
    """
    if isinstance(source, Flow):
        return source
    reg = registry or default_registry()
    base_dir = None
    if isinstance(source, FlowDocument):
        doc = source
    else:
        if isinstance(source, (str, Path)):
            candidate = Path(source)
            if "\n" not in str(source) and candidate.suffix in (".json", ".yaml", ".yml"):
                base_dir = candidate.resolve().parent
        doc = parse_document(read_document_data(source))
    return Flow(doc, compile_flow(doc, reg), base_dir, reg)


def content_hash(document: Mapping[str, Any]) -> str:
    """A stable hash of a flow document's content (key order does not matter)."""
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()


class PlanCache:
    """Compiled flows by a key the owner chooses (least recently used dropped past `size`).

    `load(document)` compiles a document dict once per content (`content_hash`), or once per
    `key` when given (e.g. (flow id, version, hash)). One cache compiles with one node registry.
    """

    def __init__(self, size: int = 256, *, registry: NodeRegistry | None = None) -> None:
        self.size = size
        self.registry = registry
        self._flows: OrderedDict[Hashable, Flow] = OrderedDict()

    def get(self, key: Hashable) -> Flow | None:
        flow = self._flows.get(key)
        if flow is not None:
            self._flows.move_to_end(key)
        return flow

    def put(self, key: Hashable, flow: Flow) -> Flow:
        self._flows[key] = flow
        self._flows.move_to_end(key)
        while len(self._flows) > self.size:
            self._flows.popitem(last=False)
        return flow

    def load(self, document: dict[str, Any], *, key: Hashable | None = None) -> Flow:
        """The compiled flow of `document` (compiled now if not cached); raises FlowValidationError."""
        key = content_hash(document) if key is None else key
        flow = self.get(key)
        if flow is None:
            flow = self.put(key, load_flow(document, registry=self.registry))
        return flow

    def clear(self) -> None:
        self._flows.clear()

    def __len__(self) -> int:
        return len(self._flows)


# Keywords that never make an instance invalid (annotations; `format` is not asserted by default).
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
    }
)
# JSON Schema types and the exact Python types that surely satisfy them (others: ask the validator).
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}


def _is_simple_property(schema: Any) -> bool:
    """Whether a property schema is at most a `type` (names from _EXACT_TYPES) and annotations."""
    if not isinstance(schema, dict) or not schema.keys() <= _ANNOTATIONS | {"type"}:
        return False
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) or declared is None else declared
    return isinstance(names, list) and all(n is None or n in _EXACT_TYPES for n in names)


def _exact_types(schema: dict[str, Any]) -> tuple[type, ...] | None:
    """The exact types a simple property schema surely accepts; None: any value."""
    declared = schema.get("type")
    if declared is None:
        return None
    names = [declared] if isinstance(declared, str) else declared
    return tuple(t for n in names for t in _EXACT_TYPES[n])


def simple_object_check(schema: Mapping[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """A fast, conservative check for the common input schema (an object of typed properties,
    `required`, `additionalProperties: false`): it answers True only when the full validator would
    find no error, False when unsure. None when the schema uses anything else."""
    allowed = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}
    if not schema.keys() <= allowed or schema.get("type", "object") != "object":
        return None
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    additional = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(additional, bool):
        return None
    if not all(_is_simple_property(prop) for prop in properties.values()):
        return None
    types = {name: _exact_types(prop) for name, prop in properties.items()}

    def surely_valid(data: dict[str, Any]) -> bool:
        for name in required:
            if name not in data:
                return False
        for name, value in data.items():
            if name not in types:
                if not additional:
                    return False
                continue
            accepted = types[name]
            if accepted is not None and type(value) not in accepted:
                return False
        return True

    return surely_valid


def validate_inputs(flow: Flow, inputs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check inputs against the flow's input schema (defaults applied); raises RunInputError."""
    data = dict(inputs or {})
    validator = flow.input_validator
    if validator is None:
        return data
    for name, default in flow.input_defaults:
        if name not in data:
            data[name] = copy.deepcopy(default)
    surely_valid = flow.inputs_surely_valid
    if surely_valid is not None and surely_valid(data):
        return data
    errors = list(validator.iter_errors(data))
    if not errors:
        return data
    problems = []
    for err in sorted(errors, key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path) or None
        if err.validator == "required":
            missing = err.message.split("'")[1] if "'" in err.message else None
            where = missing or where
        problems.append(
            Problem(
                "invalid_input",
                err.message,
                None,
                f"inputs.{where}" if where else "inputs",
                "pass it with --input name=value" if err.validator == "required" else None,
            )
        )
    raise RunInputError(problems)


__all__ = ["Flow", "FlowLike", "PlanCache", "content_hash", "load_flow", "validate_inputs"]
