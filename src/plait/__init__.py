"""plait: a visual, durable orchestrator for AI agent flows.

import plait
flow = plait.load_flow("examples/branching.json")
result = plait.run_sync(flow, {"query": "hello"})
print(result.status, result.outputs)
"""

from plait.engine import (
    Checkpoint,
    Checkpointer,
    Event,
    Flow,
    InMemoryCheckpointer,
    NodeDelta,
    NodeRun,
    NodeStatus,
    PlanCache,
    ResumeError,
    RunInputError,
    RunNotFoundError,
    RunRecord,
    RunResult,
    RunServices,
    RunStatus,
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
    "NodeStatus",
    "PlanCache",
    "Problem",
    "ResumeError",
    "RunInputError",
    "RunNotFoundError",
    "RunRecord",
    "RunResult",
    "RunServices",
    "RunStatus",
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
