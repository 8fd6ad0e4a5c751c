"""Engine overhead: plait vs LangGraph on the same workloads, same process, same machine.

Workloads (no-op nodes, so the figures are pure orchestration cost):
  chain_1000       a chain of 1,000 nodes
  fanout_1000      1 -> 1,000 parallel nodes -> join
  checkpointed_100 a chain of 100 nodes with a checkpointer (plait in-memory vs LangGraph
                   InMemorySaver with durability="sync")
  small_chain_10   the fixed cost of a small run: shipped inline nodes `start` -> 10 x `merge` ->
                   `output` (12 nodes) with an input schema, through `plait.run`, vs LangGraph
                   invoking a chain of as many no-op nodes; µs per node on both sides

For LangGraph the faster of `invoke` and `ainvoke` is used, so the ratio is conservative.
Each figure is the median of --repeat runs after one warm-up run.

    python bench/engine.py            # table
    python bench/engine.py --json     # one JSON object: {workload: {plait_us_per_node, langgraph_us_per_node, ratio}}
    python bench/engine.py --only small_chain_10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict

import plait
from plait.nodes import Node, NodeContext, default_registry


class BenchNoop(Node):
    """A pure no-op node: the cheapest thing a flow can do."""

    type_name = "bench_noop"
    description = "No-op (benchmarks)."
    inline = True
    input_ports = ("*",)

    def execute(self, ctx: NodeContext) -> Any:
        return None


class BenchNoopAsync(BenchNoop):
    """The same no-op as an async node: one asyncio task per node execution."""

    type_name = "bench_noop_async"
    inline = False

    async def run(self, ctx: NodeContext) -> Any:
        return None


for _cls in (BenchNoop, BenchNoopAsync):
    if default_registry().get(_cls.type_name) is None:
        default_registry().register(_cls)


# ---------------------------------------------------------------- plait workloads
def plait_chain(n: int, node_type: str = "bench_noop") -> plait.Flow:
    nodes = [{"id": f"n{i}", "type": node_type} for i in range(n)]
    edges = [{"source": f"n{i}", "target": f"n{i + 1}"} for i in range(n - 1)]
    return plait.load_flow({"schema": "plait/flow@1", "id": "chain", "nodes": nodes, "edges": edges})


def plait_small_chain(merges: int = 10) -> plait.Flow:
    """`start` -> `merges` x `merge` -> `output`: shipped inline nodes, an input schema."""
    ids = ["start", *(f"m{i}" for i in range(merges)), "out"]
    nodes = [{"id": "start", "type": "start"}]
    nodes += [{"id": i, "type": "merge"} for i in ids[1:-1]]
    nodes += [{"id": "out", "type": "output"}]
    edges = [{"source": a, "target": b} for a, b in zip(ids, ids[1:], strict=False)]
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    doc = {"schema": "plait/flow@1", "id": "small", "inputs": schema, "nodes": nodes, "edges": edges}
    return plait.load_flow(doc)


def plait_fanout(n: int, node_type: str = "bench_noop") -> plait.Flow:
    nodes = [{"id": "src", "type": node_type}, {"id": "join", "type": node_type}]
    nodes += [{"id": f"w{i}", "type": node_type} for i in range(n)]
    edges = [{"source": "src", "target": f"w{i}"} for i in range(n)]
    edges += [{"source": f"w{i}", "target": "join"} for i in range(n)]
    return plait.load_flow(
        {
            "schema": "plait/flow@1",
            "id": "fanout",
            "nodes": nodes,
            "edges": edges,
            "settings": {"max_concurrency": n},
        }
    )


# ---------------------------------------------------------------- LangGraph workloads
class _State(TypedDict, total=False):
    x: int
    hits: Annotated[list[int], operator.add]


def _lg_noop(state: _State) -> dict[str, Any]:
    return {}


def lg_chain(n: int, checkpointer: Any = None) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(_State)
    for i in range(n):
        g.add_node(f"n{i}", _lg_noop)
    g.add_edge(START, "n0")
    for i in range(n - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    g.add_edge(f"n{n - 1}", END)
    return g.compile(checkpointer=checkpointer)


def lg_fanout(n: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(_State)
    g.add_node("src", _lg_noop)
    g.add_node("join", _lg_noop)
    workers = [f"w{i}" for i in range(n)]
    for w in workers:
        g.add_node(w, _lg_noop)
        g.add_edge("src", w)
    g.add_edge(START, "src")
    g.add_edge(workers, "join")
    g.add_edge("join", END)
    return g.compile()


# ---------------------------------------------------------------- timing
def median_us(samples: list[float], nodes: int) -> float:
    return statistics.median(samples) / nodes * 1e6


async def time_async(fn: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    await fn()  # warm-up
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t0)
    return out


def time_sync(fn: Callable[[], Any], repeat: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


async def _plait_us(flow: plait.Flow, nodes: int, repeat: int, checkpointed: bool = False) -> float:
    async def once() -> None:
        cp = plait.InMemoryCheckpointer() if checkpointed else None
        result = await plait.run(flow, checkpointer=cp)
        assert result.status == "completed", result.error

    return median_us(await time_async(once, repeat), nodes)


async def _langgraph_us(graph: Any, nodes: int, repeat: int, checkpointed: bool = False) -> float:
    config: dict[str, Any] = {"recursion_limit": nodes + 10}
    counter = iter(range(10**9))

    def cfg() -> dict[str, Any]:
        if checkpointed:
            return {**config, "configurable": {"thread_id": f"t{next(counter)}"}}
        return config

    kwargs = {"durability": "sync"} if checkpointed else {}

    def sync_once() -> None:
        graph.invoke({"x": 0}, cfg(), **kwargs)

    async def async_once() -> None:
        await graph.ainvoke({"x": 0}, cfg(), **kwargs)

    sync_us = median_us(await asyncio.to_thread(time_sync, sync_once, repeat), nodes)
    async_us = median_us(await time_async(async_once, repeat), nodes)
    return min(sync_us, async_us)


async def _small_chain(repeat: int, merges: int = 10) -> dict[str, float]:
    """Per-run cost is tens of µs, so each sample times a batch of runs (same for LangGraph)."""
    flow = plait_small_chain(merges)
    nodes = merges + 2
    graph = lg_chain(nodes)
    config = {"recursion_limit": nodes + 10}
    batch, lg_batch = 200, 20

    async def plait_batch() -> None:
        for _ in range(batch):
            result = await plait.run(flow, {"q": "hi"})
            assert result.status == "completed" and result.outputs == {"out": {"q": "hi"}}, result.error

    def lg_sync_batch() -> None:
        for _ in range(lg_batch):
            graph.invoke({"x": 0}, config)

    async def lg_async_batch() -> None:
        for _ in range(lg_batch):
            await graph.ainvoke({"x": 0}, config)

    # Batches are short (tens of ms), so a moment of load elsewhere moves one sample a lot: take
    # more samples than the other workloads and interleave the two sides, so that load hits both.
    rounds = max(repeat * 3, 9)
    p_samples: list[float] = []
    lg_sync_samples: list[float] = []
    lg_async_samples: list[float] = []
    for _ in range(rounds):
        p_samples += await time_async(plait_batch, 1)
        lg_sync_samples += await asyncio.to_thread(time_sync, lg_sync_batch, 1)
        lg_async_samples += await time_async(lg_async_batch, 1)
    p = median_us(p_samples, nodes * batch)
    lg = min(median_us(lg_sync_samples, nodes * lg_batch), median_us(lg_async_samples, nodes * lg_batch))
    return {
        "plait_us_per_node": round(p, 2),
        "langgraph_us_per_node": round(lg, 2),
        "ratio": round(lg / p, 1),
        "plait_us_per_run": round(p * nodes, 1),
        "langgraph_us_per_run": round(lg * nodes, 1),
    }


async def measure(
    repeat: int, size: int = 1000, checkpointed_size: int = 100, only: set[str] | None = None
) -> dict[str, dict[str, float]]:
    from langgraph.checkpoint.memory import InMemorySaver

    results: dict[str, dict[str, float]] = {}
    workloads = [
        (f"chain_{size}", plait_chain(size), lambda: lg_chain(size), size, False),
        (f"fanout_{size}", plait_fanout(size), lambda: lg_fanout(size), size + 2, False),
        (
            f"checkpointed_{checkpointed_size}",
            plait_chain(checkpointed_size),
            lambda: lg_chain(checkpointed_size, InMemorySaver()),
            checkpointed_size,
            True,
        ),
    ]
    for name, flow, build_lg, nodes, checkpointed in workloads:
        if only and name not in only:
            continue
        p = await _plait_us(flow, nodes, repeat, checkpointed)
        lg = await _langgraph_us(build_lg(), nodes, repeat, checkpointed)
        results[name] = {
            "plait_us_per_node": round(p, 2),
            "langgraph_us_per_node": round(lg, 2),
            "ratio": round(lg / p, 1),
        }
    if not only or "small_chain_10" in only:
        results["small_chain_10"] = await _small_chain(repeat)
    if f"chain_{size}" in results:
        # Not part of the comparison: the same chain with async (task-per-node) no-op nodes.
        async_chain = await _plait_us(plait_chain(size, "bench_noop_async"), size, repeat)
        results[f"chain_{size}"]["plait_async_nodes_us_per_node"] = round(async_chain, 2)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--size", type=int, default=1000, help="nodes in the chain and the fan-out")
    parser.add_argument("--checkpointed-size", type=int, default=100)
    parser.add_argument("--only", nargs="+", metavar="WORKLOAD", help="measure only these workloads")
    args = parser.parse_args()
    only = set(args.only) if args.only else None
    results = asyncio.run(measure(args.repeat, args.size, args.checkpointed_size, only))
    if args.json:
        print(json.dumps(results))
        return
    print(f"{'workload':<20}{'plait µs/node':>16}{'LangGraph µs/node':>20}{'ratio':>8}")
    for name, r in results.items():
        print(
            f"{name:<20}{r['plait_us_per_node']:>16.2f}{r['langgraph_us_per_node']:>20.2f}{r['ratio']:>7.1f}x"
        )


if __name__ == "__main__":
    main()
