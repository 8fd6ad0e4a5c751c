"""Built-in node types; importing this package registers them all."""
from plait.nodes.builtin import flow_control, human, io  # noqa: F401
