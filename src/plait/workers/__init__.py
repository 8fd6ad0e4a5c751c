"""Queue mode (PLAIT_EXECUTOR=celery): runs travel through Redis to `plait worker` processes.

    messages.py  QueuedRun: what one queue message asks (start, resume or retry a run)
    app.py       the Celery application both sides configure the same way (broker, acks, prefetch)
    queue.py     RunQueue: the API side, which sends messages
    worker.py    QueueWorker: the worker side, a Celery worker whose tasks hand each run to one
                 long-lived asyncio loop and acknowledge the message when the run stops
    transport.py kombu's Redis transport keeping one client per channel (not one per command)
    events.py    EventRelay / EventFeed: run events from the workers to the API servers' streams
                 through Redis pub/sub, once committed to the log (the source of truth)

This layer knows Celery and the message, not the service: the process that starts a worker
(`plait worker`) passes in what executes a message (the service's `RunControl.execute_queued`),
so the same engine runs through the same `RunLauncher`, under the run's lease.
"""

from plait.workers.messages import QUEUE_OWNER, QueuedRun
from plait.workers.queue import RunQueue

__all__ = ["QUEUE_OWNER", "QueuedRun", "RunQueue"]
