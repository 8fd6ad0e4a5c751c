from plait.nodes.base import InterruptRequest, Node, NodeContext, NodeError, NodeResult
from plait.nodes.registry import NodeRegistry, default_registry, register, registry

__all__ = [
    "InterruptRequest", "Node", "NodeContext", "NodeError", "NodeResult",
    "NodeRegistry", "default_registry", "register", "registry",
]
