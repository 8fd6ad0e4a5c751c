"""Custom components in the sandbox: validation (scan + load and introspect) and runs.

    result = await validate_component(source)          # ComponentValidation
    result.valid, result.class_name, result.inputs, result.outputs, result.error

    run = await run_component(source, "WordCount", {"text": "a b"})
    run.ok, run.outputs                                 # True, {"words": 2}

The sandboxed process cannot rely on importing the `plait` package, so every call ships the SDK
source (`plait/sdk/_core.py`) with a small trusted harness (HARNESS below) that installs it as
`plait.sdk`, loads the component source (compiled as `<code>`, so line numbers are the user's),
and describes or runs the class. See docs/components.md.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from plait.sandbox.pool import SandboxPool, default_pool
from plait.sandbox.scan import (
    RESERVED_METHOD,
    RESERVED_OUTPUT,
    reserved_method_message,
    reserved_names,
    reserved_output_message,
    same_code,
    scan,
)
from plait.sandbox.types import Limits, SandboxResult
from plait.sdk import Component
from plait.sdk.templates import BUILTIN_TEMPLATES

CLASS_NAME_RE = re.compile(r"^[A-Z][A-Za-z0-9_]*$")
MAX_CLASS_NAME = 64
MAX_SOURCE_BYTES = 1 << 20  # 1 MiB
VALIDATION_LIMITS = Limits(timeout_s=15.0, memory_mb=512)


@cache
def sdk_source() -> str:
    """The SDK module source shipped into every component call (the file that defines `Component`)."""
    return Path(inspect.getfile(Component)).read_text(encoding="utf-8")


def builtin_templates() -> dict[str, str]:
    return BUILTIN_TEMPLATES


def builtin_template_for(source: str, class_name: str | None = None) -> str | None:
    """The class name of the built-in template `source` equals (whitespace-normalised), if any."""
    templates = builtin_templates()
    names = [class_name] if class_name else list(templates)
    for name in names:
        template = templates.get(name)
        if template is not None and same_code(source, template):
            return name
    return None


def check_class_name(name: Any) -> str | None:
    """The problem with a component class name, or None."""
    if not isinstance(name, str) or not name:
        return "the class name must be a non-empty string"
    if len(name) > MAX_CLASS_NAME:
        return f"the class name is {len(name)} characters long; the limit is {MAX_CLASS_NAME}"
    if not CLASS_NAME_RE.match(name):
        return (
            f"invalid class name {name!r}: it must start with an upper-case letter and hold only "
            "letters, digits and '_' (pattern ^[A-Z][A-Za-z0-9_]*$)"
        )
    return None


@dataclass(slots=True)
class ComponentValidation:
    """The result of validating component source; `error` is one clean line."""

    valid: bool
    class_name: str | None = None
    display_name: str = ""
    description: str = ""
    inputs: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    problems: list[str] = field(default_factory=list)  # every scan finding, "line N: ..."
    builtin: bool = False  # identical to a built-in template: the scan was skipped
    stage: str | None = None  # where it failed: limits, scan, sandbox

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def spec(self) -> dict[str, Any]:
        """What the registry stores about the component besides its source."""
        return {
            "class_name": self.class_name,
            "display_name": self.display_name,
            "description": self.description,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "builtin": self.builtin,
        }


def static_check(source: Any, class_name: str | None = None) -> ComponentValidation | None:
    """Size, class name and the AST scan (skipped for built-in templates); None when it passes."""

    def bad(error: str, stage: str, problems: list[str] | None = None) -> ComponentValidation:
        return ComponentValidation(
            False, class_name=class_name, error=error, stage=stage, problems=problems or []
        )

    if not isinstance(source, str) or not source.strip():
        return bad("the component source is empty", "limits")
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        return bad(f"the source is {size} bytes; the limit is {MAX_SOURCE_BYTES} bytes (1 MiB)", "limits")
    if class_name is not None and (problem := check_class_name(class_name)):
        return bad(problem, "limits")
    exempt = builtin_template_for(source, class_name) is not None
    findings = reserved_names(source) if exempt else scan(source)
    if findings:
        problems = [str(f) for f in findings]
        more = (
            f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
            if len(problems) > 1
            else ""
        )
        return bad(problems[0] + more, "scan", problems)
    return None


def _request(op: str, source: str, class_name: str | None, inputs: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "op": op,
        "source": source,
        "sdk": sdk_source(),
        "class_name": class_name,
        "inputs": inputs,
        "reserved": {
            "output": [RESERVED_OUTPUT, reserved_output_message()],
            "method": [RESERVED_METHOD, reserved_method_message("")],
        },
    }


def _sandbox_error(result: SandboxResult) -> str:
    return (result.error or "the sandbox failed").splitlines()[0]


async def validate_component(
    source: Any,
    class_name: str | None = None,
    *,
    pool: SandboxPool | None = None,
    limits: Limits | None = None,
) -> ComponentValidation:
    """Scan `source`, then load it in the sandbox and introspect the component class.

    `class_name` picks the class; without it the code must define exactly one component."""
    failed = static_check(source, class_name)
    if failed is not None:
        return failed
    builtin = builtin_template_for(source, class_name) is not None
    pool = pool or default_pool()
    result = await pool.run_code(
        HARNESS, "main", _request("describe", source, class_name, None), limits=limits or VALIDATION_LIMITS
    )
    if not result.ok:
        return ComponentValidation(
            False, class_name=class_name, error=_sandbox_error(result), stage="sandbox"
        )
    value = result.value if isinstance(result.value, dict) else {}
    if not value.get("ok"):
        return ComponentValidation(
            False,
            class_name=class_name,
            error=value.get("error") or "the component failed to load",
            stage="sandbox",
        )
    spec = value["spec"]
    problem = check_class_name(spec["class_name"])
    if problem:
        return ComponentValidation(False, class_name=spec["class_name"], error=problem, stage="limits")
    return ComponentValidation(
        True,
        class_name=spec["class_name"],
        display_name=spec["display_name"],
        description=spec["description"],
        inputs=spec["inputs"],
        outputs=spec["outputs"],
        builtin=builtin,
    )


@dataclass(slots=True)
class ComponentRun:
    """The outcome of running a component: `outputs` on success, else a one-line `error`."""

    ok: bool
    outputs: dict[str, Any] | None = None
    error: str | None = None
    error_kind: str | None = None  # a SandboxResult kind, or "component" (refused / raised by the code)
    traceback_lines: list[str] = field(default_factory=list)
    stderr: str = ""
    sandbox: SandboxResult | None = None


async def run_component(
    source: str,
    class_name: str,
    inputs: dict[str, Any] | None = None,
    *,
    pool: SandboxPool | None = None,
    limits: Limits | None = None,
    network: bool = False,
) -> ComponentRun:
    """Run `class_name(...).run(**inputs)` from `source` in the sandbox (inputs checked against its
    declared inputs, defaults filled in; outputs checked against its declared outputs)."""
    failed = static_check(source, class_name)
    if failed is not None:
        return ComponentRun(False, error=failed.error, error_kind="component")
    pool = pool or default_pool()
    result = await pool.run_code(
        HARNESS,
        "main",
        _request("run", source, class_name, dict(inputs or {})),
        limits=limits,
        network=network,
    )
    if not result.ok:
        return ComponentRun(
            False,
            error=_sandbox_error(result),
            error_kind=result.error_kind,
            traceback_lines=result.traceback_lines,
            stderr=result.stderr,
            sandbox=result,
        )
    value = result.value if isinstance(result.value, dict) else {}
    if not value.get("ok"):
        return ComponentRun(
            False,
            error=value.get("error") or "the component failed",
            error_kind="component",
            traceback_lines=list(value.get("traceback") or []),
            stderr=result.stderr,
            sandbox=result,
        )
    return ComponentRun(True, outputs=value["outputs"], stderr=result.stderr, sandbox=result)


# The trusted harness: the sandboxed source of every component call (main(op, source, sdk, ...)).
HARNESS = r"""# The trusted harness run in the sandbox for custom components (plait.sandbox.components).
# Its source is sent as the sandbox "code"; main() installs the shipped SDK as `plait.sdk`, loads
# the user's component source (compiled as <code>), then describes the class or runs it.
# Errors in the user's code are returned as {"ok": False, "error": one line, "traceback": [...]}.
import asyncio
import inspect
import json
import linecache
import sys
import traceback
import types

USER = "<code>"


class _Refused(Exception):
    pass


def _install_sdk(sdk_source):
    plait = types.ModuleType("plait")
    plait.__path__ = []
    sdk = types.ModuleType("plait.sdk")
    sdk.__dict__["__builtins__"] = __builtins__
    plait.sdk = sdk
    sys.modules["plait"] = plait
    sys.modules["plait.sdk"] = sdk
    exec(compile(sdk_source, "<plait.sdk>", "exec"), sdk.__dict__)
    return sdk


def _fail(exc, skip_first=True):
    tb = exc.__traceback__
    if skip_first and tb is not None:
        tb = tb.tb_next
    frames = [f for f in traceback.extract_tb(tb) if f.filename == USER]
    if isinstance(exc, SyntaxError) and exc.filename == USER:
        line = exc.lineno
        text = f"SyntaxError: {exc.msg}"
    else:
        line = frames[-1].lineno if frames else None
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    lines = ["Traceback (most recent call last):"] if frames else []
    for chunk in traceback.format_list(frames):
        lines += chunk.rstrip("\n").split("\n")
    for chunk in traceback.format_exception_only(type(exc), exc):
        lines += chunk.rstrip("\n").split("\n")
    error = f"line {line}: {text}" if line else text
    return {"ok": False, "error": error.splitlines()[0] if error else "error", "traceback": lines}


def _refused(message):
    return {"ok": False, "error": message, "traceback": []}


def _type_ok(value, expected):
    if expected == "any":
        return True
    if expected == "string":
        return isinstance(value, str)
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "object":
        return isinstance(value, dict)
    if expected == "array":
        return isinstance(value, list)
    return False


def _json_type(value):
    if value is None:
        return "null"
    for t in ("boolean", "integer", "number", "string", "array", "object"):
        if _type_ok(value, t):
            return t
    return type(value).__name__


def _pick_class(ns, sdk, class_name):
    base = sdk.Component
    if class_name:
        cls = ns.get(class_name)
        if cls is None:
            raise _Refused(f"the code does not define a class {class_name}")
        if not isinstance(cls, type):
            raise _Refused(f"{class_name} is not a class")
        if not issubclass(cls, base) or cls is base:
            raise _Refused(
                f"class {class_name} must subclass plait.sdk.Component "
                f"(`from plait.sdk import Component`, then `class {class_name}(Component): ...`)"
            )
        return cls
    defined = [v for v in ns.values() if isinstance(v, type) and v.__module__ == "__component__"]
    found = [v for v in defined if issubclass(v, base) and v is not base]
    if not found:
        others = ", ".join(v.__name__ for v in defined)
        hint = f" (found class {others}; subclass Component)" if others else ""
        raise _Refused(
            "the code defines no subclass of plait.sdk.Component" + hint
            + "; use `from plait.sdk import Component` and `class MyComponent(Component): ...`"
        )
    if len(found) > 1:
        names = ", ".join(sorted(v.__name__ for v in found))
        raise _Refused(f"the code defines several components ({names}); give class_name")
    return found[0]


def _describe(cls, sdk, reserved_output, reserved_method):
    name = cls.__name__
    types_ = tuple(sdk.TYPES)

    def ports(attr, kind):
        value = getattr(cls, attr, [])
        if not isinstance(value, (list, tuple)):
            raise _Refused(f"{name}.{attr} must be a list of {kind.__name__}(...)")
        out, seen = [], set()
        for item in value:
            if not isinstance(item, kind):
                raise _Refused(f"{name}.{attr} must hold {kind.__name__}(...) items, not {type(item).__name__}")
            if not isinstance(item.name, str) or not item.name.isidentifier() or item.name.startswith("_"):
                raise _Refused(f"{kind.__name__} name {item.name!r} of {name} must be a Python identifier")
            if item.name in seen:
                raise _Refused(f"{name} declares the {kind.__name__.lower()} {item.name!r} twice")
            if item.type not in types_:
                raise _Refused(
                    f"{kind.__name__} {item.name!r} of {name} has the type {item.type!r}; use one of {', '.join(types_)}"
                )
            seen.add(item.name)
            out.append(item.to_dict())
        return out

    inputs = ports("inputs", sdk.Input)
    outputs = ports("outputs", sdk.Output)
    for o in outputs:
        if o["name"] == reserved_output[0]:
            raise _Refused(reserved_output[1])
    if hasattr(cls, reserved_method[0]):
        raise _Refused(reserved_method[1])
    if not inputs and not outputs:
        raise _Refused(f"{name} must declare inputs or outputs (inputs = [Input(...)], outputs = [Output(...)])")
    if cls.run is sdk.Component.run:
        raise _Refused(f"{name} must define run(self, ...) returning a dict of its outputs")
    try:
        sig = inspect.signature(cls.run)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        params = list(sig.parameters.values())[1:]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            accepted = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            missing = [i["name"] for i in inputs if i["name"] not in accepted]
            if missing:
                raise _Refused(f"{name}.run() does not accept the declared input(s) {', '.join(missing)}")
    for i in inputs:
        try:
            json.dumps(i["default"])
        except (TypeError, ValueError):
            raise _Refused(f"the default of input {i['name']!r} of {name} is not a JSON value") from None
    display = getattr(cls, "display_name", "") or ""
    description = getattr(cls, "description", "") or ""
    if not isinstance(display, str) or not isinstance(description, str):
        raise _Refused(f"{name}.display_name and {name}.description must be strings")
    return {
        "class_name": name,
        "display_name": display or name,
        "description": description,
        "inputs": inputs,
        "outputs": outputs,
    }


def _run(cls, spec, given):
    name = spec["class_name"]
    declared = {i["name"]: i for i in spec["inputs"]}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise _Refused(
            f"unknown input(s) {', '.join(map(repr, unknown))}; {name} declares: {', '.join(declared) or '(none)'}"
        )
    kwargs = {}
    for key, item in declared.items():
        if key in given:
            value = given[key]
            if value is None and not item["required"]:
                value = item["default"]
            elif not _type_ok(value, item["type"]):
                raise _Refused(f"input {key!r} of {name} should be {item['type']} but is {_json_type(value)}")
            kwargs[key] = value
        elif item["required"]:
            raise _Refused(f"missing required input {key!r} of {name}")
        else:
            kwargs[key] = item["default"]
    return kwargs


def _shape(spec, value):
    name = spec["class_name"]
    outputs = spec["outputs"]
    if not isinstance(value, dict):
        if len(outputs) == 1:
            value = {outputs[0]["name"]: value}
        else:
            raise _Refused(f"{name}.run() must return a dict of its outputs, not {_json_type(value)}")
    missing = [o["name"] for o in outputs if o["name"] not in value]
    if missing:
        raise _Refused(
            f"{name}.run() did not return the declared output(s) {', '.join(map(repr, missing))}; "
            f"it returned the keys {sorted(map(str, value)) or '(none)'}"
        )
    wrong = [
        f"{o['name']!r} should be {o['type']} but is {_json_type(value[o['name']])}"
        for o in outputs
        if not _type_ok(value[o["name"]], o["type"])
    ]
    if wrong:
        raise _Refused(f"{name}.run() returned outputs of the wrong type: " + "; ".join(wrong))
    return value


def main(op, source, sdk, class_name=None, inputs=None, reserved=None):
    reserved = reserved or {}
    sdk_module = _install_sdk(sdk)
    linecache.cache[USER] = (len(source), None, source.splitlines(True), USER)
    ns = {"__name__": "__component__", "__builtins__": __builtins__}
    sys.modules["__component__"] = types.ModuleType("__component__")
    sys.modules["__component__"].__dict__.update(ns)
    ns = sys.modules["__component__"].__dict__
    try:
        code = compile(source, USER, "exec")
        exec(code, ns)
    except MemoryError:
        raise
    except SyntaxError as exc:
        return _fail(exc, skip_first=False)
    except Exception as exc:
        return _fail(exc)
    try:
        cls = _pick_class(ns, sdk_module, class_name)
        spec = _describe(cls, sdk_module, tuple(reserved["output"]), tuple(reserved["method"]))
        if op == "describe":
            return {"ok": True, "spec": spec}
        kwargs = _run(cls, spec, inputs or {})
    except _Refused as exc:
        return _refused(str(exc))
    try:
        instance = cls()
        value = instance.run(**kwargs)
        if inspect.isawaitable(value):
            value = asyncio.run(value)
    except MemoryError:
        raise
    except Exception as exc:
        return _fail(exc)
    try:
        return {"ok": True, "outputs": _shape(spec, value)}
    except _Refused as exc:
        return _refused(str(exc))
"""


__all__ = [
    "CLASS_NAME_RE",
    "MAX_CLASS_NAME",
    "MAX_SOURCE_BYTES",
    "ComponentRun",
    "ComponentValidation",
    "builtin_template_for",
    "check_class_name",
    "run_component",
    "sdk_source",
    "static_check",
    "validate_component",
]
