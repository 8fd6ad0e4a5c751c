"""plait: a visual, durable orchestrator for AI agent flows.

import plait
flow = plait.load_flow("examples/branching.json")
result = plait.run_sync(flow, {"query": "hello"})
print(result.status, result.outputs)
"""

from plait.engine.api import (
    Flow,
    RunInputError,
    RunNotFoundError,
    cancel,
    load_flow,
    resume,
    resume_sync,
    retry,
    retry_sync,
    run,
    run_sync,
    validate_inputs,
)
from plait.engine.checkpoint import Checkpoint, Checkpointer, InMemoryCheckpointer, NodeDelta, RunRecord
from plait.engine.events import Event
from plait.engine.runner import NodeRun, ResumeError, RunResult
from plait.nodes import Node, NodeContext, NodeError, NodeResult, register
from plait.spec.problems import FlowValidationError, Problem

__version__ = "0.1.0"

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "Event",
    "Flow",
    "FlowValidationError",
    "InMemoryCheckpointer",
    "Node",
    "NodeContext",
    "NodeDelta",
    "NodeError",
    "NodeResult",
    "NodeRun",
    "Problem",
    "ResumeError",
    "RunInputError",
    "RunNotFoundError",
    "RunRecord",
    "RunResult",
    "cancel",
    "load_flow",
    "register",
    "resume",
    "resume_sync",
    "retry",
    "retry_sync",
    "run",
    "run_sync",
    "validate_inputs",
]
