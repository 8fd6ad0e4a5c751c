"""Run use cases: start (sync / stream / background), status, list, cancel, resume, retry,
human tasks, crash recovery. `RunService` (facade.py) is what the front doors call; the parts it
is made of are listed there."""

from plait.service.runs.cancels import RunCancels
from plait.service.runs.facade import RunService
from plait.service.runs.launcher import Launch, Resume, Retry, RunLauncher, Start
from plait.service.runs.views import RUN_STATUSES, node_inputs, node_states, run_summary, task_view

__all__ = [
    "RUN_STATUSES",
    "Launch",
    "Resume",
    "Retry",
    "RunCancels",
    "RunLauncher",
    "RunService",
    "Start",
    "node_inputs",
    "node_states",
    "run_summary",
    "task_view",
]
