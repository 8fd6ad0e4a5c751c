"""Where the assistant registers the components it generated: the owner's `components` table.

A component that validated in an assistant turn is saved for the user like one saved through the
API (same table, same name rules, same `component` node lookup by owner and name), tagged with the
assistant session that made it (`components.session_id`). So a later flow of that user can use it
at once, and a session reset (`clear`) wipes what that session generated without touching the
components the user saved themselves (`session_id` NULL). Saving a generated component by hand
(`ComponentService.create`) makes it the user's own, and a reset then keeps it.

This is plait's form of the spec's per-user component directory (B66-B71): the table already has
the per-owner isolation, the size and class-name limits and real introspection (the validation's
spec), so there are no files, paths or peppers.

Refusals are not errors (the chat reply still arrives): an anonymous user (no owner to save for)
and a name the user already uses for a component of their own (theirs wins) answer False, log a
warning and call `on_refused(reason)` (the server counts them). Store errors propagate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from plait.sandbox.components import ComponentValidation
from plait.store import Store

log = logging.getLogger("plait.assistant")

REFUSED_ANONYMOUS = "anonymous_user"
REFUSED_NAME_TAKEN = "name_taken"


class AssistantComponents:
    """`plait.assistant.ports.ComponentRegistry` over the store's components table."""

    def __init__(self, store: Store, *, on_refused: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.on_refused = on_refused

    async def register(
        self, owner_id: str | None, session_id: str, validation: ComponentValidation, source: str
    ) -> bool:
        """Save the validated component for the owner and session (replacing one an assistant
        session registered under that name); False when refused (see the module docstring)."""
        class_name = validation.class_name
        if not owner_id:
            self._refused(REFUSED_ANONYMOUS, class_name)
            return False
        if not validation.valid or class_name is None:
            raise ValueError("only a valid component with a class name can be registered")
        row = await self.store.components.save_for_session(
            class_name,
            source,
            owner_id=owner_id,
            session_id=session_id,
            spec=validation.spec(),
            description=validation.description,
            kind="node",
        )
        if row is None:
            self._refused(REFUSED_NAME_TAKEN, class_name)
            return False
        log.info("assistant.user_component.registered class_name=%s session_id=%s", class_name, session_id)
        return True

    async def clear(self, owner_id: str | None, session_id: str | None) -> int:
        """Delete what the assistant registered for the owner (in `session_id`; in every session
        when None); the owner's own components stay. 0 for an anonymous user."""
        if not owner_id:
            return 0
        count = await self.store.components.delete_session_components(owner_id, session_id)
        if count:
            log.info(
                "assistant.user_components.cleared count=%d session_id=%s",
                count,
                session_id if session_id is not None else "*",
            )
        return count

    def _refused(self, reason: str, class_name: str | None) -> None:
        log.warning("assistant.user_component.register_refused reason=%s class_name=%s", reason, class_name)
        if self.on_refused is not None:
            self.on_refused(reason)


__all__ = ["REFUSED_ANONYMOUS", "REFUSED_NAME_TAKEN", "AssistantComponents"]
