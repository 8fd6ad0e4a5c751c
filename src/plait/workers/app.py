"""The Celery application of queue mode, configured the same way by the API (which sends) and by
`plait worker` (which consumes).

A message is acknowledged late, when its run stops executing (`task_acks_late`), and given back
to the queue when its worker dies (`task_reject_on_worker_lost`); each worker thread takes one
message at a time (`worker_prefetch_multiplier=1`). Exactly-once execution does not rest on
Celery: the run's lease in the database decides which process executes it, so a message
delivered twice (Redis gives back unacknowledged messages after `visibility_timeout`) executes
nothing twice.
"""

from __future__ import annotations

from celery import Celery

from plait.workers.transport import TRANSPORT

TASK_NAME = "plait.run"  # the one task: execute a QueuedRun
QUEUE_NAME = "plait.runs"
# Redis gives an unacknowledged message to another worker after this long; the lease guards
# against a second execution, so this only bounds how long a message of a dead worker waits.
VISIBILITY_TIMEOUT_S = 3600


def celery_app(redis_url: str, *, name: str = "plait") -> Celery:
    """A Celery application on `redis_url` (the broker; results are not stored: the run's row is
    the result)."""
    app = Celery(name, broker=redis_url, set_as_current=False)
    app.conf.update(
        broker_transport=TRANSPORT,  # kombu's Redis transport, one client per channel
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUE_NAME,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        broker_connection_retry_on_startup=True,
        # A send to a Redis that is down fails after a few tries instead of hanging the request.
        task_publish_retry_policy={"max_retries": 3, "interval_start": 0.1, "interval_step": 0.2},
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    return app


__all__ = ["QUEUE_NAME", "TASK_NAME", "VISIBILITY_TIMEOUT_S", "celery_app"]
