#!/usr/bin/env python3
"""Fail on any import cycle among a package's modules, imports inside functions included.

    python scripts/check_import_cycles.py                 # plait, found through sys.path
    python scripts/check_import_cycles.py PKG --path DIR  # any package under DIR

A cycle works at run time only while the import order happens to suit it, and it hides a missing
layer; moving an import into a function to dodge one keeps the cycle. So every import counts here
(grimp, which import-linter uses, reads them all), except those under `if TYPE_CHECKING:`, which
never run. Every strongly connected component of more than one module is a failure, printed with
one concrete loop (each step's file and line) to start untangling it from. Exit status: 0 when
there is no cycle, 1 when there is one, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections import deque
from collections.abc import Iterable

import grimp


def import_graph(package: str) -> grimp.ImportGraph:
    """Every import among `package`'s modules (at any depth of a file, functions included).

    `from pkg import module` is an import of `pkg.module`, as Python resolves it.
    """
    return grimp.build_graph(package, exclude_type_checking_imports=True, cache_dir=None)


def adjacency(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    """Module -> the modules it imports directly."""
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit); components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def one_loop(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node] & members):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return [start]  # unreachable for a real component


def describe(graph: grimp.ImportGraph, loop: list[str]) -> list[str]:
    """`a -> b   (line 12: from b import x)` lines: where each import of the loop is written."""
    lines = []
    for importer, imported in zip(loop, loop[1:], strict=False):
        details = graph.get_import_details(importer=importer, imported=imported)
        where = ", ".join(f"line {d['line_number']}: {d['line_contents']}" for d in details[:2])
        lines.append(f"    {importer} -> {imported}   ({where})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default="plait")
    parser.add_argument("--path", action="append", default=[], help="a directory to find the package in")
    args = parser.parse_args(argv)
    sys.path[:0] = args.path
    try:
        graph = import_graph(args.package)
    except (ValueError, ModuleNotFoundError) as exc:
        print(f"cannot read package {args.package!r}: {exc}", file=sys.stderr)
        return 2
    edges = adjacency(graph)
    cycles = strongly_connected(edges)
    for component in cycles:
        print(f"import cycle ({len(component)} modules): {', '.join(component)}")
        print("  for example:")
        print("\n".join(describe(graph, one_loop(edges, component))))
    if cycles:
        print(
            f"{len(cycles)} import cycle(s) in {args.package}: move the shared code down a layer "
            "(docs/architecture.md, 'When a check fails')"
        )
        return 1
    print(f"no import cycles in {args.package} ({len(edges)} modules)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
