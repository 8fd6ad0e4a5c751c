"""Built-in node types; importing this package registers them all."""

from plait.nodes.builtin import (  # noqa: F401  # noqa: F401
    branching,
    code,  # noqa: F401
    data,
    flow_control,
    http,
    human,
    io,
    timing,
    variables,
)
