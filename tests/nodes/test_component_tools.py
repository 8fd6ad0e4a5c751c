"""Registered components as agent tools (`tools: ["component:Name"]`): the tool's name, arguments
and result, run for real in the sandbox, with the scripted provider playing the model."""

from __future__ import annotations

from typing import Any

import pytest

import plait
from plait import RunServices
from plait.nodes.builtin.component import StaticComponentSource
from plait.nodes.builtin.component_tools import input_schema, tool_name

MENU = """\
from plait.sdk import Component, Input, Output


class RandomMenuItem(Component):
    description = "Picks the menu item of the day for a cuisine."
    inputs = [Input("cuisine", "string", "The kind of food"), Input("seed", "integer", required=False, default=0)]
    outputs = [Output("item", "string")]

    def run(self, cuisine, seed=0):
        menu = {"thai": ["pad thai", "green curry"], "italian": ["risotto", "lasagne"]}
        return {"item": menu[cuisine][seed % 2]}
"""


@pytest.mark.parametrize(
    ("class_name", "expected"),
    [
        ("RandomMenuItem", "random_menu_item"),  # A-S34
        ("HTTPClient", "http_client"),
        ("S3Bucket", "s3_bucket"),
        ("Sum", "sum"),
        ("ParseJSON", "parse_json"),
        ("GetURLTitle", "get_url_title"),
    ],
)
def test_a_s34_a_component_tool_is_named_after_its_class(class_name: str, expected: str) -> None:
    assert tool_name(class_name) == expected


def test_the_arguments_are_the_components_inputs() -> None:
    schema = input_schema(
        [
            {"name": "cuisine", "type": "string", "description": "The kind of food", "required": True},
            {"name": "seed", "type": "integer", "description": "", "required": False, "default": 0},
            {"name": "extra", "type": "any", "description": "", "required": False, "default": None},
        ]
    )
    assert schema["required"] == ["cuisine"]
    assert schema["properties"]["cuisine"] == {"type": "string", "description": "The kind of food"}
    assert schema["properties"]["extra"] == {}  # any: open


def _agent(tools: list[str], script: list[Any]) -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "menu-agent",
        "nodes": [
            {
                "id": "agent",
                "type": "agent",
                "config": {
                    "provider": "scripted",
                    "prompt": "What should I eat tonight? Thai, please.",
                    "tools": tools,
                    "script": script,
                },
            }
        ],
        "edges": [],
    }


async def test_an_agent_calls_a_component_as_a_tool() -> None:
    script = [
        {"tool_calls": [{"name": "random_menu_item", "arguments": {"cuisine": "thai", "seed": 1}}]},
        "Tonight: green curry.",
    ]
    services = RunServices(component_source=StaticComponentSource({"RandomMenuItem": MENU}))
    result = await plait.run(_agent(["component:RandomMenuItem"], script), services=services)
    assert result.status == "completed", result.error
    out = result.nodes["agent"].output
    assert out["content"] == "Tonight: green curry."
    (call,) = out["tool_calls"]
    assert call["name"] == "random_menu_item" and call["status"] == "ok"
    assert call["result"] == {"item": "green curry"}  # run for real in the sandbox


async def test_a_failing_component_call_goes_back_to_the_model() -> None:
    script = [
        {"tool_calls": [{"name": "random_menu_item", "arguments": {"cuisine": "martian"}}]},
        "Sorry, no Martian food.",
    ]
    services = RunServices(component_source=StaticComponentSource({"RandomMenuItem": MENU}))
    result = await plait.run(_agent(["component:RandomMenuItem"], script), services=services)
    assert result.status == "completed", result.error
    (call,) = result.nodes["agent"].output["tool_calls"]
    assert call["status"] == "error" and "RandomMenuItem failed" in str(call.get("error"))


async def test_an_unknown_component_fails_the_node_with_the_fix() -> None:
    services = RunServices(component_source=StaticComponentSource({}))
    result = await plait.run(_agent(["component:Nope"], ["hi"]), services=services)
    assert result.status == "failed"
    assert "no component named 'Nope'" in (result.error or "")
