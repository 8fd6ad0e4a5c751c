"""Custom components: load and introspect in the sandbox, run, and the `component` node in a flow."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import plait
from plait import RunServices
from plait.nodes.builtin import BUILTIN_NODE_TYPES
from plait.nodes.builtin import component as component_node
from plait.nodes.builtin.component import ComponentNode, StaticComponentSource, component_palette
from plait.nodes.registry import NodeRegistry, default_registry
from plait.sandbox import SandboxPool
from plait.sandbox.components import run_component, validate_component
from plait.sdk import Component, Input, Output
from plait.sdk.templates import BUILTIN_TEMPLATES, UPPERCASE_TEXT

SHOUT = """\
from plait.sdk import Component, Input, Output


class Shout(Component):
    display_name = "Shout"
    description = "Upper-cases a text and adds marks."
    inputs = [
        Input("text", "string", "The text"),
        Input("marks", "integer", "How many !", required=False, default=1),
    ]
    outputs = [Output("text", "string"), Output("length", "integer")]

    def run(self, text, marks=1):
        out = text.upper() + "!" * marks
        return {"text": out, "length": len(out)}
"""

ASYNC_SUM = """\
import asyncio

from plait.sdk import Component, Input, Output


class AsyncSum(Component):
    inputs = [Input("numbers", "array")]
    outputs = [Output("total", "number")]

    async def run(self, numbers):
        await asyncio.sleep(0)
        return sum(numbers)
"""

BOOM = """\
from plait.sdk import Component, Input, Output


class Boom(Component):
    inputs = [Input("x", "integer")]
    outputs = [Output("y", "integer")]

    def run(self, x):
        return {"y": 10 // x}
"""


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    p = SandboxPool(size=2).start()
    ComponentNode.pool = p
    yield p
    ComponentNode.pool = None
    p.close()


@pytest.fixture
def source() -> StaticComponentSource:
    return StaticComponentSource()


def _with(source: StaticComponentSource) -> RunServices:
    """The services of a run whose component node finds its components in `source`."""
    return RunServices(component_source=source)


# ------------------------------------------------------------------------------ the SDK itself
def test_sdk_works_in_process() -> None:
    class Echo(Component):
        inputs = [Input("x")]
        outputs = [Output("x")]

        def run(self, x):
            return {"x": x}

    assert Echo().run(x=3) == {"x": 3}
    assert Input("a", "string").to_dict()["required"] is True


# ------------------------------------------------------------------------------ validation
async def test_valid_component_is_introspected(pool: SandboxPool) -> None:
    result = await validate_component(SHOUT, pool=pool)
    assert result.valid and result.error is None, result.error
    assert result.class_name == "Shout" and result.display_name == "Shout"
    assert [i["name"] for i in result.inputs] == ["text", "marks"]
    assert result.inputs[1] == {
        "name": "marks",
        "type": "integer",
        "description": "How many !",
        "required": False,
        "default": 1,
    }
    assert result.outputs == [
        {"name": "text", "type": "string", "description": ""},
        {"name": "length", "type": "integer", "description": ""},
    ]
    assert not result.builtin


async def test_builtin_templates_validate(pool: SandboxPool) -> None:
    for name, template in BUILTIN_TEMPLATES.items():
        result = await validate_component(template, pool=pool)
        assert result.valid and result.class_name == name and result.builtin, result.error


async def test_bad_import_is_caught_with_a_clean_error(pool: SandboxPool) -> None:
    source = SHOUT.replace("from plait.sdk", "import no_such_module_xyz\nfrom plait.sdk", 1)
    result = await validate_component(source, pool=pool)
    assert not result.valid and result.stage == "sandbox"
    assert result.error == "line 1: ModuleNotFoundError: No module named 'no_such_module_xyz'"


async def test_wrong_base_class_is_caught(pool: SandboxPool) -> None:
    source = SHOUT.replace("class Shout(Component):", "class Shout:")
    named = await validate_component(source, "Shout", pool=pool)
    assert not named.valid
    assert named.error is not None and named.error.startswith("class Shout must subclass plait.sdk.Component")
    found = await validate_component(source, pool=pool)
    assert not found.valid and found.error is not None
    assert found.error.startswith("the code defines no subclass of plait.sdk.Component (found class Shout")
    assert "\n" not in named.error + found.error


async def test_error_at_import_time_names_its_line(pool: SandboxPool) -> None:
    source = SHOUT + "\nVALUE = 1 / 0\n"
    result = await validate_component(source, pool=pool)
    assert result.error == "line 17: ZeroDivisionError: division by zero"


@pytest.mark.parametrize(
    ("replace", "fragment"),
    [
        (
            ('Output("length", "integer")', 'Output("component_" + "as_tool")'),
            "`component_as_tool` is reserved",
        ),
        (("    def run(", "    to_toolkit = None\n\n    def run("), "`to_toolkit`"),
        (
            ("class Shout(Component):", "class Shout(Component):\n    pass\n\n\nclass Other(Component):"),
            "several",
        ),
        (('Input("text", "string", "The text")', 'Input("text", "str")'), "has the type 'str'"),
        (
            ("def run(self, text, marks=1)", "def run(self, text)"),
            "does not accept the declared input(s) marks",
        ),
    ],
    ids=["reserved-output-dynamic", "reserved-method-attribute", "two-classes", "bad-type", "signature"],
)
async def test_introspection_refusals(pool: SandboxPool, replace: tuple[str, str], fragment: str) -> None:
    source = SHOUT.replace(*replace)
    assert source != SHOUT
    result = await validate_component(source, pool=pool)
    assert not result.valid and result.stage == "sandbox"
    assert fragment in (result.error or ""), result.error


async def test_explicit_class_name_picks_one_of_several(pool: SandboxPool) -> None:
    source = SHOUT + "\n\nclass Whisper(Shout):\n    pass\n"
    assert not (await validate_component(source, pool=pool)).valid
    result = await validate_component(source, "Whisper", pool=pool)
    assert result.valid and result.class_name == "Whisper"


async def test_scan_runs_before_the_sandbox(pool: SandboxPool) -> None:
    result = await validate_component(
        SHOUT.replace("out = text.upper()", "out = open(text).read()"), pool=pool
    )
    assert not result.valid and result.stage == "scan"
    assert result.error is not None and result.error.startswith(
        "line 14: `open` is not allowed in components"
    )


# ------------------------------------------------------------------------------ runs
async def test_run_component_fills_defaults_and_checks_outputs(pool: SandboxPool) -> None:
    run = await run_component(SHOUT, "Shout", {"text": "hi"}, pool=pool)
    assert run.ok and run.outputs == {"text": "HI!", "length": 3}
    run = await run_component(SHOUT, "Shout", {"text": "hi", "marks": 3}, pool=pool)
    assert run.outputs == {"text": "HI!!!", "length": 5}
    summed = await run_component(ASYNC_SUM, "AsyncSum", {"numbers": [1, 2, 3.5]}, pool=pool)
    assert summed.ok and summed.outputs == {"total": 6.5}


async def test_run_component_input_errors(pool: SandboxPool) -> None:
    missing = await run_component(SHOUT, "Shout", {}, pool=pool)
    assert not missing.ok and missing.error == "missing required input 'text' of Shout"
    unknown = await run_component(SHOUT, "Shout", {"text": "a", "loud": True}, pool=pool)
    assert unknown.error is not None and "unknown input(s) 'loud'" in unknown.error
    wrong = await run_component(SHOUT, "Shout", {"text": 5}, pool=pool)
    assert wrong.error == "input 'text' of Shout should be string but is integer"


async def test_run_component_user_exception_has_user_traceback(pool: SandboxPool) -> None:
    run = await run_component(BOOM, "Boom", {"x": 0}, pool=pool)
    assert not run.ok and run.error_kind == "component"
    assert run.error == "line 9: ZeroDivisionError: integer division or modulo by zero"
    assert any('File "<code>", line 9, in run' in line for line in run.traceback_lines)


# ------------------------------------------------------------------------------ the node
def _flow(config: dict) -> dict:
    return {
        "schema": "plait/flow@1",
        "id": "comp",
        "inputs": {"type": "object", "properties": {"text": {"type": "string"}}},
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "shout", "type": "component", "config": config},
            {"id": "out", "type": "output", "config": {"name": "result", "value": "{{shout.text}}"}},
        ],
        "edges": [{"source": "start", "target": "shout"}, {"source": "shout", "target": "out"}],
    }


async def test_component_runs_in_a_flow(pool: SandboxPool, source: StaticComponentSource) -> None:
    source.add("Shout", SHOUT)
    config = {"component": "Shout", "inputs": {"text": "{{inputs.text}}", "marks": 2}}
    result = await plait.run(_flow(config), {"text": "hello"}, services=_with(source))
    assert result.status == "completed", result
    assert result.outputs == {"result": "HELLO!!"}


async def test_builtin_template_runs_in_a_flow(pool: SandboxPool, source: StaticComponentSource) -> None:
    source.add("UppercaseText", UPPERCASE_TEXT)
    result = await plait.run(
        _flow({"component": "UppercaseText", "inputs": {"text": "{{inputs.text}}"}}),
        {"text": "a"},
        services=_with(source),
    )
    assert result.status == "completed" and result.outputs == {"result": "A"}


async def test_component_failures_fail_the_node(pool: SandboxPool, source: StaticComponentSource) -> None:
    source.add("Boom", BOOM)
    doc = _flow({"component": "Boom", "inputs": {"x": 0}})
    doc["nodes"][2]["config"]["value"] = "{{shout.y}}"
    result = await plait.run(doc, {"text": "x"}, services=_with(source))
    assert result.status == "failed"
    assert "component Boom: line 9: ZeroDivisionError" in str(result.error)

    missing = await plait.run(
        _flow({"component": "Nope", "inputs": {}}), {"text": "x"}, services=_with(source)
    )
    assert missing.status == "failed" and "no component named 'Nope'" in str(missing.error)


async def test_unscanned_source_is_refused_at_run_time(
    pool: SandboxPool, source: StaticComponentSource
) -> None:
    source.add("Shout", SHOUT.replace("out = text.upper()", "out = open(text).read()"))
    doc = _flow({"component": "Shout", "inputs": {"text": "x"}})
    result = await plait.run(doc, {"text": "x"}, services=_with(source))
    assert result.status == "failed" and "`open` is not allowed" in str(result.error)


async def test_a_run_without_a_component_source_says_how_to_give_one() -> None:
    result = await plait.run(_flow({"component": "Shout", "inputs": {}}), {"text": "x"})
    assert result.status == "failed"
    assert "custom components are not available in this run" in str(result.error)
    assert "component_source" in str(result.error)


def test_config_validates_the_component_name() -> None:
    registry = default_registry()
    assert registry.parse_config("component", {"component": "Shout"})
    for bad in ("shout", "A" * 65, ""):
        with pytest.raises(ValueError):
            registry.parse_config("component", {"component": bad})


async def test_palette_lists_registered_components(pool: SandboxPool, source: StaticComponentSource) -> None:
    registry = NodeRegistry(BUILTIN_NODE_TYPES, [component_palette(source)])
    names = [e["name"] for e in registry.describe_all()]
    assert "component" in names and not any(n.startswith("component:") for n in names)
    spec = (await validate_component(SHOUT, pool=pool)).spec()
    source.add("Shout", SHOUT, spec)
    entries = {e["name"]: e for e in registry.describe_all()}
    entry = entries["component:Shout"]
    assert entry["title"] == "Shout" and entry["node_type"] == "component"
    assert entry["config_defaults"] == {"component": "Shout"}
    inputs = entry["config_schema"]["properties"]["inputs"]
    assert inputs["required"] == ["text"]
    assert inputs["properties"]["marks"] == {"description": "How many !", "type": "integer", "default": 1}
    assert [o["name"] for o in entry["outputs"]] == ["text", "length"]
    assert component_node.palette_entries(source)[0]["name"] == "component:Shout"
