from plait.nodes.base import InterruptRequest, MultiInput, Node, NodeContext, NodeError, NodeResult
from plait.nodes.registry import NodeRegistry, default_registry, register, registry

__all__ = [
    "InterruptRequest",
    "MultiInput",
    "Node",
    "NodeContext",
    "NodeError",
    "NodeResult",
    "NodeRegistry",
    "default_registry",
    "register",
    "registry",
]
