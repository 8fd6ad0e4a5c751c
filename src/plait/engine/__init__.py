"""The engine: compiles a flow into a plan and runs it, durably, under a scheduling policy.

It knows nothing of HTTP or SQL: it talks to a `Checkpointer`, event sinks and a `CancelSource`,
small protocols it owns, and gets everything else a run needs in one `RunServices`. The public
calls are `run`, `resume`, `retry` and `cancel` (`plait.engine.api`); the scheduler is
`plait.engine.runner`, its parts are described there.
"""

from plait.engine.api import (
    FlowLoader,
    FlowSource,
    SubflowResolver,
    cancel,
    default_cancels,
    resume,
    resume_sync,
    retry,
    retry_sync,
    run,
    run_sync,
)
from plait.engine.cancel import CancelSource, LocalCancels
from plait.engine.checkpoint import Checkpoint, Checkpointer, InMemoryCheckpointer, NodeDelta, RunRecord
from plait.engine.errors import ResumeError, RunInputError, RunNotFoundError
from plait.engine.events import Event, EventData, EventSink
from plait.engine.flow import Flow, FlowLike, PlanCache, content_hash, load_flow, validate_inputs
from plait.engine.invoke import NodeOutcome, OutcomeKind
from plait.engine.policy import DataflowPolicy, PolicyHost, SchedulingPolicy
from plait.engine.policy_edge import EdgeLLMPolicy
from plait.engine.results import NodeRun, RunResult
from plait.engine.services import FlowResolver, ProviderSource, RunServices, SubflowCall
from plait.engine.status import NodeStatus, RunStatus

__all__ = [
    "CancelSource",
    "Checkpoint",
    "Checkpointer",
    "DataflowPolicy",
    "EdgeLLMPolicy",
    "Event",
    "EventData",
    "EventSink",
    "Flow",
    "FlowLike",
    "FlowLoader",
    "FlowResolver",
    "FlowSource",
    "InMemoryCheckpointer",
    "LocalCancels",
    "NodeDelta",
    "NodeOutcome",
    "NodeRun",
    "NodeStatus",
    "OutcomeKind",
    "PlanCache",
    "PolicyHost",
    "ProviderSource",
    "ResumeError",
    "RunInputError",
    "RunNotFoundError",
    "RunRecord",
    "RunResult",
    "RunServices",
    "RunStatus",
    "SchedulingPolicy",
    "SubflowCall",
    "SubflowResolver",
    "cancel",
    "content_hash",
    "default_cancels",
    "load_flow",
    "resume",
    "resume_sync",
    "retry",
    "retry_sync",
    "run",
    "run_sync",
    "validate_inputs",
]
