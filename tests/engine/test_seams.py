"""The engine's seams (issue 10): a scheduling policy plugs in without subclassing the runner; the
services a run needs travel in one RunServices; cancellation comes through a CancelSource; the plan
cache belongs to whoever owns the flows; the fast paths build what the slow ones would."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import plait
from plait.engine import events as ev
from plait.engine.cancel import LocalCancels
from plait.engine.checkpoint import Checkpoint, NodeDelta
from plait.engine.commit import node_finished
from plait.engine.context import Scope
from plait.engine.flow import simple_object_check
from plait.engine.invoke import NodeOutcome
from plait.engine.policy import PolicyHost
from plait.engine.runner import Runner
from plait.engine.services import RunServices
from plait.engine.status import RunStatus
from plait.nodes import Node, NodeContext, default_registry
from plait_testing import flow


class SeesServices(Node):
    """Reports what of the run's services it can see."""

    type_name = "test_sees_services"
    inline = True

    def execute(self, ctx: NodeContext) -> Any:
        services = ctx.services
        return {"source": services.component_source, "depth": services.depth}


if default_registry().get(SeesServices.type_name) is None:
    default_registry().register(SeesServices)


def echo(id_: str, **config: Any) -> dict[str, Any]:
    return {"id": id_, "type": "test_echo", "config": config}


# ------------------------------------------------------------------------------ policy
class HighestIdFirst:
    """A policy written from scratch: one node at a time, the ready node with the highest id first."""

    runs_inline = False

    def __init__(self) -> None:
        self.order: list[str] = []
        self.outcomes: list[str] = []

    def startable(self, run: PolicyHost) -> Iterator[int]:
        ready = run.state.ready
        if run.running or not ready:
            return
        idx = max(ready, key=lambda i: run.plan.nodes[i].id)
        ready.remove(idx)
        self.order.append(run.plan.nodes[idx].id)
        yield idx

    async def idle(self, run: PolicyHost) -> RunStatus | None:
        return RunStatus.WAITING if run.state.interrupts else RunStatus.COMPLETED

    def node_input(self, run: PolicyHost, idx: int) -> tuple[Any, dict[str, Any], Scope]:
        value, ports = run.state.inputs_of(idx)
        return value, ports, run

    def on_outcome(self, run: PolicyHost, idx: int, outcome: NodeOutcome) -> None:
        self.outcomes.append(f"{run.plan.nodes[idx].id}:{outcome.kind}")

    def on_delta(self, run: PolicyHost, idx: int, delta: NodeDelta) -> None:
        pass

    def restore(self, run: PolicyHost, checkpoint: Checkpoint) -> None:
        pass

    def cancel(self) -> None:
        pass

    def usage(self) -> Mapping[str, int] | None:
        return {"policy_tokens": 7}

    def decisions(self) -> list[dict[str, Any]]:
        return [{"order": list(self.order)}]


async def test_a_scheduling_policy_plugs_in_without_subclassing() -> None:
    doc = flow(
        [
            echo("a", value=1),
            echo("b", value=2),
            echo("c", value=3),
            echo("d", value=4),
            {"id": "j", "type": "merge"},
        ],
        [("a", "b"), ("a", "c"), ("a", "d"), ("b", "j"), ("c", "j"), ("d", "j")],
    )
    compiled = plait.load_flow(doc)
    policy = HighestIdFirst()
    runner = Runner(compiled.plan, "custom", flow_id=compiled.id, policy=policy)
    result = await runner.execute(ev.RunStarted(compiled.id, {}))
    assert result.status == "completed"
    assert policy.order == ["a", "d", "c", "b", "j"]
    assert policy.outcomes == ["a:ok", "d:ok", "c:ok", "b:ok", "j:ok"]
    assert result.usage == {"policy_tokens": 7}
    assert result.decisions == [{"order": ["a", "d", "c", "b", "j"]}]
    started = [e.node_id for e in result.events if e.type == "node_started"]
    assert started == policy.order


# ------------------------------------------------------------------------------ services
async def test_the_run_services_reach_nodes_and_sub_flows_one_level_deeper() -> None:
    source = object()
    child = flow(
        [{"id": "see", "type": "test_sees_services"}, {"id": "out", "type": "output"}], [("see", "out")]
    )
    parent = flow(
        [
            {"id": "see", "type": "test_sees_services"},
            {"id": "sub", "type": "subflow", "config": {"flow": "child"}},
        ]
    )
    services = RunServices(component_source=source)  # type: ignore[arg-type]
    result = await plait.run(parent, services=services, flows={"child": child})
    assert result.status == "completed", result.error
    assert result.nodes["see"].output == {"source": source, "depth": 0}
    assert result.nodes["sub"].output == {"out": {"source": source, "depth": 1}}


async def test_two_runs_in_one_process_use_their_own_services() -> None:
    doc = flow([{"id": "see", "type": "test_sees_services"}])
    one, two = object(), object()
    a, b = await asyncio.gather(
        plait.run(doc, services=RunServices(component_source=one)),  # type: ignore[arg-type]
        plait.run(doc, services=RunServices(component_source=two)),  # type: ignore[arg-type]
    )
    assert a.nodes["see"].output["source"] is one
    assert b.nodes["see"].output["source"] is two


# ------------------------------------------------------------------------------ cancel
async def test_a_run_is_cancelled_through_its_own_cancel_source() -> None:
    doc = flow([echo("slow", sleep_s=5)])
    cancels = LocalCancels()
    task = asyncio.create_task(plait.run(doc, run_id="mine", services=RunServices(cancels=cancels)))
    for _ in range(100):
        if "mine" in cancels.active():
            break
        await asyncio.sleep(0.01)
    assert plait.cancel("mine") is False  # not watching the process default
    assert cancels.cancel("mine")
    result = await asyncio.wait_for(task, 2)
    assert result.status == "cancelled"
    assert cancels.active() == set()


# ------------------------------------------------------------------------------ plan cache
def test_the_plan_cache_is_the_owners() -> None:
    doc = flow([echo("a", value=1)])
    cache = plait.PlanCache(size=2)
    first = cache.load(doc)
    assert cache.load(dict(doc)) is first
    assert cache.load(doc, key=("flow", 1)) is not first  # the owner's own key
    cache.load({**doc, "id": "other"})
    assert len(cache) == 2 and cache.get(plait.engine.content_hash(doc)) is None  # least recent dropped


# ------------------------------------------------------------------------------ fast paths
def test_fast_event_records_equal_the_dataclass_ones() -> None:
    fast = node_finished({"x": 1}, 1.5, 2, ["yes"], {"input_tokens": 3})
    slow = ev.NodeFinished(True, {"x": 1}, None, 1.5, 2, ["yes"], {"input_tokens": 3})
    assert type(fast) is ev.NodeFinished and fast.wire() == slow.wire()
    assert [getattr(fast, f) for f in slow.__slots__] == [getattr(slow, f) for f in slow.__slots__]


async def test_fast_event_envelopes_equal_the_dataclass_ones() -> None:
    result = await plait.run(flow([echo("a", value=1)]))
    for event in result.events:
        again = ev.Event(event.seq, event.type, event.run_id, event.ts, event.node_id, event.data)
        assert event == again and event.to_dict() == again.to_dict()


_property_schema = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])
        | st.lists(st.sampled_from(["string", "integer", "null"]), min_size=1, max_size=2),
        "description": st.text(max_size=3),
        "format": st.sampled_from(["email", "date"]),
    },
)
_schema = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), _property_schema, max_size=3),
    },
    optional={
        "required": st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3),
        "additionalProperties": st.booleans(),
    },
)
_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(_schema, st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _value, max_size=4))
def test_the_fast_input_check_never_accepts_what_the_validator_rejects(
    schema: dict[str, Any], data: dict[str, Any]
) -> None:
    check: Callable[[dict[str, Any]], bool] | None = simple_object_check(schema)
    assert check is not None
    if check(data):
        assert Draft202012Validator(schema).is_valid(data), (schema, data)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"a": {"enum": [1, 2]}}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "array"},
        {"allOf": [{"type": "object"}]},
    ],
)
def test_other_schemas_get_the_full_validator(schema: dict[str, Any]) -> None:
    assert simple_object_check(schema) is None


async def test_inputs_the_fast_check_is_unsure_of_still_get_the_validators_answer() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    doc = {**flow([{"id": "start", "type": "start"}]), "inputs": schema}
    assert (await plait.run(doc, {"n": 2.0})).status == "completed"  # a float that is an integer
    with pytest.raises(plait.RunInputError, match="required"):
        await plait.run(doc, {})
