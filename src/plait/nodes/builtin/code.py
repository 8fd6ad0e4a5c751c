"""The `code` node: a Python function run in the sandbox (RAGFlow CodeExec semantics).

The source defines ``def main(**inputs)``; `arguments` (templates/references, rendered per run)
become its keyword arguments; the return value becomes the output:

* a dict is the outputs dict, checked against the declared `outputs` (name -> type);
* anything else is given as ``{"result": value}`` (or under the only declared output's name).

Failures of the user's code are non-retryable `NodeError`s whose message carries the user's
traceback only (frames of the user source, shown as ``<code>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from plait.nodes.base import Node, NodeContext, NodeError
from plait.nodes.builtin._sandboxed import (
    MemoryMB,
    NetworkAccess,
    TimeoutSeconds,
    check_identifiers,
    sandbox_node_error,
)
from plait.sandbox import Limits, SandboxPool, default_pool

OutputType = Literal["string", "number", "integer", "boolean", "object", "array", "any"]

_HINTS = {
    "timeout": "make the code faster or raise timeout_s",
    "cpu": "make the code faster or raise timeout_s",
    "memory": "use less memory or raise memory_mb",
    "serialization": "return JSON values only: dict, list, str, int, float, bool or None",
    "arguments": "arguments must render to JSON values",
    "exit": "return a value from main() instead of calling sys.exit()",
    "too_large": "return a smaller value",
}


class CodeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str = Field(
        ...,
        min_length=1,
        description="Python source defining `def main(**inputs)`; its return value is the output.",
        json_schema_extra={"format": "python"},
    )
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="Keyword arguments of main(); values are templates/references, e.g. '{{start.text}}'.",
    )
    outputs: dict[str, OutputType] = Field(
        default_factory=dict,
        description="Declared outputs (name -> type), checked after the call. A non-dict return value "
        "is given as {'result': value}, or under the only declared name.",
    )
    timeout_s: TimeoutSeconds = 10.0
    memory_mb: MemoryMB = 256
    network: NetworkAccess = False

    @field_validator("arguments")
    @classmethod
    def _identifiers(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_identifiers(value, "argument")
        return value


class CodeNode(Node[CodeConfig]):
    type_name = "code"
    title = "Code"
    description = "Runs a Python function main(**arguments) in a sandboxed process; outputs its return value."
    category = "logic"
    Config = CodeConfig
    # Tests and embedders may point a node type at their own pool; None means the default pool.
    pool: ClassVar[SandboxPool | None] = None

    @classmethod
    def reference_texts(cls, config: CodeConfig) -> list[tuple[str, Any]]:
        # Only the arguments hold templates; `{{` in the Python source is just Python.
        return [("arguments", config.arguments)]

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        kwargs = {name: await ctx.arender(value) for name, value in cfg.arguments.items()}
        pool = type(self).pool or default_pool()
        result = await pool.run_code(
            cfg.code,
            "main",
            kwargs,
            limits=Limits(timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb),
            network=cfg.network,
        )
        if not result.ok:
            raise sandbox_node_error(
                result.error or "the code failed",
                error_kind=result.error_kind,
                traceback_lines=result.traceback_lines,
                stderr=result.stderr,
                hints=_HINTS,
            )
        return shape_outputs(result.value, cfg.outputs)


def _type_ok(value: Any, expected: str) -> bool:
    if expected == "any":
        return True
    if expected == "string":
        return isinstance(value, str)
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "object":
        return isinstance(value, dict)
    if expected == "array":
        return isinstance(value, list)
    return False


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def shape_outputs(returned: Any, declared: Mapping[str, str]) -> dict[str, Any]:
    """The node output for main()'s return value, checked against the declared outputs."""
    if isinstance(returned, dict):
        value: dict[str, Any] = returned
    else:
        value = {next(iter(declared)) if len(declared) == 1 else "result": returned}
    if not declared:
        return value
    missing = [name for name in declared if name not in value]
    if missing:
        raise NodeError(
            f"main() did not return the declared output(s) {', '.join(map(repr, missing))}; "
            f"it returned the keys {sorted(map(str, value)) or '(none)'}",
            hint="return a dict with every declared output, or change `outputs`",
            retryable=False,
        )
    wrong = [
        f"{name!r} should be {expected} but is {_json_type(value[name])}"
        for name, expected in declared.items()
        if not _type_ok(value[name], expected)
    ]
    if wrong:
        raise NodeError(
            "main() returned outputs of the wrong type: " + "; ".join(wrong),
            hint="fix the code or the declared output types",
            retryable=False,
        )
    return value
