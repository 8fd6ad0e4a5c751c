"""Property tests on random DAGs with random branch choices."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import plait
from plait.engine.checkpoint import InMemoryCheckpointer


@st.composite
def random_flows(draw):
    n = draw(st.integers(2, 12))
    nodes = []
    for i in range(n):
        fire = draw(st.sampled_from([None, ["a"], ["b"], ["a", "b"], []]))
        nodes.append(
            {
                "id": f"n{i}",
                "type": "test_echo",
                "config": {"value": f"v{i}", "all_ports": ["a", "b"], "ports": fire},
                "requires": [],
            }
        )
    edges = []
    for j in range(1, n):
        for i in draw(st.sets(st.integers(0, j - 1), max_size=3)):
            edges.append(
                {"source": f"n{i}", "target": f"n{j}", "source_port": draw(st.sampled_from(["a", "b"]))}
            )
    for j in range(2, n):
        if draw(st.booleans()) and draw(st.booleans()):
            nodes[j]["requires"] = [f"n{draw(st.integers(0, j - 1))}"]
    return {
        "schema": "plait/flow@1",
        "id": "prop",
        "nodes": nodes,
        "edges": edges,
        "settings": {"max_concurrency": draw(st.integers(1, 4))},
    }


def _summary(result: plait.RunResult) -> dict[str, tuple[str, object]]:
    return {k: (v.status, v.output) for k, v in result.nodes.items()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_flows())
def test_random_dags_resolve_every_node_once_in_order(doc):
    flow = plait.load_flow(doc)
    cp = InMemoryCheckpointer()
    result = asyncio.run(plait.run(flow, checkpointer=cp, run_id="p"))
    assert result.status == "completed"
    # Every node ends exactly once, as ok or skipped.
    assert set(result.nodes) == {n["id"] for n in doc["nodes"]}
    assert all(nr.status in ("ok", "skipped") for nr in result.nodes.values())
    ends = [e for e in result.events if e.type in ("node_finished", "node_skipped")]
    assert len(ends) == len(doc["nodes"]) == len({e.node_id for e in ends})
    position = {(e.type, e.node_id): i for i, e in enumerate(result.events)}
    fired = {n["id"]: (n["config"]["ports"]) for n in doc["nodes"]}
    deps = {n["id"]: [] for n in doc["nodes"]}
    for e in doc["edges"]:
        deps[e["target"]].append((e["source"], e["source_port"]))
    for n in doc["nodes"]:
        deps[n["id"]] += [(r, None) for r in n["requires"]]
    for node, sources in deps.items():
        status = result.nodes[node].status
        if ("node_started", node) in position:
            for src, _ in sources:  # never before its predecessors
                resolved = position.get(("node_finished", src), position.get(("node_skipped", src)))
                assert resolved is not None and resolved < position[("node_started", node)]
        if not sources:
            assert status == "ok"
            continue
        delivered = any(
            result.nodes[src].status == "ok" and (port is None or fired[src] is None or port in fired[src])
            for src, port in sources
        )
        assert status == ("ok" if delivered else "skipped"), (node, sources)

    # Restoring from any checkpoint and finishing gives the same outcome.
    n_deltas = len(cp.runs["p"].deltas)
    for cut in range(n_deltas + 1):
        resumed = asyncio.run(plait.resume(flow, "p", checkpointer=cp.truncated("p", cut)))
        assert resumed.status == "completed"
        assert _summary(resumed) == _summary(result)
