"""Timing nodes: delay."""

from __future__ import annotations

import asyncio
import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from plait.nodes.base import Node, NodeContext, NodeError

MAX_DELAY_S = 86_400.0


def _seconds(value: Any) -> float:
    """`value` as a number of seconds in [0, MAX_DELAY_S]; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number of seconds, got {value!r}")
    seconds = float(value.strip()) if isinstance(value, str) else float(value)
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_DELAY_S:
        raise ValueError(f"delay must be between 0 and {MAX_DELAY_S:g} seconds, got {value!r}")
    return seconds


class DelayConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: Annotated[float, Field(ge=0, le=MAX_DELAY_S)] | str = Field(
        1.0,
        title="Seconds",
        description="How long to wait (0-86400 s): a number or a template such as '{{inputs.wait_s}}'.",
    )

    @field_validator("seconds", mode="before")
    @classmethod
    def _number_or_template(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if "{" in text:
                return text  # a template, checked when rendered
            try:
                return float(text)
            except ValueError as exc:
                raise ValueError(
                    "must be a number of seconds or a template like '{{inputs.wait_s}}'"
                ) from exc
        return value


class DelayNode(Node[DelayConfig]):
    type_name = "delay"
    title = "Delay"
    description = "Waits a number of seconds, then passes its input through unchanged."
    category = "flow"
    Config = DelayConfig
    # The engine's default node timeout (600 s) would cut long delays short.
    default_timeout_s = MAX_DELAY_S + 60

    async def run(self, ctx: NodeContext) -> Any:
        value = self.config.seconds
        if isinstance(value, str):
            rendered = await ctx.arender(value)
            try:
                value = _seconds(rendered)
            except (TypeError, ValueError) as exc:
                raise NodeError(
                    f"seconds rendered to {rendered!r}: {exc}",
                    hint="the template must produce a number between 0 and 86400",
                    retryable=False,
                ) from exc
        await asyncio.sleep(value)
        return ctx.input
