"""Masking secrets by value: what a run may read never leaves in clear.

A run reads secret variables (`{{env.X}}`, `${X}` in MCP settings). Whatever it does with them
(an `http` URL with `?api_key=`, a template that prints the key, an error message quoting a
header) may end up in a node output, an event, a log line or an exported document. Masking by
field name misses most of that, so plait masks by *value*: a `SecretMask` is built once per run
from the run's secret values, and every value that leaves the run (persisted, streamed, logged) is
passed through it. It also masks what looks like a credential whatever its origin: the user-info of
a URL (`https://user:pw@host`) and query parameters named like keys (`?api_key=`, `&token=`...).

Values are matched as they are and as they appear once serialised (JSON-escaped, URL-encoded), so
a key inside a JSON string or a query string is found too. Values shorter than
`MIN_SECRET_CHARS` are not masked: a one-letter "secret" would mask every word.

Also here, because every layer that talks to the network or writes logs needs them:

- `SecretLogFilter`: a `logging.Filter` that applies a mask to log records (message, arguments,
  traceback); `LogMasking` feeds it with every secret the process has handed to a run and installs
  it process-wide (logging itself is process-wide).
- `strip_cross_origin_credentials`: the headers that must not follow a redirect to another origin.

It lives in `net/`, a low layer with no dependencies of its own, so the engine (the journal's
hand-off to checkpointers and sinks), the service (views, streams, export, logs) and the network
helpers all use the same rules.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

import httpx

MASK = "********"
MIN_SECRET_CHARS = 4

# Query parameter names that carry credentials: a credential word, possibly after prefixes joined
# by `_`, `-` or `.` (`api_key`, `access_token`, `client_secret`, `X-Amz-Signature`), but not words
# that merely contain one (`keyword`, `monkey`).
_CREDENTIAL_WORD = (
    r"(?:api[_-]?key|apikey|key|token|secret|password|passwd|pwd|pass|sig|signature|auth"
    r"|authorization|credentials?|session(?:[_-]?id)?|sid|jwt|bearer|code_verifier)"
)
CREDENTIAL_PARAM = rf"(?:[a-z0-9]+[_.-])*{_CREDENTIAL_WORD}"
_QUERY_CREDENTIAL = re.compile(rf"([?&;]{CREDENTIAL_PARAM}=)([^&;#\s\"'<>\\]+)", re.IGNORECASE)
# `scheme://userinfo@`: everything between `//` and `@` that is not a path, query or fragment.
_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)([^/\s@?#\"'<>\\]+)@", re.IGNORECASE)


def _is_reference(text: str) -> bool:
    """A template reference (`{{env.X}}`, `${X}`): names a secret, is none."""
    return "{{" in text or "${" in text or "{%" in text


def _mask_query(m: re.Match[str]) -> str:
    return m[0] if _is_reference(m[2]) else m[1] + MASK


def _mask_userinfo(m: re.Match[str]) -> str:
    return m[0] if _is_reference(m[2]) else f"{m[1]}{MASK}@"


def mask_url_credentials(text: str) -> str:
    """`text` with URL user-info and credential-like query parameters masked (no secret values
    needed: the shape gives them away). Template references there (`?key={{env.KEY}}`) are kept:
    they name a secret, they are none."""
    if "=" in text:
        text = _QUERY_CREDENTIAL.sub(_mask_query, text)
    if "@" in text:
        text = _USERINFO.sub(_mask_userinfo, text)
    return text


def secret_forms(value: str) -> set[str]:
    """How a secret may appear in text: as is, JSON-escaped (once and twice: JSON inside a JSON
    string), and URL-encoded (path, query parameter, form). Forms shorter than the minimum are
    left out."""
    escaped = json.dumps(value)[1:-1]
    forms = {
        value,
        escaped,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(escaped)[1:-1],
        quote(value, safe=""),
        quote(value, safe="/"),
        quote(value, safe="!$&'()*+,;=:@/?~"),
        quote_plus(value, safe=""),
    }
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


def secret_texts(values: Iterable[Any]) -> frozenset[str]:
    """The secret values as text (non-strings as they render into text), without the ones too
    short to mask: what a `SecretMask` of `values` masks."""
    texts = (v if isinstance(v, str) else _as_text(v) for v in values if v is not None)
    return frozenset(text for text in texts if len(text) >= MIN_SECRET_CHARS)


class SecretMask:
    """Masks a run's secret values (and URL credentials) in strings and nested data.

    Build it once per run (`SecretMask(values)`); `text` masks one string, `value` walks dicts,
    lists and tuples and returns the *same object* when nothing in it changed, so masking data
    without secrets in it allocates nothing. Non-string leaves (numbers, booleans) are kept.
    """

    __slots__ = ("secrets", "_matcher")

    def __init__(self, values: Iterable[Any] = ()) -> None:
        secrets = self.secrets = secret_texts(values)
        forms: set[str] = set()
        for secret in secrets:
            forms |= secret_forms(secret)
        # Longest first, so a value that contains another is masked whole.
        alternatives = sorted(forms, key=lambda f: (-len(f), f))
        self._matcher = re.compile("|".join(map(re.escape, alternatives))) if alternatives else None

    def __bool__(self) -> bool:
        """Whether there are secret values to mask (URL credentials are masked either way)."""
        return self._matcher is not None

    def __repr__(self) -> str:
        return f"SecretMask({len(self.secrets)} secrets)"

    def union(self, values: Iterable[Any]) -> SecretMask:
        """A mask for these secrets and this mask's (self when nothing is new)."""
        more = secret_texts(values) - self.secrets
        return self if not more else SecretMask(self.secrets | more)

    def text(self, text: str) -> str:
        """`text` with every secret value and URL credential replaced by `MASK`."""
        masked = text
        if self._matcher is not None:
            masked = self._matcher.sub(MASK, masked)
        masked = mask_url_credentials(masked)
        return text if masked == text else masked  # already masked: the same object

    def value(self, value: Any) -> Any:
        """`value` with every string in it masked (dict keys too); unchanged parts are shared."""
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is dict:
            changed = False
            items = []
            for key, item in value.items():
                new_key = self.text(key) if type(key) is str else key
                new_item = self.value(item)
                if new_key is not key or new_item is not item:
                    changed = True
                items.append((new_key, new_item))
            return dict(items) if changed else value
        if kind is list or kind is tuple:
            masked = [self.value(item) for item in value]
            if all(a is b for a, b in zip(masked, value, strict=True)):
                return value
            return masked if kind is list else tuple(masked)
        if isinstance(value, Mapping):  # another mapping (a payload read as its wire form)
            return self.value(dict(value))
        return value


def _as_text(value: Any) -> str:
    """A non-string secret as it would be rendered into text (JSON for containers)."""
    if isinstance(value, (dict, list, tuple, bool)) or value is None:
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


NO_SECRETS = SecretMask()  # URL credentials only


# --------------------------------------------------------------------------- logs


class SecretLogFilter(logging.Filter):
    """Masks log records with the mask `source()` returns at the time: the message, its arguments
    (strings, and objects whose text holds a secret) and the formatted traceback. Always lets the
    record through."""

    def __init__(self, source: Callable[[], SecretMask]) -> None:
        super().__init__()
        self.source = source

    def filter(self, record: logging.LogRecord) -> bool:
        mask = self.source()
        args = record.args
        if not args:
            if isinstance(record.msg, str):
                record.msg = mask.text(record.msg)
        else:
            # The arguments one by one (handlers such as uvicorn's access formatter read them),
            # then the message they make: when a secret spans the format and its arguments
            # (`"?api_key=%s", key`), the record keeps the masked message without arguments.
            if isinstance(args, Mapping):
                record.args = args = {k: _masked_arg(mask, v) for k, v in args.items()}
            else:
                record.args = args = tuple(_masked_arg(mask, a) for a in args)
            try:
                message = str(record.msg) % args
            except (TypeError, ValueError, KeyError):
                message = None
            if message is not None:
                masked = mask.text(message)
                if masked != message:
                    record.msg, record.args = masked, ()
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = mask.text(text)
        elif record.exc_text:
            record.exc_text = mask.text(record.exc_text)
        return True


def _masked_arg(mask: SecretMask, arg: Any) -> Any:
    if isinstance(arg, str):
        return mask.text(arg)
    if arg is None or isinstance(arg, (int, float)):
        return arg
    text = str(arg)
    masked = mask.text(text)
    return arg if masked is text else masked  # `text` returns its argument when nothing changed


class LogMasking:
    """Every secret value this process has handed to a run, masked in every log record.

    Logging is process-wide, so this is too: `add` the secrets of each run as it starts (the
    matcher is rebuilt only when a value is new), `install` once (idempotent) to mask every record
    created from then on, whatever its logger or handler (uvicorn's, pytest's, a file's). Records
    are masked when created, before any handler formats them.
    """

    def __init__(self) -> None:
        self.mask = NO_SECRETS
        self.filter = SecretLogFilter(lambda: self.mask)
        self._lock = threading.Lock()
        self._previous: Callable[..., logging.LogRecord] | None = None

    def add(self, mask: SecretMask) -> None:
        """Also mask the secrets of `mask` from now on."""
        if mask.secrets <= self.mask.secrets:
            return
        with self._lock:
            self.mask = self.mask.union(mask.secrets)

    @property
    def installed(self) -> bool:
        return self._previous is not None

    def install(self) -> None:
        """Mask every log record created in this process from now on (idempotent)."""
        with self._lock:
            if self._previous is not None:
                return
            previous = self._previous = logging.getLogRecordFactory()
            apply = self.filter.filter

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                apply(record)
                return record

            logging.setLogRecordFactory(factory)


log_masking = LogMasking()  # the process' (see LogMasking)


# --------------------------------------------------------------------------- redirects

# Headers that carry credentials besides `Authorization` (which httpx already drops on a
# cross-origin redirect): they are meant for the host the flow named, not for wherever it redirects.
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "x-api-key",
        "api-key",
        "apikey",
        "x-auth-token",
        "x-access-token",
        "x-goog-api-key",
        "x-amz-security-token",
        "private-token",
    }
)
_CREDENTIAL_HEADER = re.compile(
    r"(?:^|[-_])(?:api[-_]?key|token|secret|auth|password|credential|session)", re.I
)


def is_credential_header(name: str) -> bool:
    """Whether a header name looks like it carries a credential (`X-Api-Key`, `X-Auth-Token`...)."""
    lower = name.lower()
    return lower in CREDENTIAL_HEADERS or _CREDENTIAL_HEADER.search(lower) is not None


def same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    """Same scheme, host and port; also an `http` -> `https` upgrade of the same host on the
    default ports (as httpx treats `Authorization`)."""
    if a.host != b.host:
        return False
    if a.scheme == b.scheme:
        return a.port == b.port
    return a.scheme == "http" and b.scheme == "https" and a.port in (None, 80) and b.port in (None, 443)


def strip_cross_origin_credentials(previous: httpx.Request, following: httpx.Request) -> None:
    """Drop the credential headers of `following` (a redirect of `previous`) when it goes to
    another origin (see `same_origin`)."""
    if same_origin(previous.url, following.url):
        return
    for name in [n for n in following.headers if is_credential_header(n)]:
        del following.headers[name]


__all__ = [
    "CREDENTIAL_HEADERS",
    "CREDENTIAL_PARAM",
    "MASK",
    "MIN_SECRET_CHARS",
    "NO_SECRETS",
    "LogMasking",
    "SecretLogFilter",
    "SecretMask",
    "is_credential_header",
    "log_masking",
    "mask_url_credentials",
    "same_origin",
    "secret_forms",
    "secret_texts",
    "strip_cross_origin_credentials",
]
