"""The API's routers, one module per resource group, in the order the app includes them (the
order of the OpenAPI document)."""

from __future__ import annotations

from fastapi import APIRouter

from plait.api.routes import (
    artifacts,
    assistant,
    components,
    editor,
    flows,
    knowledge,
    llm_settings,
    node_runs,
    ragflow_agents,
    restore_points,
    runs,
    tasks,
    tools,
    triggers,
    users,
    variables,
    webhooks,
    ws,
)

ROUTERS: tuple[APIRouter, ...] = (
    flows.router,
    runs.router,
    artifacts.router,
    node_runs.router,
    tasks.router,
    webhooks.router,
    webhooks.hooks,
    triggers.router,
    components.router,
    editor.node_types,
    editor.flows,
    variables.router,
    tools.router,
    ws.router,
    users.me,
    users.auth,
    assistant.router,
    restore_points.router,
    llm_settings.router,
    ragflow_agents.router,
    knowledge.router,
)

__all__ = ["ROUTERS"]
