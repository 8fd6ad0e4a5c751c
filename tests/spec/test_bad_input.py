"""Bad documents and bad run inputs end in clear errors, never an unhandled exception or a hang."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import plait

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.sampled_from(["{{a.b}}", "{x@y}", "{%"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
node_types = st.sampled_from(
    [
        "start",
        "output",
        "message",
        "switch",
        "if",
        "merge",
        "assign",
        "loop",
        "map",
        "human",
        "subflow",
        "transform",
        "text",
        "list_ops",
        "data_ops",
        "nope",
        "",
    ]
)
nodes = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "c", "A", "inputs", "x.y", ""]), "type": node_types},
    optional={
        "config": st.dictionaries(
            st.sampled_from(
                ["value", "text", "cases", "items", "body", "flow", "url", "when", "name", "max_iterations"]
            ),
            json_values,
            max_size=3,
        ),
        "requires": st.lists(st.sampled_from(["a", "b", "zz"]), max_size=2),
        "input_schema": st.sampled_from([{"type": "object"}, {"type": 3}, {}]),
    },
)
edges = st.fixed_dictionaries(
    {"source": st.sampled_from(["a", "b", "c", "q"]), "target": st.sampled_from(["a", "b", "c", "q"])},
    optional={"source_port": st.sampled_from(["out", "true", "else", "zz"])},
)
documents = st.fixed_dictionaries(
    {
        "schema": st.just("plait/flow@1"),
        "nodes": st.lists(nodes, max_size=4),
        "edges": st.lists(edges, max_size=4),
    },
    optional={
        "inputs": st.sampled_from([{"type": "object"}, {"type": "zz"}]),
        "settings": st.dictionaries(st.sampled_from(["max_concurrency", "policy"]), json_values),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_random_documents_load_or_fail_cleanly(doc):
    try:
        flow = plait.load_flow(doc)
    except plait.FlowValidationError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.message and problem.code
        return
    # A valid random flow runs to an end state with a timeout-bounded event loop.
    try:
        result = asyncio.run(asyncio.wait_for(plait.run(flow, {}, timeout_s=5), 10))
    except plait.RunInputError:
        return
    assert result.status in ("completed", "failed", "waiting")
    if result.status == "failed":
        assert result.error


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["query", "n", "extra"]), json_values, max_size=3))
def test_random_inputs_are_accepted_or_rejected_cleanly(inputs):
    flow = plait.load_flow(
        {
            "schema": "plait/flow@1",
            "id": "f",
            "inputs": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["query"],
                "additionalProperties": False,
            },
            "nodes": [{"id": "s", "type": "start"}],
        }
    )
    try:
        result = plait.run_sync(flow, inputs)
    except plait.RunInputError as exc:
        assert all(p.field and p.field.startswith("inputs") for p in exc.problems)
        return
    assert result.status == "completed"
