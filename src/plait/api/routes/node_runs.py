"""`POST /api/v1/flows/{flow_id}/nodes/{node_id}/run`: run one node of the flow's draft with the
inputs it had in an earlier run, or with pinned inputs ("Run this step" in the editor; see
`plait.service.runs.one_node`). Who may start a run of the flow may run one of its nodes: the
`run` scope and edit access, as `POST /flows/{id}/runs`; the earlier run named must be one the
caller can see."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict, Field

from plait.api.deps import ERRORS, RUN, Caller, EditFlow, Svc, caller, path_id
from plait.service.runs.one_node import NodeRuns

router = APIRouter(prefix="/api/v1/flows", tags=["runs"], dependencies=[Depends(caller)], responses=ERRORS)


class NodeRunBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    from_run: str | None = Field(
        None,
        max_length=255,
        description="The run whose recorded outputs feed the node (default: the flow's newest run "
        "in which the node ran or got its input).",
    )
    pinned: dict[str, Any] | None = Field(
        None,
        description="{target port: value} given to the node instead of what the earlier run gave it "
        '(its main input is the port "in").',
    )
    inputs: dict[str, Any] | None = Field(
        None, description="The run inputs `{{inputs.x}}` reads (default: the earlier run's)."
    )


class NodeRunStarted(BaseModel):
    id: str = Field(description="The one-node run (a draft run of the flow).")
    node_id: str
    from_run: str | None = Field(description="The run whose outputs fed the node, if any.")
    stubs: list[str] = Field(description="The upstream nodes given their output of that run.")
    missing: list[str] = Field(description="Upstream nodes that had no output in that run.")
    pinned: bool


@router.post(
    "/{flow_id}/nodes/{node_id}/run",
    status_code=202,
    response_model=NodeRunStarted,
    dependencies=[RUN],
)
async def run_node(
    svc: Svc,
    who: Caller,
    flow: EditFlow,
    node_id: str,
    body: Annotated[NodeRunBody | None, Body()] = None,
) -> Any:
    """Start a run of this node alone (202 with the run's id; watch it like any run). 404 when the
    flow has no such top-level node; 422 when the node cannot run alone (an upstream node it
    reads had no output and nothing is pinned)."""
    body = body or NodeRunBody()
    node = path_id(node_id, "node")
    if body.from_run is not None:
        await svc.access.run(who, path_id(body.from_run, "run"))
    node_runs = NodeRuns(svc.runs)
    earlier = await node_runs.earlier_run(flow.id, node, body.from_run)
    started = await node_runs.start(
        flow.id,
        flow.draft,
        node,
        earlier=earlier,
        pinned=body.pinned,
        inputs=body.inputs,
        owner_id=who.user_id,
    )
    return {
        "id": started.run_id,
        "node_id": started.node_id,
        "from_run": started.from_run,
        "stubs": started.stubs,
        "missing": started.missing,
        "pinned": started.pinned,
    }
