"""Nodes that own sub-graphs or other flows: loop, map, subflow.

The engine checkpoints each loop iteration and map item (plait.engine.items) and lets a body wait
for a person through its node (plait.engine.body_wait); these nodes only pass the answer on."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from plait.nodes.base import InterruptRequest, Node, NodeContext, NodeError
from plait.nodes.builtin._conditions import Condition, evaluate
from plait.nodes.builtin.human import check_answer
from plait.spec.models import GraphSpec


def _unwrap(outputs: dict[str, Any]) -> Any:
    """A body with one output node yields that value; several yield a dict by output name."""
    return next(iter(outputs.values())) if len(outputs) == 1 else outputs


def _nested_answer(data: Any, interrupt: Mapping[str, Any], field: str) -> dict[str, Any]:
    """The answer for a person a nested run waited for (a loop/map body, a sub-flow), with the
    nested run's state from the interrupt's payload `field`. A human task's answer is checked
    here against the form as shown (so a bad one is refused before the run resumes); the nested
    human node checks it again."""
    if isinstance(data, dict) and set(data) == {"answer", field}:
        data = data["answer"]  # accepted once already (the task route checks before resuming)
    payload = interrupt.get("payload") or {}
    if interrupt.get("kind") == "human" and isinstance(payload.get("fields"), list):
        data = check_answer(data, payload, fields=[], actions=["submit"])
    return {"answer": data, field: payload.get(field)}


def _only_interrupt(group: ExceptionGroup[Any]) -> InterruptRequest | None:
    """The first interrupt of a map's failed items when nothing but interrupts failed."""
    if all(isinstance(exc, InterruptRequest) for exc in group.exceptions):
        first = group.exceptions[0]
        assert isinstance(first, InterruptRequest)
        return first
    return None


class LoopConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    body: GraphSpec = Field(..., description="Nodes run once per iteration; aliases: {{index}}, {{result}}.")
    max_iterations: int = Field(..., ge=1, le=100_000, description="Hard upper bound on iterations.")
    variables: dict[str, Any] = Field(
        default_factory=dict, description="Loop variables (flow vars) set before the first iteration."
    )
    until: list[Condition] = Field(
        default_factory=list, description="Exit when these hold after an iteration (do-while)."
    )
    logic: Literal["and", "or"] = "and"
    on_max: Literal["stop", "error"] = Field("stop", description="What reaching max_iterations means.")


class LoopNode(Node[LoopConfig]):
    type_name = "loop"
    title = "Loop"
    description = "Runs its body repeatedly (do-while) until the exit condition holds or max_iterations."
    category = "flow"
    Config = LoopConfig
    late_bound_fields = frozenset({"until"})

    @classmethod
    def subgraphs(cls, config: LoopConfig) -> dict[str, GraphSpec]:
        return {"body": config.body}

    @classmethod
    def body_aliases(cls, config: LoopConfig) -> frozenset[str]:
        return frozenset({"index", "result"})

    def accept_resume(self, data: Any, interrupt: Mapping[str, Any]) -> Any:
        """The answer for a human node in the body, with the waiting body's state
        (plait.engine.body_wait): the loop runs again from the iteration that waited."""
        return _nested_answer(data, interrupt, "body")

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        for name, value in cfg.variables.items():
            ctx.set_var(name, await ctx.arender(value))
        result: Any = None
        for index in range(cfg.max_iterations):
            result = _unwrap(
                await ctx.run_body("body", aliases={"index": index, "result": result}, inputs=ctx.input)
            )
            scope = _ExitScope(ctx, {"index": index, "result": result})
            if cfg.until and evaluate(scope, cfg.until, cfg.logic, False):
                return {
                    "iterations": index + 1,
                    "result": result,
                    "exited": True,
                    "vars": {k: ctx.vars.get(k) for k in cfg.variables},
                }
        if cfg.on_max == "error":
            raise NodeError(
                f"loop did not exit within {cfg.max_iterations} iterations",
                hint="raise max_iterations or fix the `until` condition",
                retryable=False,
            )
        return {
            "iterations": cfg.max_iterations,
            "result": result,
            "exited": False,
            "vars": {k: ctx.vars.get(k) for k in cfg.variables},
        }


class _ExitScope:
    """Lets the shared condition evaluator see the loop aliases."""

    def __init__(self, ctx: NodeContext, aliases: dict[str, Any]) -> None:
        self._ctx = ctx
        self._aliases = aliases
        self.vars = ctx.vars
        self.input = ctx.input
        self.inputs = ctx.inputs

    def lookup(self, root: str) -> Any:
        if root in self._aliases:
            return self._aliases[root]
        return self._ctx.lookup(root)

    def render(self, value: Any, extra: dict[str, Any] | None = None) -> Any:
        return self._ctx.render(value, {**self._aliases, **(extra or {})})


class MapConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: Any = Field(..., description="A reference/template that yields a list, e.g. '{{search.results}}'.")
    body: GraphSpec = Field(..., description="Nodes run once per item; aliases: {{item}}, {{index}}.")
    max_concurrency: int = Field(4, ge=1, le=256)


class MapNode(Node[MapConfig]):
    type_name = "map"
    title = "Map"
    description = "Runs its body once per item (in parallel); outputs the results in input order."
    category = "flow"
    Config = MapConfig

    @classmethod
    def subgraphs(cls, config: MapConfig) -> dict[str, GraphSpec]:
        return {"body": config.body}

    @classmethod
    def body_aliases(cls, config: MapConfig) -> frozenset[str]:
        return frozenset({"item", "index"})

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        items = await ctx.arender(cfg.items)
        if isinstance(items, dict):
            items = list(items.items())
        if not isinstance(items, list):
            raise NodeError(
                f"items must be a list, got {type(items).__name__}",
                hint="point `items` at a list, e.g. '{{node.results}}'",
                retryable=False,
            )
        limit = asyncio.Semaphore(cfg.max_concurrency)

        async def one(index: int, item: Any) -> Any:
            async with limit:
                try:
                    return _unwrap(await ctx.run_body("body", aliases={"item": item, "index": index}))
                except NodeError as exc:
                    raise NodeError(f"item {index}: {exc.message}", hint=exc.hint) from exc

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(i, item)) for i, item in enumerate(items)]
        except ExceptionGroup as failed:  # an item's body waits for a person: the map waits
            waiting = _only_interrupt(failed)
            if waiting is None:
                raise
            raise waiting from None
        return [t.result() for t in tasks]

    def accept_resume(self, data: Any, interrupt: Mapping[str, Any]) -> Any:
        """The answer for a human node in an item's body, with that body's state
        (plait.engine.body_wait): the map runs again, items recorded before are not."""
        return _nested_answer(data, interrupt, "body")


class SubflowConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flow: str = Field(..., min_length=1, description="Path (relative to this flow's file) or id of the flow.")
    inputs: dict[str, Any] | None = Field(None, description="Inputs (templates); default: the input value.")


class SubflowNode(Node[SubflowConfig]):
    type_name = "subflow"
    title = "Sub-flow"
    description = "Runs another flow as a child run and outputs its outputs."
    category = "flow"
    Config = SubflowConfig

    async def run(self, ctx: NodeContext) -> Any:
        cfg = self.config
        if cfg.inputs is not None:
            inputs = await ctx.arender(cfg.inputs)
        else:
            inputs = ctx.input if isinstance(ctx.input, dict) else {}
        try:  # answering a person the child waited for (see accept_resume)?
            resumed = ctx.interrupt({}, kind="subflow")
        except InterruptRequest:
            resumed = None
        return await ctx.run_flow(cfg.flow, inputs, resume=resumed)

    def accept_resume(self, data: Any, interrupt: Mapping[str, Any]) -> Any:
        """The answer for the child's waiting node, with the child's state from the interrupt."""
        return _nested_answer(data, interrupt, "subflow")
