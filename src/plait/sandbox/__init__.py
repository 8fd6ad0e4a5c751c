"""Run untrusted Python in a separate, restricted process (ARCHITECTURE section 8; docs/sandbox.md).

    from plait import sandbox

    result = await sandbox.run_code("def main(x):\n    return x * 2\n", kwargs={"x": 21})
    result.ok, result.value          # True, 42
    result.isolation                 # what was actually enforced for this call

`SandboxPool` keeps pre-started workers (one call per process); `run_code` uses the process-wide
`default_pool()`.
"""

from plait.sandbox.pool import SandboxPool, default_pool, run_code
from plait.sandbox.types import Limits, SandboxResult

__all__ = ["Limits", "SandboxPool", "SandboxResult", "default_pool", "run_code"]
