"""RAGFlow's agent stream, derived from a plait run's own event log.

RAGFlow's agent API streams four events (seed 003, section 11):

    event: message            data: {"answer": "...", "reference": [...]}
    event: waiting_for_user   data: {"cpn_id": "UserFillUp:..."}
    event: error              data: {"error": "..."}
    event: done               data: [DONE]

They are not produced by a second mechanism next to the run: `RagflowEvents` reads the run's
events (stored, then live: `RunService.stream`) and translates each one, so the RAGFlow stream
says exactly what the run's log says, in the same order:

- `node_finished` (ok) of an output node (`message`, `output`: RAGFlow's Message) -> `message`,
  the node's text as `answer` (and the run's id as `session_id`, as RAGFlow's messages carry),
  with `reference`: the chunks the retrieval nodes finished so far in this stream found, as
  RAGFlow's `{chunks, doc_aggs}` (`[]` when none did, as RAGFlow sends);
- `run_finished` of a run that paused -> one `waiting_for_user` per pending interrupt (the
  UserFillUp's id, its tips and form), and the stream ends: the run waits for the answer;
- `run_finished` of a failed or cancelled run -> `error`, then `done`;
- `run_finished` of a completed run -> `done`.

Every translated event carries the seq of the plait event it comes from as its SSE `id:`, so a
client that reconnects with `Last-Event-ID` (or `?after=`) gets the rest of the stream, nothing
lost or repeated. `waiting_for_user` takes the seq of the `run_finished` of the pause, so a
re-attach after it continues with what the answer started.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from plait.engine import events as ev
from plait.engine.events import Event
from plait.engine.status import RunStatus

DONE = "[DONE]"
# A human node's field types as RAGFlow's UserFillUp names them.
FIELD_TYPES = {"string": "line", "text": "paragraph", "select": "options"}


@dataclass(frozen=True, slots=True)
class RagflowEvent:
    """One event of the RAGFlow stream: its SSE `id` (the plait seq), name and data."""

    seq: int
    event: str
    data: Any

    def sse(self) -> str:
        data = self.data if isinstance(self.data, str) else json.dumps(self.data, ensure_ascii=False)
        return f"id: {self.seq}\nevent: {self.event}\ndata: {data}\n\n"


def answer_text(output: Any) -> str:
    """The text of an output node's result: a message's `content`, a string, else JSON."""
    if isinstance(output, dict) and isinstance(content := output.get("content"), str):
        return content
    if isinstance(output, str):
        return output
    return "" if output is None else json.dumps(output, ensure_ascii=False, default=str)


def user_form(interrupt: dict[str, Any]) -> dict[str, Any]:
    """A pending interrupt as RAGFlow's `waiting_for_user` data: the component id, its tips and
    its inputs (`{name: {name, type, optional, options}}`, as a UserFillUp declares them)."""
    raw = interrupt.get("payload")
    payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
    listed = payload.get("fields")
    fields: list[Any] = listed if isinstance(listed, list) else []
    inputs = {
        str(f.get("name")): {
            "name": f.get("label") or f.get("name"),
            "type": FIELD_TYPES.get(str(f.get("type", "string")), f.get("type")),
            "optional": not f.get("required", True),
            "options": f.get("options") or [],
        }
        for f in fields
        if isinstance(f, dict) and f.get("name")
    }
    body = payload.get("body")  # a loop/map body waits: its node is the one that asks
    inner = body.get("node") if isinstance(body, dict) else None
    return {
        "cpn_id": inner or interrupt.get("node_id") or interrupt.get("id"),
        "tips": payload.get("message", ""),
        "inputs": inputs,
    }


def reference_chunk(chunk: dict[str, Any]) -> dict[str, Any]:
    """A retrieval hit (plait.knowledge.search.Hit.as_dict) as a chunk of RAGFlow's reference."""
    return {
        "id": chunk.get("chunk_id") or chunk.get("id"),
        "content": chunk.get("content"),
        "document_id": chunk.get("document_id") or chunk.get("doc_id"),
        "document_name": chunk.get("document_name") or chunk.get("docnm_kwd"),
        "dataset_id": chunk.get("kb_id"),
        "image_id": "",
        "positions": [],
        "similarity": chunk.get("similarity"),
        "term_similarity": chunk.get("term_similarity"),
        "vector_similarity": chunk.get("vector_similarity"),
    }


def reference(chunks: list[dict[str, Any]]) -> dict[str, Any] | list[Any]:
    """RAGFlow's `reference` of the chunks: `{chunks, doc_aggs}` (per document: name, id and how
    many chunks came from it), or `[]` when there are none."""
    if not chunks:
        return []
    aggs: dict[str, dict[str, Any]] = {}
    for c in chunks:
        key = str(c.get("document_id"))
        agg = aggs.setdefault(
            key, {"doc_name": c.get("document_name"), "doc_id": c.get("document_id"), "count": 0}
        )
        agg["count"] += 1
    return {"chunks": chunks, "doc_aggs": list(aggs.values()), "total": len(chunks)}


class RagflowEvents:
    """Translates one run's plait events into RAGFlow's; `output_nodes`: the ids of the flow's
    output nodes (whose results are the answers); `retrieval_nodes`: those whose output
    `chunks` are the answers' reference."""

    def __init__(self, output_nodes: Iterable[str], retrieval_nodes: Iterable[str] = ()) -> None:
        self.outputs = frozenset(n.lower() for n in output_nodes)
        self.retrievals = frozenset(n.lower() for n in retrieval_nodes)
        self.chunks: list[dict[str, Any]] = []  # what the retrievals found so far, in order
        self.ended = False  # the stream's last event was translated (a pause or the run's end)

    def translate(self, e: Event) -> list[RagflowEvent]:
        data = e.data
        if e.type == ev.NODE_FINISHED and isinstance(data, ev.NodeFinished):
            node = (e.node_id or "").lower()
            if data.ok and node in self.retrievals and isinstance(data.output, dict):
                found = data.output.get("chunks")
                if isinstance(found, list):
                    self.chunks += [reference_chunk(c) for c in found if isinstance(c, dict)]
            if data.ok and node in self.outputs:
                answer = {
                    "answer": answer_text(data.output),
                    "reference": reference(self.chunks),
                    "session_id": e.run_id,
                }
                return [RagflowEvent(e.seq, "message", answer)]
            return []
        if e.type != ev.RUN_FINISHED or not isinstance(data, ev.RunFinished):
            return []
        self.ended = True
        status = data.status
        if status == RunStatus.WAITING:
            return [
                RagflowEvent(e.seq, "waiting_for_user", {**user_form(i), "session_id": e.run_id})
                for i in data.interrupts or []
            ]
        out: list[RagflowEvent] = []
        if status == RunStatus.FAILED:
            out.append(RagflowEvent(e.seq, "error", {"error": data.error or "the run failed"}))
        elif status == RunStatus.CANCELLED:
            out.append(RagflowEvent(e.seq, "error", {"error": data.error or "the run was cancelled"}))
        out.append(RagflowEvent(e.seq, "done", DONE))
        return out


__all__ = [
    "DONE",
    "RagflowEvent",
    "RagflowEvents",
    "answer_text",
    "reference",
    "reference_chunk",
    "user_form",
]
