"""The AST security scan of custom-component source (ARCHITECTURE section 8; docs/components.md).

A denylist run before the code is loaded: it refuses the obvious ways out of a component (the
environment, files, dynamic code, interpreter internals, process and serialisation modules). It
is a first filter with clear messages, not the security boundary — the sandbox is.

    scan("import subprocess\n")  # -> [Finding(line=1, message="importing `subprocess` is not ...")]
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

DENIED_NAMES = {
    "open": "`open` is not allowed in components; take the content as an input instead",
    "breakpoint": "`breakpoint` is not allowed in components",
    "exec": "`exec` is not allowed in components",
    "eval": "`eval` is not allowed in components",
    "compile": "`compile` is not allowed in components",
    "__import__": "`__import__` is not allowed in components; use an import statement",
    "globals": "`globals` is not allowed in components",
    "locals": "`locals` is not allowed in components",
    "__builtins__": "`__builtins__` is not allowed in components",
}

ENV_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})
ENV_MESSAGE = "environment access (`{}`) is not allowed in components; pass settings as inputs"

DENIED_DUNDERS = frozenset(
    {
        "__subclasses__",
        "__globals__",
        "__builtins__",
        "__bases__",
        "__base__",
        "__mro__",
        "__code__",
        "__closure__",
        "__func__",
        "__self__",
        "__loader__",
        "__spec__",
        "__import__",
        "__getattribute__",
        # frames, generators and tracebacks lead back to globals
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_back",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "tb_frame",
    }
)

DENIED_MODULES = frozenset(
    {
        "subprocess",
        "ctypes",
        "_ctypes",
        "cffi",
        "pickle",
        "_pickle",
        "cloudpickle",
        "dill",
        "marshal",
        "shelve",
        "importlib",
        "builtins",
        "pty",
        "multiprocessing",
        "_posixsubprocess",
        "posix",
        "nt",
    }
)

# Attributes of the os module that start processes or replace the interpreter.
OS_PROCESS = re.compile(r"^(system|popen|fork|forkpty|exec[lv]p?e?|spawn[lv]p?e?|posix_spawnp?|kill|killpg)$")

RESERVED_OUTPUT = "component_as_tool"
RESERVED_METHOD = "to_toolkit"


@dataclass(frozen=True, slots=True)
class Finding:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def normalize_code(source: str) -> str:
    """Whitespace normalisation: line endings, trailing spaces, runs of whitespace collapsed."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    lines = (line.rstrip() for line in text.split("\n"))
    return re.sub(r"\s+", " ", "\n".join(line for line in lines if line)).strip()


def same_code(source: str, template: str) -> bool:
    """True when `source` differs from `template` in whitespace only.

    Besides the normalised text, the ASTs must match: collapsing whitespace also erases
    indentation, which can change what Python code means."""
    if normalize_code(source) != normalize_code(template):
        return False
    try:
        return ast.dump(ast.parse(source)) == ast.dump(ast.parse(template))
    except SyntaxError:
        return False


def _root_module(name: str) -> str:
    return name.split(".", 1)[0]


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.os_aliases: set[str] = {"os"}

    def deny(self, node: ast.AST, message: str) -> None:
        self.findings.append(Finding(getattr(node, "lineno", 0) or 0, message))

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = _root_module(alias.name)
            if root in DENIED_MODULES:
                self.deny(node, f"importing `{alias.name}` is not allowed in components")
            elif alias.name == "os" or root == "os":
                self.os_aliases.add(alias.asname or "os")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        root = _root_module(module)
        if node.level == 0 and root in DENIED_MODULES:
            self.deny(node, f"importing `{module}` is not allowed in components")
        elif node.level == 0 and root in ("os", "posix", "nt"):
            for alias in node.names:
                if alias.name == "*":
                    self.deny(node, f"`from {module} import *` is not allowed in components")
                elif alias.name in ENV_NAMES:
                    self.deny(node, ENV_MESSAGE.format(f"{module}.{alias.name}"))
                elif OS_PROCESS.match(alias.name):
                    self.deny(node, f"`{module}.{alias.name}` is not allowed in components")
        for alias in node.names:
            if alias.name in DENIED_NAMES and node.level == 0:
                self.deny(node, DENIED_NAMES[alias.name])
        self.generic_visit(node)

    # names and attributes
    def visit_Name(self, node: ast.Name) -> None:
        if node.id in DENIED_NAMES:
            self.deny(node, DENIED_NAMES[node.id])
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr in ENV_NAMES:
            self.deny(node, ENV_MESSAGE.format(f"{_dotted(node.value)}.{attr}"))
        elif attr in DENIED_DUNDERS:
            self.deny(node, f"`{attr}` is not allowed in components")
        elif isinstance(node.value, ast.Name) and node.value.id in self.os_aliases and OS_PROCESS.match(attr):
            self.deny(node, f"`{node.value.id}.{attr}` is not allowed in components")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # getattr(obj, "__globals__") and friends
        value = node.value
        if isinstance(value, str) and (value in DENIED_DUNDERS or value == "__builtins__"):
            self.deny(node, f"`{value}` is not allowed in components")
        elif isinstance(value, str) and value in ENV_NAMES:  # getattr(os, "environ")
            self.deny(node, ENV_MESSAGE.format(value))

    # reserved names (the synthetic tool-mode sentinels)
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == RESERVED_METHOD:
                self.deny(item, reserved_method_message(node.name))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = (
            func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        )
        if called == "Output":
            name = node.args[0] if node.args else None
            for kw in node.keywords:
                if kw.arg == "name":
                    name = kw.value
                if (
                    kw.arg == "method"
                    and isinstance(kw.value, ast.Constant)
                    and kw.value.value == RESERVED_METHOD
                ):
                    self.deny(node, reserved_method_message(""))
            if isinstance(name, ast.Constant) and name.value == RESERVED_OUTPUT:
                self.deny(node, reserved_output_message())
        self.generic_visit(node)


def reserved_output_message() -> str:
    return (
        f"the output name `{RESERVED_OUTPUT}` is reserved (plait creates it when a component is used "
        "as a tool); name the output after the value it holds, e.g. `summary`"
    )


def reserved_method_message(class_name: str) -> str:
    where = f" on {class_name}" if class_name else ""
    return (
        f"the method name `{RESERVED_METHOD}`{where} is reserved (plait creates it when a component is used "
        "as a tool); use an action name such as `fetch_page`"
    )


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "..."


def scan(source: str) -> list[Finding]:
    """Every denied construct in `source`, in line order; a syntax error is one finding."""
    try:
        tree = ast.parse(source, "<component>")
    except SyntaxError as exc:
        return [Finding(exc.lineno or 0, f"SyntaxError: {exc.msg}")]
    except ValueError as exc:  # null bytes
        return [Finding(0, f"the source cannot be parsed: {exc}")]
    scanner = _Scanner()
    scanner.visit(tree)
    seen: set[tuple[int, str]] = set()
    out = []
    for f in sorted(scanner.findings, key=lambda f: f.line):
        if (f.line, f.message) not in seen:
            seen.add((f.line, f.message))
            out.append(f)
    return out


def reserved_names(source: str) -> list[Finding]:
    """Only the reserved-name findings (also checked for built-ins, which skip the full scan)."""
    return [f for f in scan(source) if "is reserved" in f.message]


__all__ = ["Finding", "normalize_code", "reserved_names", "same_code", "scan"]
