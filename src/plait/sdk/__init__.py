"""The custom-component SDK (ARCHITECTURE section 8; docs/components.md).

    from plait.sdk import Component, Input, Output

    class WordCount(Component):
        display_name = "Word count"
        description = "Counts the words of a text."
        inputs = [Input("text", "string", "The text to count")]
        outputs = [Output("words", "integer")]

        def run(self, text):
            return {"words": len(text.split())}

Components run in the sandbox (`plait.sandbox.components`); register them with
`POST /api/v1/components` and use them in a flow with a `component` node.
"""

from plait.sdk._core import TYPES, Component, Input, Output

__all__ = ["TYPES", "Component", "Input", "Output"]
