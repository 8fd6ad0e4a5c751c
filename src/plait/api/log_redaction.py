"""Credentials that travel in URLs stay out of the server's logs.

uvicorn's access and error logs print request paths with their query: an API key in a WebSocket
URL (`/ws?api_key=...`), a sign-in link (`/?token=...`) and a human task's token, which is the
credential of its form (`/api/v1/human-tasks/<token>`, the page `/tasks/<token>`). The filter masks
them in every record of those loggers before any handler formats it.
"""

from __future__ import annotations

import logging
import re

from plait.net.redact import MASK
from plait.net.redact import mask_url_credentials as mask_url_query

# Task tokens are path segments, not query parameters: the query rule does not see them.
_TASK_PATHS = (re.compile(r"(/human-tasks/)[^/\s?\"']+"), re.compile(r"(/tasks/)[^/\s?\"']+"))
LOGGERS = ("uvicorn.error", "uvicorn.access")


def mask_url_credentials(text: str) -> str:
    """`text` with credential query parameters (`?token=`, `?api_key=`...: plait.net.redact's
    rule) and human-task tokens in paths masked."""
    text = mask_url_query(text)
    for pattern in _TASK_PATHS:
        text = pattern.sub(rf"\g<1>{MASK}", text)
    return text


class RedactUrlCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(mask_url_credentials(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = mask_url_credentials(record.msg)
        return True


def install_log_redaction() -> None:
    """Add the filter to uvicorn's loggers (once; `create_app` calls it)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactUrlCredentials) for f in logger.filters):
            logger.addFilter(RedactUrlCredentials())
