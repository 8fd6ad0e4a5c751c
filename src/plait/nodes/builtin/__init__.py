"""Built-in node types; importing this package registers them all."""

from plait.nodes.builtin import (  # noqa: F401
    agent,
    branching,
    code,
    component,
    data,
    flow_control,
    http,
    human,
    io,
    llm,
    timing,
    tool,
    variables,
)
