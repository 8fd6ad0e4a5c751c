"""Value types of the sandbox API: the limits of one call and its result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one sandboxed call (per process; see docs/sandbox.md)."""

    timeout_s: float = 10.0  # wall clock, from the start of the runner; the process group is killed
    memory_mb: int = 512  # RLIMIT_AS (address space) -> MemoryError
    cpu_s: float | None = None  # RLIMIT_CPU; default: timeout_s
    file_size_mb: int = 16  # RLIMIT_FSIZE: largest file the code may write
    open_files: int = 64  # RLIMIT_NOFILE
    processes: int = 32  # RLIMIT_NPROC: threads, as seccomp refuses new processes (per call, see docs)
    output_bytes: int = MIB  # stdout and stderr are each truncated beyond this
    result_bytes: int = 16 * MIB  # the JSON of the return value

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        for name in ("memory_mb", "file_size_mb", "open_files", "processes", "output_bytes", "result_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")

    def to_request(self) -> dict[str, Any]:
        return {
            "timeout_s": float(self.timeout_s),
            "memory_mb": int(self.memory_mb),
            "cpu_s": float(self.cpu_s if self.cpu_s is not None else self.timeout_s),
            "file_size_mb": int(self.file_size_mb),
            "open_files": int(self.open_files),
            "processes": int(self.processes),
            "result_bytes": int(self.result_bytes),
        }


@dataclass(slots=True)
class SandboxResult:
    """The outcome of one call.

    `error_kind` is one of: exception, exit, memory, cpu, timeout, serialization, arguments,
    too_large, crash, internal, network_disabled (the call asked for network and the operator
    turned it off). `isolation` reports what was actually enforced for this call
    (see docs/sandbox.md); it is None only when the sandbox failed before the code started.
    """

    ok: bool
    value: Any = None
    error: str | None = None
    error_kind: str | None = None
    traceback_lines: list[str] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_ms: float = 0.0
    isolation: dict[str, Any] | None = None
    exit_code: int | None = None
    worker_pid: int | None = None  # also the process group id of the call

    @property
    def traceback(self) -> str:
        return "\n".join(self.traceback_lines)
