"""The words the assistant uses: fixed inputs the web client sends, and the messages people read.

The two continuation inputs are a protocol between the panel and the server: the panel sends
them verbatim after the user approves a plan or a set of field edits, and the server recognises
them by exact equality (after stripping whitespace) without asking the classifier. Everything
else here is plait's own wording (spec decision 13).
"""

from __future__ import annotations

# Sent by the panel when the user approves a proposed plan (spec B16, F-plan card).
PLAN_APPROVAL_INPUT = "User approved the plan. Proceed with the build."
# Sent by the panel, without a user bubble, after the user accepted proposed field edits.
EDIT_CONTINUATION_INPUT = "The user applied the proposed field edits. Continue with the remaining steps."

OFF_TOPIC_REFUSAL = (
    "I can only help with plait: questions about how it works, writing custom components, and "
    "building, changing and running flows. Could you ask me something about your plait flows?"
)

BLOCKED_REFUSAL = (
    "I can't act on that request: it asks me to set aside how I work. I'm glad to help with plait "
    "itself: questions, custom components, and your flows."
)

GENERATION_FAILED = (
    "The selected model could not produce a valid component. Try again, rephrase the request, or "
    "pick a more capable model."
)

DISABLED = "The assistant is turned off on this server (PLAIT_ASSISTANT=off)."
CANCELLED = "Request cancelled"
