"""The `generate_component` tool's engine: part 1's generation pipeline, inside an agent's turn.

The flow-builder agent asks for a component in the middle of its loop ("make a component that
reverses a string, then build a flow with it"). The request goes through the same pipeline as
a `generate_component` message (`plait.assistant.codegen`). It uses the same model and the
same usage accounting (the turn's `ModelCall`), the same attempt budget, and the same progress
events on the client's stream. A component that validates is registered for the user and
session before the tool answers, so the agent's next `search_components` and `build_flow` see it.
"""

from __future__ import annotations

from plait.assistant import codegen
from plait.assistant.ports import ComponentRegistry, Emit, ModelCall
from plait.assistant.tool_ports import GeneratedComponent


class TurnComponentGenerator:
    """A `ComponentGenerator` bound to one turn: its model, stream, budget and registry."""

    def __init__(
        self,
        call: ModelCall,
        emit: Emit,
        *,
        user_id: str | None,
        session_id: str,
        registry: ComponentRegistry | None,
        max_attempts: int = codegen.DEFAULT_MAX_ATTEMPTS,
        validate: codegen.Validate | None = None,
    ) -> None:
        self.call = call
        self.emit = emit
        self.user_id = user_id
        self.session_id = session_id
        self.registry = registry
        self.max_attempts = max_attempts
        self.validate = validate

    async def generate(self, description: str) -> GeneratedComponent:
        if self.validate is None:
            outcome = await codegen.generate_component(
                description, self.call, self.emit, max_attempts=self.max_attempts
            )
        else:
            outcome = await codegen.generate_component(
                description, self.call, self.emit, max_attempts=self.max_attempts, validate=self.validate
            )
        if not outcome.validated or outcome.validation is None or outcome.code is None:
            return {
                "validated": False,
                "attempts": outcome.attempts,
                "class_name": outcome.class_name,
                "error": outcome.error
                or "the model answered without code: describe the component more precisely",
            }
        registered = False
        if self.registry is not None:
            registered = await self.registry.register(
                self.user_id, self.session_id, outcome.validation, outcome.code
            )
        return {
            "validated": True,
            "attempts": outcome.attempts,
            "class_name": outcome.class_name,
            "source": outcome.code,
            "spec": outcome.validation.spec(),
            "registered": registered,
        }
