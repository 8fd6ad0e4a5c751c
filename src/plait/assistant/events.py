"""The assistant's stream: typed events, and their SSE encoding.

Every turn of the assistant is a sequence of these events (spec section 1.5): `progress` for the
steps of slow work (classifying, generating, validating, retrying), `token` for streamed text,
`flow_update` / `flow_preview` / `file_written` for what the flow-builder agent changes, then
exactly one of `complete`, `error` or `cancelled`. The orchestrator yields them as data; only the
HTTP edge turns them into SSE (`encode_sse`), so tests and the non-streaming route read the same
objects.

On the wire each event is one SSE message: `event: <name>` and `data: <json>`, the JSON holding
`"event": <name>` as well (clients that read only `data:` lines, as Langflow's do, still see it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

# progress.step values (spec B28). The flow-builder steps are emitted by the agent (part 2).
ProgressStep = Literal[
    "classifying",
    "generating_component",
    "generating",
    "extracting_code",
    "validating",
    "validated",
    "validation_failed",
    "retrying",
    "generation_complete",
    "orchestrating",
    "generating_flow",
    "flow_proposal_ready",
    "searching_components",
    "building_flow",
    "flow_built",
    "flow_build_failed",
    "generating_document",
]


@dataclass(slots=True, frozen=True)
class Progress:
    """A step of slow work. `attempt` is 1-indexed and never above `max_attempts`."""

    step: ProgressStep
    attempt: int = 1
    max_attempts: int = 1
    message: str | None = None
    error: str | None = None
    class_name: str | None = None
    component_code: str | None = None

    kind: ClassVar[str] = "progress"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "attempt": self.attempt, "max_attempts": self.max_attempts}
        for key in ("message", "error", "class_name", "component_code"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(slots=True, frozen=True)
class Token:
    """A piece of streamed answer text."""

    chunk: str

    kind: ClassVar[str] = "token"

    def payload(self) -> dict[str, Any]:
        return {"chunk": self.chunk}


@dataclass(slots=True, frozen=True)
class FlowUpdate:
    """A change to the working flow (spec B32): `action` plus that action's fields, e.g.
    `FlowUpdate("add_component", {"node": {...}})` or `FlowUpdate("set_flow", {"flow": {...}})`."""

    action: str
    fields: dict[str, Any] = field(default_factory=dict)

    kind: ClassVar[str] = "flow_update"

    def payload(self) -> dict[str, Any]:
        return {"action": self.action, **self.fields}


@dataclass(slots=True, frozen=True)
class FlowPreview:
    """A whole proposed flow, with an ASCII drawing of its graph (spec B33)."""

    flow: dict[str, Any]
    name: str
    node_count: int
    edge_count: int
    graph: str

    kind: ClassVar[str] = "flow_preview"

    def payload(self) -> dict[str, Any]:
        return {
            "flow": self.flow,
            "name": self.name,
            "node_count": self.node_count,
            "edge_count": self.edge_count,
            "graph": self.graph,
        }


@dataclass(slots=True, frozen=True)
class FileWritten:
    """A file the agent wrote (`write_file`, content inline) or edited (`edit_file`, no content)."""

    action: Literal["write_file", "edit_file"]
    path: str
    size: int
    content: str | None = None

    kind: ClassVar[str] = "file_written"

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "path": self.path, "size": self.size}
        if self.content is not None:
            out["content"] = self.content
        return out


@dataclass(slots=True, frozen=True)
class RunStarted:
    """The flow builder started a real run (`run_flow`, or the check of a new flow). The canvas
    follows it live by id, as any run of the flow (decision 5)."""

    run_id: str
    flow_id: str

    kind: ClassVar[str] = "run_started"

    def payload(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "flow_id": self.flow_id}


@dataclass(slots=True, frozen=True)
class Complete:
    """The end of a successful turn. `data` always holds `usage` and `duration_seconds`."""

    data: dict[str, Any]

    kind: ClassVar[str] = "complete"

    def payload(self) -> dict[str, Any]:
        return {"data": self.data}


@dataclass(slots=True, frozen=True)
class Error:
    """The end of a failed turn: a message a person can act on (never a stack trace)."""

    message: str

    kind: ClassVar[str] = "error"

    def payload(self) -> dict[str, Any]:
        return {"message": self.message}


@dataclass(slots=True, frozen=True)
class Cancelled:
    """The end of a turn the client stopped (or disconnected from)."""

    message: str | None = None

    kind: ClassVar[str] = "cancelled"

    def payload(self) -> dict[str, Any]:
        return {"message": self.message} if self.message is not None else {}


AssistantEvent = (
    Progress | Token | FlowUpdate | FlowPreview | FileWritten | RunStarted | Complete | Error | Cancelled
)
TERMINAL_EVENTS = (Complete, Error, Cancelled)


def to_dict(event: AssistantEvent) -> dict[str, Any]:
    """The event as the JSON object clients receive: `{"event": name, ...fields}`."""
    return {"event": event.kind, **event.payload()}


def encode_sse(event: AssistantEvent) -> bytes:
    """One SSE message for the event."""
    name = event.kind
    data = json.dumps(to_dict(event), ensure_ascii=False, separators=(",", ":"), default=str)
    return f"event: {name}\ndata: {data}\n\n".encode()
