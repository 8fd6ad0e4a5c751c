"""The AST security scan of component source, the reserved names and the built-in exemption."""

from __future__ import annotations

import pytest

from plait.sandbox.components import builtin_template_for, static_check
from plait.sandbox.scan import normalize_code, same_code, scan
from plait.sdk.templates import BUILTIN_TEMPLATES, FETCH_TEXT, UPPERCASE_TEXT

HEADER = "from plait.sdk import Component, Input, Output\n"

# (id, source, line of the denied construct, a fragment of the message)
DENIED = [
    ("os.environ", "import os\nx = 1\nkey = os.environ['K']\n", 3, "environment access (`os.environ`)"),
    ("os.environ.get", "import os\n\n\nv = os.environ.get('K')\n", 4, "`os.environ`"),
    ("os.getenv", "import os\nv = os.getenv('K')\n", 2, "`os.getenv`"),
    ("os.putenv", "import os\nos.putenv('K', 'v')\n", 2, "`os.putenv`"),
    ("from os import environ", "x = 1\nfrom os import environ\n", 2, "`os.environ`"),
    ("from os import getenv", "from os import getenv\n", 1, "`os.getenv`"),
    ("aliased os", "import os as o\nv = o.environ\n", 2, "`o.environ`"),
    ("getattr environ", "import os\nv = getattr(os, 'environ')\n", 2, "environ"),
    ("open", "x = 1\ny = 2\nf = open('/etc/passwd')\n", 3, "`open` is not allowed in components"),
    ("open as value", "reader = open\n", 1, "`open`"),
    ("breakpoint", "def f():\n    breakpoint()\n", 2, "`breakpoint`"),
    ("exec", "exec('1')\n", 1, "`exec`"),
    ("eval", "a = 1\nb = eval('a')\n", 2, "`eval`"),
    ("compile", "c = compile('1', 'x', 'eval')\n", 1, "`compile`"),
    ("__import__", "m = __import__('os')\n", 1, "`__import__`"),
    ("__builtins__ name", "b = __builtins__\n", 1, "`__builtins__`"),
    ("__subclasses__", "x = ().__class__.__bases__[0].__subclasses__()\n", 1, "`__subclasses__`"),
    ("__globals__", "def f():\n    pass\ng = f.__globals__\n", 3, "`__globals__`"),
    ("__builtins__ attr", "def f():\n    pass\nb = f.__builtins__\n", 3, "`__builtins__`"),
    ("__bases__", "b = int.__bases__\n", 1, "`__bases__`"),
    ("__mro__", "m = int.__mro__\n", 1, "`__mro__`"),
    ("__code__", "def f():\n    pass\nc = f.__code__\n", 3, "`__code__`"),
    ("__closure__", "def f():\n    pass\nc = f.__closure__\n", 3, "`__closure__`"),
    ("getattr dunder", "def f():\n    pass\ng = getattr(f, '__globals__')\n", 3, "`__globals__`"),
    ("frame globals", "import sys\ng = sys._getframe().f_globals\n", 2, "`f_globals`"),
    ("import subprocess", "import json\nimport subprocess\n", 2, "importing `subprocess`"),
    ("from subprocess", "from subprocess import run\n", 1, "importing `subprocess`"),
    ("import ctypes", "import ctypes\n", 1, "importing `ctypes`"),
    ("import pickle", "import pickle\n", 1, "importing `pickle`"),
    ("import marshal", "import marshal\n", 1, "importing `marshal`"),
    ("import shelve", "import shelve\n", 1, "importing `shelve`"),
    ("import importlib", "import importlib\n", 1, "importing `importlib`"),
    ("import importlib.util", "\nimport importlib.util\n", 2, "importing `importlib.util`"),
    ("from importlib import", "from importlib import import_module\n", 1, "importing `importlib`"),
    ("os.system", "import os\nos.system('ls')\n", 2, "`os.system`"),
    ("from os import *", "from os import *\n", 1, "`from os import *`"),
]


@pytest.mark.parametrize(("source", "line", "fragment"), [d[1:] for d in DENIED], ids=[d[0] for d in DENIED])
def test_each_denied_construct_is_caught_with_its_line(source: str, line: int, fragment: str) -> None:
    findings = scan(source)
    assert findings, source
    first = findings[0]
    assert first.line == line
    assert fragment in first.message
    assert str(first).startswith(f"line {line}: ")
    assert "\n" not in str(first)


@pytest.mark.parametrize(
    "source",
    [
        HEADER + "import httpx\nimport requests\nimport urllib.request\nimport json, re, math\n",
        HEADER + "import os\np = os.path.join('a', 'b')\n",
        HEADER + "class A(Component):\n    def run(self, text):\n        return {'n': type(self).__name__}\n",
        HEADER + "import platform\nname = platform.system()\n",
    ],
    ids=["http-libraries", "os.path", "__name__", "platform.system"],
)
def test_ordinary_code_passes(source: str) -> None:
    assert scan(source) == []


def test_syntax_error_is_one_finding_with_its_line() -> None:
    findings = scan("x = 1\ndef f(:\n")
    assert len(findings) == 1 and findings[0].line == 2
    assert findings[0].message.startswith("SyntaxError")


def test_open_message_is_the_documented_one() -> None:
    assert str(scan("x = 1\n\nf = open('x')\n")[0]).startswith("line 3: `open` is not allowed in components")


# ------------------------------------------------------------------------------ reserved names
def test_reserved_output_name_is_rejected() -> None:
    source = HEADER + "class T(Component):\n    outputs = [Output('component_as_tool', 'string')]\n"
    finding = scan(source)[0]
    assert finding.line == 3
    assert "`component_as_tool` is reserved" in finding.message and "name the output" in finding.message


def test_reserved_output_name_as_keyword_is_rejected() -> None:
    source = HEADER + "class T(Component):\n    outputs = [Output(name='component_as_tool')]\n"
    assert "is reserved" in scan(source)[0].message


def test_reserved_method_is_rejected() -> None:
    source = HEADER + "class T(Component):\n    def to_toolkit(self):\n        return []\n"
    finding = scan(source)[0]
    assert finding.line == 3 and "`to_toolkit` on T is reserved" in finding.message


# ------------------------------------------------------------------------------ limits
def test_class_name_and_size_limits() -> None:
    ok = UPPERCASE_TEXT
    assert static_check(ok, "UppercaseText") is None
    for bad in ("lower", "9Lives", "Has-Dash", "A" * 65, "Spaced Name"):
        result = static_check(ok, bad)
        assert result is not None and result.stage == "limits" and "class name" in (result.error or ""), bad
    assert static_check(ok, "A" * 64) is None  # 64 characters is allowed
    big = HEADER + "# " + "x" * (1 << 20) + "\n"
    result = static_check(big)
    assert result is not None and "limit is 1048576 bytes" in (result.error or "")
    empty = static_check("   \n")
    assert empty is not None and "empty" in (empty.error or "")


def test_several_findings_are_summarised_in_one_line() -> None:
    result = static_check("import os\nopen('x')\neval('1')\n")
    assert result is not None and result.stage == "scan"
    assert (
        result.error == "line 2: `open` is not allowed in components; take the content as an input "
        "instead (and 1 more problem)"
    )
    assert len(result.problems) == 2


# ------------------------------------------------------------------------------ exemption
def test_fetch_template_uses_a_denied_construct() -> None:
    assert any("os.environ" in f.message for f in scan(FETCH_TEXT))  # so the exemption matters


def test_identical_builtin_template_is_exempt() -> None:
    for name, template in BUILTIN_TEMPLATES.items():
        assert builtin_template_for(template) == name
        assert builtin_template_for(template, name) == name
        assert static_check(template, name) is None
        assert static_check(template) is None


def test_whitespace_only_difference_is_exempt() -> None:
    variant = FETCH_TEXT.replace("\n", "\r\n").replace("import httpx", "import httpx   ")
    variant = variant.replace("proxy = os", "proxy  =  os") + "\n\n\n"
    assert variant != FETCH_TEXT
    assert normalize_code(variant) == normalize_code(FETCH_TEXT)
    assert builtin_template_for(variant, "FetchText") == "FetchText"
    assert static_check(variant, "FetchText") is None


def test_modified_template_is_scanned_and_rejected() -> None:
    modified = FETCH_TEXT.replace('os.environ.get("HTTPS_PROXY")', 'os.environ.get("SECRET_TOKEN")')
    assert builtin_template_for(modified) is None
    result = static_check(modified, "FetchText")
    assert result is not None and result.stage == "scan"
    assert "environment access (`os.environ`)" in (result.error or "")
    assert (result.error or "").startswith("line 18: ")


def test_template_under_another_class_name_is_not_exempt() -> None:
    assert builtin_template_for(FETCH_TEXT, "UppercaseText") is None
    assert static_check(FETCH_TEXT, "UppercaseText") is not None


def test_reindenting_that_changes_meaning_is_not_whitespace_only() -> None:
    template = "def f(x):\n    if x:\n        a = 1\n        b = 2\n    return 0\n"
    moved = "def f(x):\n    if x:\n        a = 1\n    b = 2\n    return 0\n"
    assert normalize_code(template) == normalize_code(moved)
    assert not same_code(moved, template)
    assert same_code(template.replace("    ", "  "), template)
