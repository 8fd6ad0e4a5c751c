"""The component SDK proper: stdlib only, self-contained.

This file's source is also shipped verbatim into the sandbox (the sandboxed process cannot rely
on importing the `plait` package), where it becomes the module `plait.sdk`. Keep it free of
imports from plait and of third-party imports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

TYPES = ("string", "number", "integer", "boolean", "object", "array", "any")


@dataclass(frozen=True)
class Input:
    """A declared input of a component: a keyword argument of `run`."""

    name: str
    type: str = "any"
    description: str = ""
    required: bool = True
    default: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "required": self.required,
            "default": self.default,
        }


@dataclass(frozen=True)
class Output:
    """A declared output of a component: a key of the dict `run` returns."""

    name: str
    type: str = "any"
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "description": self.description}


class Component:
    """Base class of custom components.

    class Shout(Component):
        display_name = "Shout"
        inputs = [Input("text", "string")]
        outputs = [Output("text", "string")]

        def run(self, text):
            return {"text": text.upper()}
    """

    display_name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    inputs: ClassVar[list[Input]] = []
    outputs: ClassVar[list[Output]] = []

    def run(self, **inputs: Any) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} does not implement run()")


__all__ = ["TYPES", "Component", "Input", "Output"]
