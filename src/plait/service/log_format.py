"""Structured logs: one JSON object per line with the run and node a record belongs to
(`PLAIT_LOG_FORMAT=json`; `text`, the default, keeps uvicorn's and Python's usual lines).

A record's `run_id` and `node_id` come from the record itself (`log.info(..., extra={"run_id":
...})`) or else from two context variables. `LogContext`, an event sink of the service (see
`plait.service.observability`), sets them as the run's events go by: events are emitted in the
run's own asyncio task, and a node's task is created right after its `node_started`, so whatever a
run or one of its nodes logs carries its ids without the engine knowing about logging. (In the
run's own task, `node_id` is the node that started last until the next run-level event.)

Secrets are masked before any formatter sees a record (plait.net.redact.LogMasking masks records
as they are created; plait.api.log_redaction filters uvicorn's loggers), so this formatter needs
no masking of its own.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from plait.engine import events as ev
from plait.engine.events import Event

LOG_FORMAT_ENV = "PLAIT_LOG_FORMAT"
LOG_FORMATS = ("text", "json")
RUN_ID: ContextVar[str | None] = ContextVar("plait_run_id", default=None)
NODE_ID: ContextVar[str | None] = ContextVar("plait_node_id", default=None)
# uvicorn's loggers: their handlers get the formatter too.
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")

# The attributes every LogRecord has: anything else on a record came from `extra=`.
# (uvicorn adds `color_message`, its message with terminal colours.)
_RECORD_FIELDS = frozenset(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


def log_format_from_env() -> str:
    """`PLAIT_LOG_FORMAT` (text or json; default text)."""
    value = (os.environ.get(LOG_FORMAT_ENV) or "text").strip().lower()
    if value not in LOG_FORMATS:
        raise ValueError(f"{LOG_FORMAT_ENV} must be one of {', '.join(LOG_FORMATS)}, not {value!r}")
    return value


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "logger", "message", "run_id"?, "node_id"?, ...extra, "exc"?}` per line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        run_id = getattr(record, "run_id", None) or RUN_ID.get()
        if run_id:
            out["run_id"] = run_id
            node_id = getattr(record, "node_id", None) or NODE_ID.get()
            if node_id:
                out["node_id"] = node_id
        for key, value in record.__dict__.items():
            if key not in _RECORD_FIELDS and key not in out and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class LogContext:
    """An event sink: the run (and node) ids of the task emitting an event become the log context."""

    def observe(self, event: Event) -> None:
        if RUN_ID.get() != event.run_id:
            RUN_ID.set(event.run_id)
        node = event.node_id
        if node is not None and isinstance(event.data, ev.NodeStarted | ev.NodeToken | ev.NodeToolCall):
            NODE_ID.set(node)
        elif node is None and NODE_ID.get() is not None:
            NODE_ID.set(None)


def uvicorn_log_config(fmt: str, level: str = "info") -> dict[str, Any] | None:
    """uvicorn's `log_config` for `fmt`: None for text (uvicorn's default), else a dictConfig
    sending the root, plait's and uvicorn's loggers to stderr as JSON lines."""
    if fmt != "json":
        return None
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"default": handler},
        "root": {"handlers": ["default"], "level": level.upper()},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": True},
        },
    }


def install_log_format(fmt: str) -> None:
    """Format this process' log records as `fmt` from now on: with json, every handler of the root
    and uvicorn's loggers gets the JSON formatter (the root gets a stderr handler when it has none).
    Idempotent; text changes nothing."""
    if fmt != "json":
        return
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))
        if root.level > logging.INFO:
            root.setLevel(logging.INFO)
    for logger in (root, *(logging.getLogger(name) for name in UVICORN_LOGGERS)):
        for handler in logger.handlers:
            if not isinstance(handler.formatter, JsonFormatter):
                handler.setFormatter(JsonFormatter())


__all__ = [
    "LOG_FORMATS",
    "LOG_FORMAT_ENV",
    "NODE_ID",
    "RUN_ID",
    "JsonFormatter",
    "LogContext",
    "install_log_format",
    "log_format_from_env",
    "uvicorn_log_config",
]
