"""Fixtures of the HTTP API tests: an app on a temporary SQLite database (or PostgreSQL when
PLAIT_TEST_POSTGRES_URL is set), driven in-process through httpx's ASGI transport."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from plait.api import create_app
from plait.service import Settings

API_KEY = "test-key-0123456789"
POSTGRES_URL = os.environ.get("PLAIT_TEST_POSTGRES_URL")

BACKENDS = [
    "sqlite",
    pytest.param(
        "postgres",
        marks=pytest.mark.skipif(not POSTGRES_URL, reason="set PLAIT_TEST_POSTGRES_URL to run on PostgreSQL"),
    ),
]


async def _reset_postgres(url: str) -> None:
    from sqlalchemy import text

    from plait.store import Store
    from plait.store.models import Base

    store = await Store.open(url)
    try:
        async with store.engine.begin() as conn:
            names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
            await conn.execute(text(f"TRUNCATE {names} CASCADE"))
    finally:
        await store.close()


@pytest.fixture(params=BACKENDS)
async def database_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    if request.param == "postgres":
        assert POSTGRES_URL
        await _reset_postgres(POSTGRES_URL)
        return POSTGRES_URL
    return f"sqlite+aiosqlite:///{tmp_path}/plait.db"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        api_key=API_KEY,
        lease_ttl_s=3.0,
        sweep_interval_s=0.1,
        sse_heartbeat_s=0.5,
    )


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[Any]:
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://test", headers={"x-api-key": API_KEY}, timeout=30
    ) as c:
        yield c


def linear_flow(flow_id: str = "lin", n: int = 3, delay: float = 0.0) -> dict[str, Any]:
    """start -> n delay nodes -> output `result` = the input query."""
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "start"}]
    edges: list[dict[str, Any]] = []
    prev = "start"
    for i in range(n):
        nid = f"d{i}"
        nodes.append({"id": nid, "type": "delay", "config": {"seconds": delay}})
        edges.append({"source": prev, "target": nid})
        prev = nid
    nodes.append({"id": "out", "type": "output", "config": {"name": "result", "value": "{{inputs.query}}!"}})
    edges.append({"source": prev, "target": "out"})
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "name": "Linear",
        "inputs": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "nodes": nodes,
        "edges": edges,
    }


def human_flow(flow_id: str = "hum", timeout_s: float | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "message": "Approve {{inputs.query}}?",
        "fields": [
            {"name": "comment", "type": "text", "required": True},
            {"name": "amount", "type": "integer", "required": False, "default": "3"},
        ],
        "actions": ["approve", "reject"],
    }
    if timeout_s is not None:
        config["timeout_s"] = timeout_s
    return {
        "schema": "plait/flow@1",
        "id": flow_id,
        "inputs": {"type": "object", "properties": {"query": {"type": "string"}}},
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "review", "type": "human", "config": config},
            {
                "id": "yes",
                "type": "output",
                "config": {"name": "decision", "value": "yes: {{review.comment}}"},
            },
            {"id": "no", "type": "output", "config": {"name": "decision", "value": "no: {{review.comment}}"}},
        ],
        "edges": [
            {"source": "start", "target": "review"},
            {"source": "review", "source_port": "approve", "target": "yes"},
            {"source": "review", "source_port": "reject", "target": "no"},
        ],
    }


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """`script([...steps])` sets the operator's PLAIT_ASSISTANT_SCRIPT to a file holding them."""

    def set_script(steps: list[Any]) -> Path:
        path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
        path.write_text(json.dumps(steps))
        monkeypatch.setenv("PLAIT_ASSISTANT_SCRIPT", str(path))
        return path

    return set_script
