"""Flows with a map and a loop whose body counts its runs (`CALLS["e"]`): the item checkpoint
tests of the engine and of the SQL checkpointer share them."""

from __future__ import annotations

from typing import Any

from plait_testing import flow


def map_flow(n: int, *, concurrency: int = 1) -> dict[str, Any]:
    return flow(
        [
            {
                "id": "m",
                "type": "map",
                "config": {
                    "items": list(range(n)),
                    "max_concurrency": concurrency,
                    "body": {
                        "nodes": [
                            {"id": "e", "type": "test_echo", "config": {"value": "{{item * 10 + index}}"}},
                            {"id": "o", "type": "output", "config": {"value": "{{e}}"}},
                        ],
                        "edges": [{"source": "e", "target": "o"}],
                    },
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{m}}"}},
        ],
        [("m", "out")],
    )


def loop_flow(n: int) -> dict[str, Any]:
    return flow(
        [
            {
                "id": "l",
                "type": "loop",
                "config": {
                    "max_iterations": n,
                    "variables": {"count": 1},
                    "body": {
                        "nodes": [
                            {
                                "id": "add",
                                "type": "assign",
                                "config": {"assignments": [{"variable": "count", "op": "*=", "value": 2}]},
                            },
                            {
                                "id": "e",
                                "type": "test_echo",
                                "config": {"value": "{{vars.count + index}}"},
                            },
                            {"id": "o", "type": "output", "config": {"value": "{{e}}"}},
                        ],
                        "edges": [{"source": "add", "target": "e"}, {"source": "e", "target": "o"}],
                    },
                },
            },
            {"id": "out", "type": "output", "config": {"value": "{{l.result}}"}},
            {"id": "total", "type": "output", "config": {"value": "{{vars.count}}"}},
        ],
        [("l", "out"), ("l", "total")],
    )
