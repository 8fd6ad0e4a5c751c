"""Node errors in plait's one error tree: `NodeError` is a `PlaitError` (message, hint, code) that
keeps its `retryable` flag and its str(); `InterruptRequest` is control flow, not an error; a
foreign error a node translates keeps its cause (`raise ... from exc`)."""

from __future__ import annotations

import pytest

from plait.errors import PlaitError
from plait.nodes import InterruptRequest, NodeError


def test_node_error_is_a_plait_error_with_its_message_hint_and_code() -> None:
    exc = NodeError("boom", hint="do this", retryable=False)
    assert isinstance(exc, PlaitError)
    assert (str(exc), exc.message, exc.hint, exc.retryable, exc.code) == (
        "boom",
        "boom",
        "do this",
        False,
        "node_error",
    )
    assert exc.with_hint() == "boom (fix: do this)"
    assert NodeError("x", code="custom").code == "custom"
    assert NodeError("x").retryable is True


def test_an_interrupt_is_not_an_error() -> None:
    assert not issubclass(InterruptRequest, PlaitError)


def test_a_translated_error_keeps_its_cause(make_node, make_ctx) -> None:
    node = make_node("data_ops", {"operation": "literal_eval"})
    with pytest.raises(NodeError, match="cannot parse `source`") as caught:
        node.execute(make_ctx("not ( a literal"))
    assert isinstance(caught.value.__cause__, (SyntaxError, ValueError))
