"""The `code` node: arguments from references, declared outputs, errors, cancellation."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from typing import Any

import pytest

from plait.nodes import NodeError
from plait.nodes.builtin.code import CodeConfig, CodeNode, shape_outputs
from plait.nodes.registry import default_registry
from plait.sandbox import SandboxPool

try:
    from plait.expr import render as _expr_render
except ImportError:  # plait.expr is written concurrently; whole-value references are enough here
    _expr_render = None

_WHOLE_REF = re.compile(r"^\{\{\s*([A-Za-z_][\w]*)((?:\.[\w]+)*)\s*\}\}$")


class FakeContext:
    """Just what the code node uses: render() over a few reference roots."""

    def __init__(self, roots: dict[str, Any]) -> None:
        self.roots = roots
        self.run_id, self.node_id, self.attempt = "run", "code1", 1
        self.input, self.inputs, self.vars = None, {}, {}

    def lookup(self, root: str) -> Any:
        return self.roots[root]

    def render(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        if _expr_render is not None:
            return _expr_render(value, self.lookup)
        if isinstance(value, str) and (m := _WHOLE_REF.match(value)):
            out = self.lookup(m.group(1))
            for part in filter(None, m.group(2).split(".")):
                out = out[int(part)] if isinstance(out, list) else out[part]
            return out
        if isinstance(value, dict):
            return {k: self.render(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.render(v) for v in value]
        return value

    async def arender(self, value: Any, extra: Mapping[str, Any] | None = None) -> Any:
        return self.render(value, extra)


@pytest.fixture(scope="module", autouse=True)
def pool():
    p = SandboxPool(size=2).start()
    CodeNode.pool = p
    yield p
    CodeNode.pool = None
    p.close()


def node(**config: Any) -> CodeNode:
    return CodeNode("code1", CodeConfig.model_validate(config))


CTX = FakeContext({"start": {"numbers": [1, 2, 3], "name": "Ada"}, "vars": {"factor": 10}})


def test_registered():
    assert default_registry().get("code") is CodeNode
    desc = default_registry().describe("code")
    assert {"code", "arguments", "outputs", "timeout_s", "memory_mb", "network"} <= set(
        desc["config_schema"]["properties"]
    )


def test_only_arguments_hold_references():
    cfg = CodeConfig(code="def main(x):\n    return {'a': f'{{x}}'}\n", arguments={"x": "{{start.name}}"})
    assert CodeNode.reference_texts(cfg) == [("arguments", {"x": "{{start.name}}"})]
    with pytest.raises(ValueError, match="argument names must be Python identifiers: 'not valid'"):
        CodeConfig(code="def main(): pass", arguments={"not valid": 1})


async def test_arguments_from_references_scalar_becomes_result():
    n = node(
        code="def main(numbers, factor):\n    return sum(numbers) * factor\n",
        arguments={"numbers": "{{start.numbers}}", "factor": "{{vars.factor}}"},
    )
    assert await n.run(CTX) == {"result": 60}


async def test_declared_outputs():
    n = node(
        code="def main(name, numbers):\n    return {'greeting': 'hi ' + name, 'count': len(numbers), 'extra': True}\n",
        arguments={"name": "{{start.name}}", "numbers": "{{start.numbers}}"},
        outputs={"greeting": "string", "count": "integer"},
    )
    assert await n.run(CTX) == {"greeting": "hi Ada", "count": 3, "extra": True}


async def test_single_declared_output_receives_a_non_dict_value():
    n = node(code="def main():\n    return [1, 2]\n", outputs={"items": "array"})
    assert await n.run(CTX) == {"items": [1, 2]}


async def test_missing_declared_output_is_named():
    n = node(code="def main():\n    return {'a': 1}\n", outputs={"a": "number", "b": "string"})
    with pytest.raises(NodeError) as err:
        await n.run(CTX)
    assert "'b'" in err.value.message and err.value.retryable is False


def test_output_type_checks():
    assert shape_outputs(3, {}) == {"result": 3}
    assert shape_outputs({"x": 1.5}, {"x": "number"}) == {"x": 1.5}
    with pytest.raises(NodeError, match="'x' should be integer but is number"):
        shape_outputs({"x": 1.5}, {"x": "integer"})
    with pytest.raises(NodeError, match="should be boolean but is integer"):
        shape_outputs({"ok": 1}, {"ok": "boolean"})
    with pytest.raises(NodeError, match="should be number but is boolean"):
        shape_outputs({"n": True}, {"n": "number"})
    assert shape_outputs(
        {"o": {}, "a": [], "s": "", "z": None}, {"o": "object", "a": "array", "s": "string", "z": "any"}
    )


async def test_user_error_shows_the_user_traceback_only():
    n = node(code="import json\n\ndef main():\n    return json.loads('{nope')\n")
    with pytest.raises(NodeError) as err:
        await n.run(CTX)
    message = err.value.message
    assert message.startswith("JSONDecodeError")
    assert 'File "<code>", line 4, in main' in message
    assert "decoder.py" not in message and "child.py" not in message and "/work/" not in message
    assert err.value.retryable is False


async def test_error_ends_with_the_tail_of_stderr():
    code = "import sys\ndef main():\n    for i in range(30):\n        print('line', i, file=sys.stderr)\n    1 / 0\n"
    with pytest.raises(NodeError) as err:
        await node(code=code).run(CTX)
    head, _, tail = err.value.message.partition("\n--- stderr (last lines) ---\n")
    assert head.startswith("ZeroDivisionError") and 'File "<code>", line 5, in main' in head
    assert tail.splitlines() == [f"line {i}" for i in range(10, 30)]


async def test_timeout_is_a_non_retryable_error():
    n = node(code="def main():\n    while True:\n        pass\n", timeout_s=1)
    with pytest.raises(NodeError) as err:
        await n.run(CTX)
    assert "timed out" in err.value.message and err.value.hint and not err.value.retryable


async def test_memory_and_sys_exit_errors():
    n = node(code="def main():\n    return len(bytearray(10 * 1024 ** 3))\n", memory_mb=128)
    with pytest.raises(NodeError, match="memory limit"):
        await n.run(CTX)
    n = node(code="import sys\ndef main():\n    sys.exit(3)\n")
    with pytest.raises(NodeError, match=r"sys\.exit\(3\)"):
        await n.run(CTX)


async def test_network_off_by_default():
    n = node(code="import socket\ndef main():\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\n")
    with pytest.raises(NodeError, match="network access is disabled"):
        await n.run(CTX)


async def test_cancellation_kills_the_child_process_group(pool):
    seen: list[int] = []
    acquire = pool._acquire

    def spy():
        worker = acquire()
        seen.append(worker.pid)
        return worker

    pool._acquire = spy
    try:
        n = node(code="def main():\n    while True:\n        pass\n", timeout_s=60)
        task = asyncio.create_task(n.run(CTX))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(ProcessLookupError):
            os.killpg(seen[0], 0)
    finally:
        del pool._acquire
    assert await node(code="def main():\n    return 'ok'\n").run(CTX) == {"result": "ok"}
