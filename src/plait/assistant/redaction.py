"""Secrets never reach the model: how the toolkit masks config values it shows (spec B48, M-S10).

A value is shown as `REDACTED` when its field is secret, by the node type's schema (`writeOnly`,
`format: password`, or `secret: true` in the field's JSON Schema) or by its name (`api_key`,
`token`, `password`, ...); when it references a stored variable (`{{env.NAME}}`, the way plait
flows read keys); or when it looks like a credential whatever its field is called (`sk-...`,
`Bearer ...`). Nested objects are masked the same way, key by key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "***REDACTED***"

_SECRET_NAME = re.compile(
    r"api[_-]?key|(?:^|[_-])key$|(?:^|[_-])token$|secret|passw|authorization|credential|cookie|private[_-]?key",
    re.IGNORECASE,
)
_ENV_REF = re.compile(r"\{\{-?\s*env\s*\.|\{\s*env@", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{12,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
    r"|Bearer\s+[A-Za-z0-9._~+/=-]{12,})"
)


def is_secret_name(name: object) -> bool:
    return isinstance(name, str) and _SECRET_NAME.search(name) is not None


def is_secret_schema(prop: object) -> bool:
    """A field the node type's config schema marks as secret."""
    if not isinstance(prop, Mapping):
        return False
    return bool(prop.get("writeOnly") or prop.get("secret") or prop.get("format") == "password")


def secret_value(value: object) -> bool:
    """A string that names a stored variable or looks like a credential."""
    return isinstance(value, str) and (
        _ENV_REF.search(value) is not None or _SECRET_VALUE.search(value) is not None
    )


def mask(value: Any, depth: int = 0) -> Any:
    """A copy of `value` with secret-named keys and secret-looking strings masked."""
    if isinstance(value, str):
        return REDACTED if secret_value(value) else value
    if depth > 20:
        return REDACTED
    if isinstance(value, Mapping):
        return {k: REDACTED if is_secret_name(k) else mask(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask(v, depth + 1) for v in value]
    return value


def mask_field(name: str, value: Any, schema_prop: object = None) -> Any:
    """The value of config field `name` as the model may see it."""
    if value is None:
        return None
    if is_secret_name(name) or is_secret_schema(schema_prop):
        return REDACTED
    return mask(value)


__all__ = ["REDACTED", "is_secret_name", "is_secret_schema", "mask", "mask_field", "secret_value"]
