"""The flow document (`plait/flow@1`): its pydantic models, the model settings nodes share, loading
from JSON/YAML, and the problems validation reports.

This is the lowest layer above `plait.errors`: it imports no other part of plait but `expr` (for
validation). Re-exported here are the light modules (pydantic and PyYAML only); validation, which
also needs jsonschema and the template engine, is `plait.spec.validate.validate_document`.
"""

from plait.spec.loader import parse_document, read_document_data
from plait.spec.model_settings import (
    PRESETS,
    PROVIDER_NAMES,
    ModelSettings,
    Preset,
    ScriptError,
    check_script,
)
from plait.spec.models import (
    ERROR_PORT,
    RESERVED_IDS,
    SCHEMA_ID,
    DeciderSettings,
    EdgeSpec,
    FlowDocument,
    GraphSpec,
    NodeSpec,
    OnError,
    Position,
    RetryPolicy,
    Settings,
)
from plait.spec.problems import FlowValidationError, Problem

__all__ = [
    "ERROR_PORT",
    "PRESETS",
    "PROVIDER_NAMES",
    "RESERVED_IDS",
    "SCHEMA_ID",
    "DeciderSettings",
    "EdgeSpec",
    "FlowDocument",
    "FlowValidationError",
    "GraphSpec",
    "ModelSettings",
    "NodeSpec",
    "OnError",
    "Position",
    "Preset",
    "Problem",
    "RetryPolicy",
    "ScriptError",
    "Settings",
    "check_script",
    "parse_document",
    "read_document_data",
]
