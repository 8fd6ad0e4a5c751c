"""The JSON Schema of the run events' wire form, derived from the event dataclasses.

The wire form of an event (`Event.to_dict()`, what SSE `data:`, the `/ws` flow channel and
`RunResult.events` callers see) is the envelope (`seq`, `type`, `run_id`, `ts`, `node_id`) with the
payload's fields beside it, flat. This module turns the dataclasses of `plait.engine.events` into a
JSON Schema (draft 2020-12) of that form: one `$defs` entry per event type, and a `oneOf` over them
told apart by the `type` constant. It reads the dataclass fields and their type hints, so a field
added to a payload shows up here (and, through `plait schema --events`, in the web UI's generated
types, `web/src/generated/events.ts`) without anyone writing it twice.

The wire rules it encodes, the same ones `EventData.wire()` applies: a field is written under its
wire name; a field is left out when it is None unless the event type always sends it, so a field is
required when its type cannot be None or when it is always sent, and a field that is left out when
None never carries null on the wire. `NodeFinished` writes its own wire form (output only when ok,
error only when not), which the descriptions below say.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, fields
from typing import Any

from pydantic import TypeAdapter

from plait.engine.events import EVENT_TYPES, Event, EventData, NodeFinished

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
UNION_TITLE = "RunEvent"

# NodeFinished writes its own wire form, which the generic rules cannot see.
_FIELD_NOTES: dict[tuple[type[EventData], str], str] = {
    (NodeFinished, "output"): "The node's output; present only when `ok` is true.",
    (NodeFinished, "error"): "Why the attempt failed; present only when `ok` is false.",
}


def events_json_schema() -> dict[str, Any]:
    """The JSON Schema of every event's wire form: a `oneOf` on `type`, one `$defs` entry per type."""
    defs: dict[str, Any] = {}
    variants: list[dict[str, Any]] = []
    for type_name, cls in EVENT_TYPES.items():
        defs[cls.__name__] = _event_schema(type_name, cls, defs)
        variants.append({"$ref": f"#/$defs/{cls.__name__}"})
    return {
        "$schema": SCHEMA_DIALECT,
        "title": UNION_TITLE,
        "description": "One run event as the SSE stream, the /ws flow channel and Event.to_dict() "
        "give it: the envelope, then the payload's fields. The envelope: `seq`, the event's number "
        "in its run's log (1, 2, ...; the SSE id); `type`, which tells the payload apart; `run_id`; "
        "`ts`, when it was emitted (Unix time, seconds); `node_id`, the node it is about "
        "(`owner/child` inside loop and map bodies), left out for run-level events.",
        "oneOf": variants,
        "$defs": dict(sorted(defs.items())),
    }


def _event_schema(type_name: str, cls: type[EventData], defs: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    envelope_hints = typing.get_type_hints(Event)
    for f in fields(Event):
        if f.name == "data":
            continue
        if f.name == "type":
            prop: dict[str, Any] = {"const": type_name}
            is_required = True
        else:
            prop, is_required = _field_schema(envelope_hints[f.name], always=False, defs=defs)
        properties[f.name] = prop
        if is_required:
            required.append(f.name)

    hints = typing.get_type_hints(cls)
    for f in fields(cls):  # type: ignore[arg-type]
        key = cls.wire_name(f.name)
        if key in properties:
            raise ValueError(f"{cls.__name__}.{f.name}: wire key {key!r} is an envelope key")
        prop, is_required = _field_schema(hints[f.name], always=cls.always_sent(f.name), defs=defs)
        note = _FIELD_NOTES.get((cls, f.name))
        if note:
            prop = {**prop, "description": note}
        if f.default is not MISSING and f.default is not None and "default" not in prop:
            prop = {**prop, "default": f.default}
        properties[key] = prop
        if is_required:
            required.append(key)

    schema: dict[str, Any] = {"title": cls.__name__, "type": "object"}
    description = _docstring(cls)
    if description:
        schema["description"] = description
    schema.update(properties=properties, required=required, additionalProperties=False)
    return schema


def _field_schema(hint: Any, *, always: bool, defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A field's property schema and whether the wire always carries it.

    A field that can be None is left out of the wire form when it is None, unless it is always
    sent: then it is required and may be null; else it is optional and never null.
    """
    nullable, inner = _split_none(hint)
    if nullable and not always:
        return _type_schema(inner, defs), False
    return _type_schema(hint, defs), True


def _split_none(hint: Any) -> tuple[bool, Any]:
    """(whether `hint` admits None, `hint` without None). `Any` admits None."""
    if hint is Any:
        return True, Any
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) < len(typing.get_args(hint)):
            return True, args[0] if len(args) == 1 else typing.Union[tuple(args)]  # noqa: UP007
    return False, hint


def _type_schema(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    schema = TypeAdapter(hint).json_schema(ref_template="#/$defs/{model}")
    defs.update(schema.pop("$defs", {}))
    return schema


def _docstring(cls: type[EventData]) -> str:
    """The class's own docstring (not the signature `dataclass` writes when there is none)."""
    doc = cls.__doc__ or ""
    if doc.startswith(f"{cls.__name__}("):
        return ""
    return " ".join(doc.split())


__all__ = ["events_json_schema"]
