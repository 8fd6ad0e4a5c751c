"""Test-only node types registered in the default registry (names start with `test_`), and helpers."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from pydantic import BaseModel, ConfigDict

from plait.nodes import Node, NodeContext, NodeError, NodeResult, default_registry

CALLS: dict[str, int] = {}


class EchoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: Any = None
    sleep_s: float = 0.0
    fail_times: int = 0  # fail the first N calls (per node id) with a retryable error
    ports: list[str] | None = None  # fire only these ports (branching)
    all_ports: list[str] = ["out"]


class EchoNode(Node):
    """Async node: optional sleep, scripted failures, chosen ports; counts calls per node id."""

    type_name = "test_echo"
    Config = EchoConfig
    input_ports = ("*",)

    @classmethod
    def output_ports(cls, config: BaseModel) -> list[str]:
        return list(config.all_ports)  # type: ignore[attr-defined]

    async def run(self, ctx: NodeContext) -> Any:
        cfg: EchoConfig = self.config  # type: ignore[assignment]
        CALLS[ctx.node_id] = CALLS.get(ctx.node_id, 0) + 1
        if cfg.sleep_s:
            await asyncio.sleep(cfg.sleep_s)
        if CALLS[ctx.node_id] <= cfg.fail_times:
            raise NodeError(f"scripted failure {CALLS[ctx.node_id]}")
        value = ctx.input if cfg.value is None else ctx.render(cfg.value)
        return NodeResult(value, ports=tuple(cfg.ports) if cfg.ports is not None else None)


class NoopNode(Node):
    type_name = "test_noop"
    inline = True
    input_ports = ("*",)

    def execute(self, ctx: NodeContext) -> Any:
        return None


for cls in (EchoNode, NoopNode):
    if default_registry().get(cls.type_name) is None:
        default_registry().register(cls)


def flow(
    nodes: list[dict[str, Any]], edges: list[tuple[str, str] | dict[str, Any]] = (), **extra: Any
) -> dict:
    """Build a flow dict tersely: edges as (source, target) or full dicts."""
    return {
        "schema": "plait/flow@1",
        "id": extra.pop("id", "t"),
        "nodes": nodes,
        "edges": [e if isinstance(e, dict) else {"source": e[0], "target": e[1]} for e in edges],
        **extra,
    }


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for servers the tests start: plait serve, redis, HTTP)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
