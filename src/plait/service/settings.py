"""Server settings, from arguments or `PLAIT_*` environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from plait.engine.limits import DEFAULT_LIMITS, RunLimits


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    try:
        return float(raw) if raw else default
    except ValueError as exc:
        raise ValueError(f"{name} must be a number, not {raw!r}") from exc


def _count(name: str, default: int) -> int:
    raw = os.environ.get(name)
    try:
        value = int(raw) if raw else default
    except ValueError as exc:
        raise ValueError(f"{name} must be a whole number, not {raw!r}") from exc
    if value < 0:
        raise ValueError(f"{name} must be 0 (no limit) or more, not {value}")
    return value


def _bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on")


@dataclass(slots=True)
class Settings:
    database_url: str | None = None  # None: PLAIT_DATABASE_URL, else ./.plait/plait.db
    api_key: str | None = None  # PLAIT_API_KEY: accepted in addition to the keys in the database
    # PLAIT_EXECUTOR: "inline" (runs execute in the server) or "celery" (queue mode: the server
    # queues runs in Redis, `plait worker` processes execute them; PostgreSQL and Redis required)
    executor: str = "inline"
    # PLAIT_REDIS_URL (redis://host:port/db): the one Redis connection setting. When set, cancel
    # requests reach the server executing a run through Redis pub/sub (and queue mode uses it).
    redis_url: str | None = None
    lease_ttl_s: float = 15.0  # PLAIT_LEASE_TTL_S: a run's owner renews its lease every ttl/3
    sweep_interval_s: float = 1.0  # PLAIT_SWEEP_INTERVAL_S: human-task expiry + crash recovery scan
    # PLAIT_CANCEL_POLL_S: without Redis or PostgreSQL notifications (SQLite), how often a server
    # reads the cancel flags of the runs it executes (a request made by another process); 0: only
    # when it renews their leases (every lease_ttl/3).
    cancel_poll_s: float = 0.5
    sse_heartbeat_s: float = 15.0  # PLAIT_SSE_HEARTBEAT_S
    # PLAIT_TRIGGER_FIRES_RETENTION_DAYS: the schedulers delete trigger firings older than this
    # (a trigger's newest one and those of unfinished runs stay: see TriggerFireRepo.prune); 0: never.
    trigger_fires_retention_days: float = 30.0
    # The most runs this process executes at once, 0: no cap. `plait worker` sets it to its
    # concurrency, so that the runs its crash recovery takes wait for a slot like queued ones.
    max_active_runs: int = 0
    import_examples: bool = False  # PLAIT_IMPORT_EXAMPLES: import examples_dir when no flow exists
    examples_dir: Path | None = None  # PLAIT_EXAMPLES_DIR
    require_auth: bool = True  # False: every request acts as the local admin (tests, embedding)
    signin_link_base: str | None = None  # `plait serve`: print a one-time sign-in link on this URL
    secure_cookies: bool = False  # PLAIT_SECURE_COOKIES: the session cookie only over HTTPS
    # Every run's budgets (plait.engine.limits): PLAIT_MAX_NODE_OUTPUT_BYTES (1 MiB),
    # PLAIT_MAX_SUBFLOW_DEPTH (16), PLAIT_MAX_NODE_EXECUTIONS (10,000); 0 turns one off.
    limits: RunLimits = DEFAULT_LIMITS

    @classmethod
    def from_env(cls) -> Settings:
        examples = os.environ.get("PLAIT_EXAMPLES_DIR")
        executor = os.environ.get("PLAIT_EXECUTOR", "inline") or "inline"
        settings = cls(
            database_url=os.environ.get("PLAIT_DATABASE_URL") or None,
            api_key=os.environ.get("PLAIT_API_KEY") or None,
            executor=executor,
            redis_url=os.environ.get("PLAIT_REDIS_URL") or None,
            lease_ttl_s=_float("PLAIT_LEASE_TTL_S", 15.0),
            sweep_interval_s=_float("PLAIT_SWEEP_INTERVAL_S", 1.0),
            cancel_poll_s=_float("PLAIT_CANCEL_POLL_S", 0.5),
            sse_heartbeat_s=_float("PLAIT_SSE_HEARTBEAT_S", 15.0),
            trigger_fires_retention_days=_float("PLAIT_TRIGGER_FIRES_RETENTION_DAYS", 30.0),
            import_examples=_bool("PLAIT_IMPORT_EXAMPLES", False),
            examples_dir=Path(examples) if examples else None,
            secure_cookies=_bool("PLAIT_SECURE_COOKIES", False),
            limits=RunLimits(
                max_node_output_bytes=_count(
                    "PLAIT_MAX_NODE_OUTPUT_BYTES", DEFAULT_LIMITS.max_node_output_bytes
                ),
                max_subflow_depth=_count("PLAIT_MAX_SUBFLOW_DEPTH", DEFAULT_LIMITS.max_subflow_depth),
                max_node_executions=_count("PLAIT_MAX_NODE_EXECUTIONS", DEFAULT_LIMITS.max_node_executions),
            ),
        )
        settings.check_executor()
        return settings

    def check_executor(self) -> None:
        """ValueError unless the executor is known and has what it needs: queue mode (celery)
        hands runs between processes through the database and Redis, so it needs PostgreSQL
        (SQLite is one process' file) and PLAIT_REDIS_URL."""
        if self.executor == "inline":
            return
        if self.executor != "celery":
            raise ValueError(f"PLAIT_EXECUTOR={self.executor!r} is not known; use 'inline' or 'celery'")
        if not (self.database_url or "").startswith("postgres"):
            raise ValueError(
                "PLAIT_EXECUTOR=celery needs PostgreSQL: set PLAIT_DATABASE_URL=postgresql://... "
                "(SQLite cannot be shared by the server and the workers)"
            )
        if not self.redis_url:
            raise ValueError("PLAIT_EXECUTOR=celery needs Redis: set PLAIT_REDIS_URL=redis://host:6379/0")
