"""Node invocation: one call of a node, or its attempts, into a `NodeOutcome`.

Everything that can go wrong in a node ends here as an outcome, never as an exception reaching
the scheduler: a `NodeError` (its message and fix), an interrupt (`ctx.interrupt`), a timeout, a
schema violation of the input or output, an output over the run's size budget
(`plait.engine.limits`), or a bug in the node type. A node's `on_error` (plait.engine.on_error)
is applied when the outcome is committed. Retries (`retry.max_attempts` calls in all,
`delay_s` growing by `backoff`) apply to retryable errors only.

`call_inline` is the fast path for pure in-memory nodes (`Node.inline`): synchronous, in the
driver loop, no task, no timeout, no retry (the plan sends nodes with retries, timeouts or
schemas down the task path).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from plait.engine.context import NodeRunContext
from plait.engine.limits import OutputBudget, output_too_large
from plait.engine.plan import PlanNode
from plait.nodes.base import InterruptRequest, NodeError, NodeResult


class OutcomeKind(StrEnum):
    OK = "ok"
    ERROR = "error"
    INTERRUPT = "interrupt"  # the node asked to pause (`ctx.interrupt`)
    CANCELLED = "cancelled"  # the run was cancelled while the node ran


_OK, _ERROR, _INTERRUPT = OutcomeKind.OK, OutcomeKind.ERROR, OutcomeKind.INTERRUPT


@dataclass(slots=True)
class NodeOutcome:
    """How one node execution ended (its last attempt): what `commit` turns into state and events."""

    kind: OutcomeKind
    output: Any = None  # OK: the node's output (NodeResult.output)
    ports: tuple[str, ...] | None = None  # OK: the ports that fired (None: all)
    usage: dict[str, int] | None = None  # OK: token usage
    error: str | None = None  # ERROR: the message a person reads
    interrupt: InterruptRequest | None = None  # INTERRUPT
    attempt: int = 1
    duration_ms: float = 0.0
    var_changes: dict[str, Any] | None = None  # flow variables the node set
    fatal: bool = False  # ERROR: the run's failure, not the node's (no `on_error` applies)
    model: dict[str, str] | None = None  # OK: {provider, model} that answered (NodeResult.model)


def format_error(exc: NodeError) -> str:
    return f"{exc.message} (fix: {exc.hint})" if exc.hint else exc.message


def schema_error(validator: Any, value: Any) -> str | None:
    """The first violation of a JSON Schema, as `path: message`; None when `value` conforms."""
    err = next(iter(validator.iter_errors(value)), None)
    if err is None:
        return None
    path = "/".join(str(p) for p in err.absolute_path)
    return f"{path or '(root)'}: {err.message}"


def _first_node_error(group: BaseExceptionGroup[Any]) -> NodeError | None:
    """The first `NodeError` in a (nested) exception group: what a person should read."""
    for exc in group.exceptions:
        if isinstance(exc, NodeError):
            return exc
        if isinstance(exc, BaseExceptionGroup) and (found := _first_node_error(exc)) is not None:
            return found
    return None


def call_inline(pn: PlanNode, ctx: NodeRunContext, budget: OutputBudget | None = None) -> NodeOutcome:
    """Run a pure in-memory node synchronously; `budget`: the run's output size limit, if any."""
    t0 = time.perf_counter()
    try:
        result = pn.node.execute(ctx)
    except NodeError as exc:
        return NodeOutcome(_ERROR, error=format_error(exc))
    except InterruptRequest as req:
        return NodeOutcome(_INTERRUPT, interrupt=req, var_changes=ctx.var_changes)
    except Exception as exc:  # a bug in a node type must fail the run, not the engine
        return NodeOutcome(_ERROR, error=f"{type(exc).__name__}: {exc}")
    duration_ms = (time.perf_counter() - t0) * 1000
    if type(result) is NodeResult:
        outcome = NodeOutcome(
            _OK, result.output, result.ports, result.usage, None, None, 1, duration_ms, ctx.var_changes
        )
        if result.model is not None:
            outcome.model = result.model
    else:
        outcome = NodeOutcome(_OK, result, None, None, None, None, 1, duration_ms, ctx.var_changes)
    if budget is not None and (size := budget.over(outcome.output)) is not None:
        return NodeOutcome(_ERROR, error=format_error(output_too_large(pn.id, size, budget.limit)))
    return outcome


async def call(
    pn: PlanNode,
    value: Any,
    new_context: Callable[[int], NodeRunContext],
    on_retry: Callable[[int, str, float], None],
    start_retry: Callable[[int], Awaitable[None]],
    *,
    first_attempt: int = 1,
    budget: OutputBudget | None = None,
) -> NodeOutcome:
    """Run a node's attempts: input check, then per attempt its timeout and output checks.

    `new_context(attempt)` builds the context of an attempt; `on_retry(attempt, error, delay_s)`
    reports a failed attempt that will be retried and `start_retry(attempt)` reports (and
    records) the start of each attempt after the first, once its delay has passed.
    `first_attempt` is above 1 for a node run again after a crash stopped it: the attempts
    continue from there, and `retry.max_attempts` still counts them all. `budget`: the run's
    output size limit, if any.
    """
    if pn.input_validator is not None:
        problem = schema_error(pn.input_validator, value)
        if problem:
            mismatch = f"input does not match input_schema: {problem}"
            return NodeOutcome(_ERROR, error=mismatch, attempt=first_attempt)
    delay = pn.retry_delay_s
    attempt = first_attempt
    while True:
        ctx = new_context(attempt)
        t0 = time.perf_counter()
        error: str
        retryable = True
        try:
            async with asyncio.timeout(pn.timeout_s):
                result = await pn.node.run(ctx)
            if type(result) is not NodeResult:
                result = NodeResult(result)
            if pn.output_validator is not None:
                problem = schema_error(pn.output_validator, result.output)
                if problem:
                    raise NodeError(f"output does not match output_schema: {problem}")
            if budget is not None and (size := budget.over(result.output)) is not None:
                raise output_too_large(pn.id, size, budget.limit)
            return NodeOutcome(
                _OK,
                result.output,
                result.ports,
                result.usage,
                attempt=attempt,
                duration_ms=(time.perf_counter() - t0) * 1000,
                var_changes=ctx.var_changes,
                model=result.model,
            )
        except InterruptRequest as req:
            return NodeOutcome(_INTERRUPT, interrupt=req, attempt=attempt, var_changes=ctx.var_changes)
        except NodeError as exc:
            error, retryable = format_error(exc), exc.retryable
        except TimeoutError:
            error = f"timed out after {pn.timeout_s:g}s"
        except ExceptionGroup as group:  # work the node ran in a TaskGroup (a map's items)
            first = _first_node_error(group)
            if first is None:
                error = f"{type(group).__name__}: {group}"
            else:
                error, retryable = format_error(first), first.retryable
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        if not retryable or attempt >= pn.max_attempts:
            return NodeOutcome(
                _ERROR,
                error=error,
                attempt=attempt,
                duration_ms=(time.perf_counter() - t0) * 1000,
            )
        on_retry(attempt, error, delay)
        if delay:
            await asyncio.sleep(delay)
            delay *= pn.retry_backoff
        attempt += 1
        try:
            await start_retry(attempt)
        except NodeError as exc:  # the run has no node executions left
            return NodeOutcome(_ERROR, error=format_error(exc), attempt=attempt)


__all__ = ["NodeOutcome", "OutcomeKind", "call", "call_inline", "format_error", "schema_error"]
