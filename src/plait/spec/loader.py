"""Read flow documents from files, strings or dicts (JSON or YAML)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from plait.spec.models import FlowDocument
from plait.spec.problems import FlowValidationError, Problem


def read_document_data(source: str | Path | dict[str, Any]) -> dict[str, Any]:
    """Parse a path, a JSON/YAML string or a dict into plain data; syntax errors become problems."""
    if isinstance(source, dict):
        return source
    text: str
    path = Path(source) if isinstance(source, Path) or _looks_like_path(source) else None
    if path is not None:
        if not path.exists():
            raise FlowValidationError(
                [Problem("file_not_found", f"no such file: {path}", hint="check the path")]
            )
        text = path.read_text(encoding="utf-8")
    else:
        text = str(source)
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise FlowValidationError(
            [
                Problem(
                    "syntax",
                    f"cannot parse the document: {exc}",
                    hint="fix the JSON/YAML syntax at the position shown",
                )
            ]
        ) from exc
    if not isinstance(data, dict):
        raise FlowValidationError(
            [
                Problem(
                    "syntax",
                    "the document must be a JSON/YAML object",
                    hint='start from {"schema": "plait/flow@1", "nodes": [...]}',
                )
            ]
        )
    return data


def _looks_like_path(source: str) -> bool:
    if "\n" in source or len(source) > 4096:
        return False
    return Path(source).suffix.lower() in (".json", ".yaml", ".yml") or Path(source).is_file()


def parse_document(data: dict[str, Any]) -> FlowDocument:
    """Build the pydantic model, turning every shape error into a located Problem."""
    try:
        return FlowDocument.model_validate(data)
    except ValidationError as exc:
        raise FlowValidationError([_problem_from_error(data, err) for err in exc.errors()]) from exc


def _problem_from_error(data: dict[str, Any], err: ErrorDetails) -> Problem:
    loc = list(err.get("loc", ()))
    node_id = None
    if len(loc) >= 2 and loc[0] in ("nodes", "edges") and isinstance(loc[1], int):
        items = data.get(loc[0]) or []
        item = items[loc[1]] if loc[1] < len(items) and isinstance(items[loc[1]], dict) else {}
        node_id = item.get("id") if loc[0] == "nodes" else f"edge #{loc[1]}"
        loc = loc[2:]
    field = ".".join(str(p) for p in loc) or None
    hint = None
    if err.get("type") == "extra_forbidden":
        hint = "remove the field or check its spelling"
    elif err.get("type") == "missing":
        hint = "add the field"
    return Problem(
        "invalid_document", err.get("msg", "invalid value"), node_id=node_id, field=field, hint=hint
    )
