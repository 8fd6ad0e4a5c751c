from __future__ import annotations

import asyncio
import time

import pytest

import plait
from plait.engine.checkpoint import InMemoryCheckpointer
from plait_testing import CALLS, flow


def echo(id_: str, **config) -> dict:
    return {"id": id_, "type": "test_echo", "config": config}


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


async def test_chain_passes_values_and_orders_events():
    doc = flow(
        [
            {"id": "start", "type": "start"},
            echo("a", value="{{inputs.x}}-a"),
            echo("b", value="{{a}}-b"),
            {"id": "out", "type": "output", "config": {"name": "result"}},
        ],
        [("start", "a"), ("a", "b"), ("b", "out")],
    )
    result = await plait.run(doc, {"x": "go"})
    assert result.status == "completed"
    assert result.outputs == {"result": "go-a-b"}
    types = [(e.type, e.node_id) for e in result.events]
    assert types[0] == ("run_started", None)
    assert types[-1] == ("run_finished", None)
    assert [e.seq for e in result.events] == list(range(1, len(result.events) + 1))
    finished = [n for t, n in types if t == "node_finished"]
    assert finished == ["start", "a", "b", "out"]
    assert types.index(("node_finished", "a")) < types.index(("node_started", "b"))


async def test_branch_prunes_and_join_does_not_hang():
    doc = flow(
        [
            echo("s", ports=["yes"], all_ports=["yes", "no"], value=1),
            echo("y", value="Y"),
            echo("n", value="N"),
            echo("after_n", value="AN"),
            {"id": "join", "type": "merge"},
            {"id": "out", "type": "output"},
        ],
        [
            {"source": "s", "source_port": "yes", "target": "y"},
            {"source": "s", "source_port": "no", "target": "n"},
            ("n", "after_n"),
            ("y", "join"),
            ("after_n", "join"),
            ("join", "out"),
        ],
    )
    result = await plait.run(doc)
    assert result.status == "completed"
    assert result.nodes["n"].status == "skipped"
    assert result.nodes["after_n"].status == "skipped"
    assert result.outputs == {"out": "Y"}
    assert "n" not in CALLS and "after_n" not in CALLS


async def test_max_concurrency_is_respected():
    nodes = [echo("root", value=0)] + [echo(f"w{i}", sleep_s=0.05, value=i) for i in range(6)]
    doc = flow(nodes, [("root", f"w{i}") for i in range(6)], settings={"max_concurrency": 2})
    running = peak = 0

    def on_event(event):
        nonlocal running, peak
        if event.node_id and event.node_id.startswith("w"):
            if event.type == "node_started":
                running += 1
                peak = max(peak, running)
            elif event.type == "node_finished":
                running -= 1

    result = await plait.run(doc, on_event=on_event)
    assert result.status == "completed"
    assert peak == 2


async def test_retries_count_absolute_attempts():
    doc = flow([{**echo("flaky", fail_times=2, value="ok"), "retry": {"max_attempts": 3, "delay_s": 0.01}}])
    result = await plait.run(doc)
    assert result.status == "completed"
    assert result.nodes["flaky"].attempts == 3
    assert CALLS["flaky"] == 3
    assert sum(e.type == "node_retrying" for e in result.events) == 2


async def test_retries_exhausted_fail_the_run_with_the_node_error():
    doc = flow([{**echo("flaky", fail_times=5), "retry": {"max_attempts": 2}}])
    result = await plait.run(doc)
    assert result.status == "failed"
    assert CALLS["flaky"] == 2
    assert "flaky" in result.error and "scripted failure 2" in result.error


async def test_node_timeout_from_node_config(monkeypatch):
    doc = flow([{**echo("slow", sleep_s=5), "timeout_s": 0.1}])
    t0 = time.perf_counter()
    result = await plait.run(doc)
    assert time.perf_counter() - t0 < 2
    assert result.status == "failed"
    assert "timed out after 0.1s" in result.error


async def test_node_timeout_from_environment(monkeypatch):
    monkeypatch.setenv("PLAIT_NODE_TIMEOUT_S", "0.1")
    result = await plait.run(flow([echo("slow", sleep_s=5)]))
    assert result.status == "failed" and "timed out after 0.1s" in result.error


async def test_cancel_stops_running_nodes_quickly():
    doc = flow([echo("a", sleep_s=30), echo("b", sleep_s=30)])
    task = asyncio.create_task(plait.run(doc, run_id="cancel-me"))
    await asyncio.sleep(0.1)
    t0 = time.perf_counter()
    assert plait.cancel("cancel-me")
    result = await task
    assert time.perf_counter() - t0 < 0.5
    assert result.status == "cancelled"
    assert plait.cancel("cancel-me") is False


async def test_run_timeout_fails_the_run():
    result = await plait.run(flow([echo("a", sleep_s=5)], settings={"timeout_s": 0.1}))
    assert result.status == "failed" and "timeout" in result.error


async def test_schema_enforcement_on_inputs_and_outputs():
    doc = flow(
        [
            echo("a", value={"n": "x"}),
            {**echo("b"), "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        ],
        [("a", "b")],
    )
    result = await plait.run(doc)
    assert result.status == "failed"
    assert "input does not match input_schema" in result.error and "n" in result.error
    doc = flow([{**echo("a", value=3), "output_schema": {"type": "string"}}])
    result = await plait.run(doc)
    assert result.status == "failed" and "output_schema" in result.error


async def test_run_inputs_are_validated_with_field_names():
    doc = flow(
        [{"id": "start", "type": "start"}],
        inputs={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )
    with pytest.raises(plait.RunInputError) as info:
        await plait.run(doc, {})
    assert info.value.problems[0].field == "inputs.n"
    with pytest.raises(plait.RunInputError, match="not of type 'integer'"):
        await plait.run(doc, {"n": "x"})


async def test_input_defaults_are_applied():
    doc = flow(
        [
            {"id": "start", "type": "start"},
            {"id": "o", "type": "output", "config": {"value": "{{inputs.n}}"}},
        ],
        [("start", "o")],
        inputs={"type": "object", "properties": {"n": {"type": "integer", "default": 7}}},
    )
    assert (await plait.run(doc)).outputs == {"o": 7}


async def test_vars_env_and_sys_references():
    doc = flow(
        [
            {
                "id": "set",
                "type": "assign",
                "config": {"assignments": [{"variable": "n", "op": "+=", "value": 2}]},
            },
            {
                "id": "o",
                "type": "output",
                "config": {"value": "{{vars.n}} {{env.TOKEN}} {{sys.query}} {{sys.run_id}}"},
            },
        ],
        [("set", "o")],
        variables={"n": 1},
    )
    result = await plait.run(doc, {"query": "q"}, env={"TOKEN": "secret"}, run_id="r1")
    assert result.outputs == {"o": "3 secret q r1"}


async def test_blocking_interrupt_waits_then_resumes():
    doc = flow(
        [
            {
                "id": "ask",
                "type": "human",
                "config": {
                    "message": "ok?",
                    "actions": ["yes", "no"],
                    "fields": [{"name": "why", "required": False}],
                },
            },
            echo("side", sleep_s=0.01, value="side"),
            {"id": "y", "type": "output", "config": {"value": "yes:{{ask.why}}"}},
            {"id": "n", "type": "output", "config": {"value": "no"}},
        ],
        [
            {"source": "ask", "source_port": "yes", "target": "y"},
            {"source": "ask", "source_port": "no", "target": "n"},
        ],
    )
    cp = InMemoryCheckpointer()
    first = await plait.run(doc, checkpointer=cp, run_id="h1")
    assert first.status == "waiting"
    assert first.interrupt["node_id"] == "ask"
    assert first.interrupt["payload"]["actions"] == ["yes", "no"]
    with pytest.raises(plait.NodeError, match="unknown action"):
        await plait.resume(doc, "h1", {"action": "maybe"}, checkpointer=cp)
    second = await plait.resume(doc, "h1", {"action": "yes", "values": {"why": "fine"}}, checkpointer=cp)
    assert second.status == "completed"
    assert second.outputs == {"y": "yes:fine"}
    assert second.nodes["n"].status == "skipped"
    assert CALLS["side"] == 1  # finished before the pause, not run again


async def test_non_blocking_interrupt_lets_other_branches_finish():
    doc = flow(
        [
            {"id": "ask", "type": "human", "config": {"blocking": False}},
            echo("work", sleep_s=0.05, value="done"),
            {"id": "o", "type": "output"},
        ],
        [("work", "o")],
    )
    cp = InMemoryCheckpointer()
    first = await plait.run(doc, checkpointer=cp, run_id="nb")
    assert first.status == "waiting"
    assert first.nodes["o"].status == "ok"
    second = await plait.resume(doc, "nb", {}, checkpointer=cp)
    assert second.status == "completed"
    assert CALLS["work"] == 1


async def test_expired_human_task_fails_the_node():
    doc = flow([{"id": "ask", "type": "human", "config": {"timeout_s": 0.05}}])
    cp = InMemoryCheckpointer()
    await plait.run(doc, checkpointer=cp, run_id="exp")
    await asyncio.sleep(0.1)
    result = await plait.resume(doc, "exp", {}, checkpointer=cp)
    assert result.status == "failed"
    assert result.nodes["ask"].status == "error" and "expired" in result.error


async def test_restore_after_crash_reruns_only_unfinished_nodes():
    doc = flow(
        [
            echo("a", value=1),
            echo("b", value="{{a}}"),
            echo("c", value="{{b}}"),
            {"id": "o", "type": "output", "config": {"value": "{{c}}"}},
        ],
        [("a", "b"), ("b", "c"), ("c", "o")],
    )
    cp = InMemoryCheckpointer()
    full = await plait.run(doc, checkpointer=cp, run_id="k")
    # a and b were committed before the "crash" (each task node: a `running` delta, then `ok`)
    crashed = cp.truncated("k", 4)
    CALLS.clear()
    resumed = await plait.resume(doc, "k", checkpointer=crashed)
    assert resumed.outputs == full.outputs == {"o": 1}
    assert "a" not in CALLS and "b" not in CALLS and CALLS["c"] == 1


async def test_retry_from_node_reuses_upstream_outputs():
    doc = flow(
        [
            echo("a", value="A"),
            echo("b", value="{{a}}B"),
            echo("c", value="{{b}}C"),
            {"id": "o", "type": "output", "config": {"value": "{{c}}"}},
        ],
        [("a", "b"), ("b", "c"), ("c", "o")],
    )
    cp = InMemoryCheckpointer()
    await plait.run(doc, checkpointer=cp, run_id="orig")
    CALLS.clear()
    again = await plait.retry(doc, "orig", "b", checkpointer=cp, new_run_id="again")
    assert again.status == "completed" and again.outputs == {"o": "ABC"}
    assert "a" not in CALLS and CALLS["b"] == 1 and CALLS["c"] == 1
    assert again.nodes["a"].reused is True


async def test_loop_map_and_subflow_example_semantics(tmp_path):
    child = tmp_path / "child.json"
    child.write_text(
        '{"schema": "plait/flow@1", "id": "child", "nodes": ['
        '{"id": "o", "type": "output", "config": {"name": "twice", "value": "{{inputs.v}}{{inputs.v}}"}}]}'
    )
    parent = tmp_path / "parent.json"
    parent.write_text(
        '{"schema": "plait/flow@1", "id": "parent", "nodes": ['
        '{"id": "sub", "type": "subflow", "config": {"flow": "child.json", "inputs": {"v": "ab"}}},'
        '{"id": "o", "type": "output", "config": {"value": "{{sub.twice}}"}}],'
        '"edges": [{"source": "sub", "target": "o"}]}'
    )
    result = await plait.run(plait.load_flow(parent))
    assert result.status == "completed" and result.outputs == {"o": "abab"}


async def test_map_preserves_order_and_reports_item_errors():
    doc = flow(
        [
            {
                "id": "m",
                "type": "map",
                "config": {
                    "items": [3, 1, 2],
                    "max_concurrency": 3,
                    "body": {
                        "nodes": [
                            echo("e", sleep_s=0, value="{{item}}"),
                            {"id": "o", "type": "output", "config": {"value": "{{e}}"}},
                        ],
                        "edges": [{"source": "e", "target": "o"}],
                    },
                },
            }
        ]
    )
    result = await plait.run(doc)
    assert result.outputs == {} and result.nodes["m"].output == [3, 1, 2]
    bad = flow([{"id": "m", "type": "map", "config": {"items": "{{inputs.x}}", "body": {"nodes": []}}}])
    result = await plait.run(bad, {"x": 5})
    assert result.status == "failed" and "items must be a list" in result.error


def test_dict_documents_are_compiled_once():
    # The cache belongs to whoever owns the flows (issue 10): a PlanCache they keep, keyed by
    # content; load_flow itself compiles every time.
    doc = flow([echo("a", value=1)])
    cache = plait.PlanCache()
    assert cache.load(doc) is cache.load(dict(doc))
    assert cache.load({**doc, "id": "other"}) is not cache.load(doc)
    assert plait.load_flow(doc) is not plait.load_flow(doc)


async def test_resume_without_data_keeps_waiting_nodes_waiting():
    doc = flow([{"id": "ask", "type": "human", "config": {"blocking": False}}, echo("work", value=1)])
    cp = InMemoryCheckpointer()
    await plait.run(doc, checkpointer=cp, run_id="w")
    again = await plait.resume(doc, "w", checkpointer=cp)
    assert again.status == "waiting" and again.interrupt["node_id"] == "ask"
    done = await plait.resume(doc, "w", {"action": "submit"}, checkpointer=cp)
    assert done.status == "completed"


async def test_subflow_by_id_from_an_async_loader():
    child = flow(
        [{"id": "o", "type": "output", "config": {"name": "v", "value": "{{inputs.x}}!"}}], id="child"
    )
    parent = flow(
        [
            {"id": "sub", "type": "subflow", "config": {"flow": "child", "inputs": {"x": "hi"}}},
            {"id": "o", "type": "output", "config": {"value": "{{sub.v}}"}},
        ],
        [("sub", "o")],
    )

    async def loader(ref):
        return child if ref == "child" else None

    assert (await plait.run(parent, flows=loader)).outputs == {"o": "hi!"}
    missing = await plait.run(parent, flows={})
    assert missing.status == "failed" and "sub-flow 'child' not found" in missing.error


def _asking_child() -> dict:
    """A child flow that asks two people in turn, then outputs both answers."""
    return flow(
        [
            {
                "id": "ask",
                "type": "human",
                "config": {
                    "message": "Amount for {{inputs.who}}?",
                    "fields": [{"name": "amount", "type": "number"}],
                },
            },
            {"id": "check", "type": "human", "config": {"message": "Sure?", "actions": ["yes", "no"]}},
            {"id": "o", "type": "output", "config": {"name": "amount", "value": "{{ask.amount}}"}},
            {"id": "o2", "type": "output", "config": {"name": "checked", "value": "{{check.action}}"}},
        ],
        [
            {"source": "ask", "source_port": "submit", "target": "check"},
            {"source": "check", "source_port": "yes", "target": "o"},
            {"source": "check", "source_port": "yes", "target": "o2"},
        ],
        id="child",
    )


async def test_a_subflow_waits_for_people_through_its_parent():
    """The child's tasks become the parent's (the subflow node waits); answers resume the child
    from the state the parent's checkpoint kept, however many times it asks."""
    parent = flow(
        [
            {"id": "sub", "type": "subflow", "config": {"flow": "child", "inputs": {"who": "Ada"}}},
            {
                "id": "o",
                "type": "output",
                "config": {"name": "total", "value": "{{sub.amount}} ({{sub.checked}})"},
            },
        ],
        [("sub", "o")],
    )
    cp = InMemoryCheckpointer()
    first = await plait.run(parent, checkpointer=cp, flows={"child": _asking_child()})
    assert first.status == "waiting", first.error
    task = first.interrupt
    assert task["node_id"] == "sub" and task["kind"] == "human"
    assert task["payload"]["message"] == "Amount for Ada?"
    assert [f["name"] for f in task["payload"]["fields"]] == ["amount"]
    assert task["payload"]["subflow"]["node"] == "ask"

    with pytest.raises(Exception, match="amount: must be a number"):
        await plait.resume(
            parent, first.run_id, {"amount": "lots"}, checkpointer=cp, flows={"child": _asking_child()}
        )
    second = await plait.resume(
        parent, first.run_id, {"amount": "12.5"}, checkpointer=cp, flows={"child": _asking_child()}
    )
    assert second.status == "waiting", second.error
    assert second.interrupt["payload"]["message"] == "Sure?" and second.interrupt["payload"]["actions"] == [
        "yes",
        "no",
    ]
    third = await plait.resume(
        parent, first.run_id, {"action": "yes"}, checkpointer=cp, flows={"child": _asking_child()}
    )
    assert third.status == "completed", third.error
    assert third.outputs == {"total": "12.5 (yes)"}
    assert third.nodes["sub"].output == {"amount": 12.5, "checked": "yes"}
    # The child's node events are in the parent's log as sub/<node>; its tasks only as the parent's.
    log = [(e.type, e.node_id) for e in (await cp.load(first.run_id)).events]
    assert ("node_finished", "sub/o") in log and ("node_started", "sub/check") in log
    assert ("waiting", "sub") in log and not any(t == "waiting" and n.startswith("sub/") for t, n in log if n)
    assert not any(t in ("run_started", "run_finished") and n for t, n in log)


async def test_a_waiting_subflow_makes_its_parent_wait():
    parent = flow([{"id": "sub", "type": "subflow", "config": {"flow": "child", "inputs": {"who": "x"}}}])
    result = await plait.run(parent, flows={"child": _asking_child()})
    assert (
        result.status == "waiting" and result.interrupt["node_id"] == "sub"
    )  # resumable with a checkpointer


async def test_restore_numbers_events_on_from_last_seq_without_the_event_log():
    """The engine loads checkpoints without their events: seqs go on from `last_seq`."""
    cp = InMemoryCheckpointer()
    doc = flow(
        [
            {"id": "ask", "type": "human", "config": {"message": "ok?", "actions": ["yes"]}},
            {"id": "o", "type": "output", "config": {"value": "done"}},
        ],
        [{"source": "ask", "source_port": "yes", "target": "o"}],
    )
    first = await plait.run(doc, checkpointer=cp)
    assert first.status == "waiting"
    light = await cp.load(first.run_id, events=False)
    assert light is not None and light.events == [] and light.last_seq == first.events[-1].seq
    resumed = await plait.resume(doc, first.run_id, checkpointer=cp, node_id="ask", data={"action": "yes"})
    assert resumed.status == "completed" and resumed.outputs == {"o": "done"}
    seqs = [e.seq for e in (await cp.load(first.run_id)).events]
    assert seqs == sorted(set(seqs)) and seqs[0] == 1
    assert resumed.events[0].seq == first.events[-1].seq + 1


async def test_a_subflow_waiting_for_several_people_at_once_fails_clearly():
    ask = {"message": "?", "blocking": False}
    child = flow(
        [
            {"id": "a", "type": "human", "config": ask},
            {"id": "b", "type": "human", "config": ask},
        ],
        id="child",
    )
    parent = flow([{"id": "sub", "type": "subflow", "config": {"flow": "child"}}])
    result = await plait.run(parent, checkpointer=InMemoryCheckpointer(), flows={"child": child})
    assert result.status == "failed"
    assert "sub-flow 'child' waits for several people at once (a, b)" in result.error
    assert "make its human steps blocking" in result.error
