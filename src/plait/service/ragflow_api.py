"""RAGFlow's agent API over plait's flows and runs (`/api/v1/agents`, seed 003 section 11).

A RAGFlow *agent* is a plait flow: creating or updating one imports its DSL
(`plait.spec.formats.ragflow`), reading one exports the flow back to DSL when every node maps. A
*session* is a run: `run` / `stream` start one (`question` -> the `query` input, `inputs` -> the
run inputs), and the same call with `session_id` and `inputs` answers the run's pending
UserFillUp (a plait `human` node) and follows what the answer starts. Versions are the flow's
published versions. The stream is RAGFlow's `message / waiting_for_user / error / done`,
translated from the run's event log (plait.service.ragflow_events).

Use cases raise `ServiceError`s as the rest of the service layer; `ragflow_code` gives the
business code RAGFlow's envelope (`{code, data, message}`) carries for each.
"""

from __future__ import annotations

import builtins
import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

from plait.engine import events as ev
from plait.engine.plan import Plan
from plait.engine.status import RunStatus
from plait.service.access import Principal
from plait.service.core import Services
from plait.service.errors import Conflict, Forbidden, Invalid, NotFound, ServiceError, Unauthorized
from plait.service.flows import FORMAT_RAGFLOW
from plait.service.ragflow_events import RagflowEvent, RagflowEvents, user_form
from plait.store.models import FlowRow, Run

# RAGFlow's business codes (common/constants.py RetCode).
SUCCESS = 0
EXCEPTION_ERROR = 100
ARGUMENT_ERROR = 101
DATA_ERROR = 102
OPERATING_ERROR = 103
PERMISSION_ERROR = 108
AUTHENTICATION_ERROR = 109
SERVER_ERROR = 500

MAX_PAGE_SIZE = 100
MAX_AGENTS = 10_000
MAX_SESSION_RUNS = 200  # a session's newest run is looked for among the flow's latest runs
SESSION_INPUT = "ragflow_session"  # the input naming the session a later run continues  # a listing reads at most this many flows before it filters and pages
VERSION_ID_RE = re.compile(r"^(?:v_?)?([0-9]{1,9})$", re.IGNORECASE)


class RagflowRunError(ServiceError):
    """The run of a completion failed: RAGFlow answers such a turn with code 500."""


def ragflow_code(exc: ServiceError) -> int:
    """The RAGFlow business code of a refusal."""
    if isinstance(exc, RagflowRunError):
        return SERVER_ERROR
    if isinstance(exc, Unauthorized):
        return AUTHENTICATION_ERROR
    if isinstance(exc, Forbidden):
        return PERMISSION_ERROR
    if isinstance(exc, Invalid):
        return ARGUMENT_ERROR
    if isinstance(exc, NotFound):
        return DATA_ERROR
    if isinstance(exc, Conflict):
        return OPERATING_ERROR
    return EXCEPTION_ERROR


def millis(ts: float | None) -> int | None:
    return None if ts is None else int(ts * 1000)


def http_date(ts: float | None) -> str | None:
    return None if ts is None else formatdate(ts, usegmt=True)


def agent_view(flow: dict[str, Any]) -> dict[str, Any]:
    """A flow as RAGFlow describes an agent (a `user_canvas` row)."""
    return {
        "id": flow["id"],
        "title": flow.get("name") or flow["id"],
        "description": flow.get("description") or None,
        "avatar": None,
        "canvas_category": "agent_canvas",
        "permission": "me",
        "user_id": flow.get("owner_id"),
        "latest_version": flow.get("latest_version"),
        "create_time": millis(flow.get("created_at")),
        "create_date": http_date(flow.get("created_at")),
        "update_time": millis(flow.get("updated_at")),
        "update_date": http_date(flow.get("updated_at")),
    }


def version_view(flow: FlowRow, version: dict[str, Any]) -> dict[str, Any]:
    number = int(version["version"])
    return {
        "id": str(number),
        "user_canvas_id": flow.id,
        "version": number,
        "title": version.get("note") or f"{flow.name or flow.id}_v{number}",
        "create_time": millis(version.get("created_at")),
        "create_date": http_date(version.get("created_at")),
    }


def plain_inputs(inputs: Any) -> dict[str, Any]:
    """RAGFlow's inputs (`{name: {"value": v, "type": ...}}`, or `{name: v}`) as plain values."""
    if inputs is None:
        return {}
    if not isinstance(inputs, dict):
        raise Invalid("`inputs` must be an object of input values")
    return {str(k): v["value"] if isinstance(v, dict) and "value" in v else v for k, v in inputs.items()}


def version_spec(version: str | None) -> str | int | None:
    """`?version=`: N, v_N, latest or draft (None: the latest published, else the draft)."""
    if version is None or not version.strip():
        return None
    text = version.strip().lower()
    if text in ("latest", "draft"):
        return text
    match = VERSION_ID_RE.match(text)
    if match is None:
        raise Invalid(f"version must be a version id, 'latest' or 'draft', not {version!r}")
    return int(match.group(1))


def body_object(body: Any) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise Invalid("the request body must be a JSON object")
    return body


def text_field(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise Invalid(f"`{name}` must be a string")
    return value


def dsl_field(body: dict[str, Any]) -> dict[str, Any] | None:
    """`dsl`: the DSL object, or the same as JSON text (RAGFlow accepts both)."""
    dsl = body.get("dsl")
    if isinstance(dsl, str):
        try:
            dsl = json.loads(dsl)
        except ValueError as exc:
            raise Invalid("`dsl` is not valid JSON") from exc
    if dsl is not None and not isinstance(dsl, dict):
        raise Invalid("`dsl` must be a RAGFlow canvas DSL object")
    return dsl


def output_nodes(plan: Plan, prefix: str = "") -> list[str]:
    """The ids the output nodes' events carry: a loop or map body's as `<node>/<inner id>`
    (plait.engine.journal.BodyJournal), so a Message inside a Loop streams as RAGFlow's does."""
    found: list[str] = []
    for pn in plan.nodes:
        if pn.is_output:
            found.append(prefix + pn.id)
        for body in pn.bodies.values():
            found += output_nodes(body, f"{prefix}{pn.id}/")
    return found


def nodes_of_type(plan: Plan, node_type: str, prefix: str = "") -> list[str]:
    """The ids (as their events carry them, see `output_nodes`) of the plan's nodes of a type."""
    found: list[str] = []
    for pn in plan.nodes:
        if pn.spec.type == node_type:
            found.append(prefix + pn.id)
        for body in pn.bodies.values():
            found += nodes_of_type(body, node_type, f"{prefix}{pn.id}/")
    return found


@dataclass(slots=True)
class Session:
    """A run the caller follows: its id, and the seq after which its events are theirs."""

    run_id: str
    after: int


class RagflowAgents:
    def __init__(self, services: Services) -> None:
        self.svc = services

    # ------------------------------------------------------------------ agents
    async def list(
        self,
        who: Principal,
        *,
        page: int = 1,
        page_size: int = 30,
        orderby: str = "update_time",
        desc: bool = True,
        agent_id: str | None = None,
        title: str | None = None,
    ) -> list[dict[str, Any]]:
        """The agents (flows) the caller may see, filtered by id/title, ordered, one page."""
        if page < 1 or not 1 <= page_size <= MAX_PAGE_SIZE:
            raise Invalid(f"page must be >= 1 and page_size between 1 and {MAX_PAGE_SIZE}")
        if orderby not in ("update_time", "create_time"):
            raise Invalid("orderby must be update_time or create_time")
        flows = await self.svc.flows.list(who, limit=MAX_AGENTS)
        if agent_id is not None or title is not None:
            flows = [
                f
                for f in flows
                if (agent_id is None or f["id"] == agent_id) and (title is None or f["name"] == title)
            ]
            if not flows:
                raise NotFound("The agent doesn't exist.")
        key = "updated_at" if orderby == "update_time" else "created_at"
        flows.sort(key=lambda f: f.get(key) or 0.0, reverse=desc)
        start = (page - 1) * page_size
        return [agent_view(f) for f in flows[start : start + page_size]]

    async def create(self, who: Principal, body: Any) -> str:
        """A new agent from `{title, description, dsl}`: the DSL imported as a flow, published
        (RAGFlow keeps a version of what it creates). Returns the agent's id."""
        body = body_object(body)
        dsl = dsl_field(body)
        if dsl is None:
            raise Invalid("No DSL data in request.")
        title = text_field(body, "title")
        if title is None or not title.strip():
            raise Invalid("No title in request.")
        title = title.strip()
        mine = await self.svc.flows.list(who, limit=MAX_AGENTS)
        if any(f["name"] == title and f.get("owner_id") == who.user_id for f in mine):
            raise Conflict(f"Agent with title {title} already exists.")
        agent_id = uuid.uuid4().hex
        await self.svc.flows.import_document(dsl, who=who, fmt=FORMAT_RAGFLOW, flow_id=agent_id)
        try:
            await self.svc.flows.update(agent_id, name=title, description=text_field(body, "description"))
            await self.svc.flows.publish(agent_id, note=title)
        except ServiceError:
            await self.svc.flows.delete(agent_id)  # nothing half-made stays behind
            raise
        return agent_id

    async def get(self, who: Principal, flow: FlowRow) -> dict[str, Any]:
        """The agent with its DSL: the draft exported to RAGFlow's format (`dsl` null, and
        `dsl_error` saying why, when a node has no RAGFlow equivalent)."""
        found = await self.svc.flows.get(flow.id, who=who)
        view = agent_view(found)
        view["dsl"], error = await self._dsl(flow.id, "draft")
        if error is not None:
            view["dsl_error"] = error
        return view

    async def update(self, who: Principal, flow: FlowRow, body: Any) -> None:
        """`{title?, description?, dsl?}`: a new DSL replaces the flow's draft and is published."""
        body = body_object(body)
        dsl = dsl_field(body)
        title = text_field(body, "title")
        description = text_field(body, "description")
        if dsl is not None:
            await self.svc.flows.import_document(
                dsl, who=who, fmt=FORMAT_RAGFLOW, flow_id=flow.id, overwrite=True
            )
        if title is not None or description is not None:
            name = title.strip() if title is not None and title.strip() else None
            await self.svc.flows.update(flow.id, name=name, description=description)
        if dsl is not None:
            await self.svc.flows.publish(flow.id, note=(title or flow.name or flow.id).strip())

    async def delete(self, flow: FlowRow) -> None:
        await self.svc.flows.delete(flow.id)  # its versions go with it

    async def _dsl(self, flow_id: str, version: str) -> tuple[dict[str, Any] | None, str | None]:
        try:
            return json.loads(await self.svc.flows.export(flow_id, version, FORMAT_RAGFLOW)), None
        except Invalid as exc:
            return None, exc.message

    # ------------------------------------------------------------------ sessions (runs)
    async def open_session(
        self, who: Principal, flow: FlowRow, body: Any, version: str | None, after: int = 0
    ) -> Session:
        """Start a run, answer a waiting one, or re-attach to one (see the module docstring).

        `{question?, inputs?}`: a new run. `{session_id, inputs}` of a waiting run: the inputs
        answer its pending UserFillUp (`cpn_id` names it when several wait); the session's events
        are those after the pause. `{session_id}` alone: the run's events after `after` (the
        client's Last-Event-ID)."""
        body = body_object(body)
        session_id = text_field(body, "session_id")
        inputs = plain_inputs(body.get("inputs"))
        question = text_field(body, "question")
        if session_id:
            row = await self.svc.access.run(who, session_id, control=True)
            if row.flow_id != flow.id:
                raise NotFound(f"You don't own the session {session_id}")
            if not (inputs or question) or row.status in (RunStatus.RUNNING, RunStatus.QUEUED):
                return Session(row.id, after)
            if row.status != RunStatus.WAITING:  # the session's run ended: a new turn, a new run
                return await self._start(who, flow, inputs, question, version)
            if question and not inputs:
                inputs = {"query": question}
            seen = row.last_seq
            await self.svc.runs.resume(row.id, text_field(body, "cpn_id"), inputs)
            return Session(row.id, seen)
        return await self._start(who, flow, inputs, question, version)

    async def _start(
        self,
        who: Principal,
        flow: FlowRow,
        inputs: dict[str, Any],
        question: str | None,
        version: str | None,
        *,
        session: str | None = None,
    ) -> Session:
        """A new run; `session`: the id of the session it continues (kept as its
        `ragflow_session` input, unless the flow's inputs refuse one more)."""
        if question:
            inputs.setdefault("query", question)
        if session is not None:
            try:
                return await self._start(who, flow, {**inputs, SESSION_INPUT: session}, None, version)
            except Invalid:
                pass  # a flow whose input schema takes no extra input: the run is the session
        run_id, _task = await self.svc.runs.start(
            flow.id, inputs, version=version_spec(version), owner_id=who.user_id
        )
        return Session(run_id, 0)

    async def events(self, session: Session) -> AsyncIterator[RagflowEvent | None]:
        """The session's RAGFlow events (None: a heartbeat), until the run pauses or ends."""
        svc = self.svc
        row = await svc.runs.require(session.run_id)
        flow = await svc.flows.document_for_run(row.flow_id, row.version, row.document)
        mapper = RagflowEvents(output_nodes(flow.plan), nodes_of_type(flow.plan, "retrieval"))
        async for e in svc.runs.stream(session.run_id, session.after, until="terminal"):
            if e is None:
                yield None
                continue
            translated = mapper.translate(e)
            # A pause the log goes on after was answered since: not asked again, go on. (Not the
            # run's status: a live event can arrive before its row says `waiting`.)
            paused = bool(translated) and translated[0].event == "waiting_for_user"
            if paused and await svc.runs.events_after(session.run_id, e.seq):
                mapper.ended = False
                continue
            if mapper.ended:  # the client may answer or cancel next: the execution has stopped first
                await svc.runs.wait(session.run_id)
            for item in translated:
                yield item
            if mapper.ended:
                return

    async def run(self, who: Principal, flow: FlowRow, body: Any, version: str | None) -> dict[str, Any]:
        """A synchronous turn: start (or answer) and wait until the run pauses or ends."""
        session = await self.open_session(who, flow, body, version)
        messages: list[str] = []
        ref: dict[str, Any] | list[Any] = []
        waiting: list[dict[str, Any]] = []
        error: str | None = None
        async for item in self.events(session):
            if item is None:
                continue
            if item.event == "message":
                messages.append(item.data["answer"])
                ref = item.data["reference"] or ref
            elif item.event == "waiting_for_user":
                waiting.append(item.data)
            elif item.event == "error":
                error = item.data["error"]
        await self.svc.runs.wait(session.run_id)  # its execution has stopped (paused or ended)
        row = await self.svc.runs.require(session.run_id)
        return {
            "session_id": session.run_id,
            "status": row.status,
            "answer": "\n".join(messages),
            "messages": messages,
            "reference": ref,
            "waiting_for_user": waiting,
            "error": error,
        }

    async def cancel(self, who: Principal, flow: FlowRow, body: Any) -> None:
        body = body_object(body)
        session_id = text_field(body, "session_id")
        if not session_id:
            raise Invalid("say which session to cancel: session_id")
        row = await self.svc.access.run(who, session_id, control=True)
        if row.flow_id != flow.id:
            raise NotFound(f"You don't own the session {session_id}")
        await self.svc.runs.cancel(row.id)

    # ------------------------------------------------------------------ RAGFlow's sessions API
    async def prologue(self, flow: FlowRow) -> str:
        """The Begin's prologue (the start node's `prologue`) of the version runs use."""
        resolved, _number, _draft = await self.svc.flows.resolve_for_run(flow.id, None)
        for pn in resolved.plan.nodes:
            if pn.spec.type == "start":
                return str((pn.spec.config or {}).get("prologue") or "")
        return ""

    async def session_view(self, flow: FlowRow, run_id: str, prologue: str) -> dict[str, Any]:
        """A run as RAGFlow shows a session: its messages are the prologue, the question and the
        answers, all read from the run's event log."""
        row = await self.svc.runs.require(run_id)
        messages: list[dict[str, Any]] = [{"role": "assistant", "content": prologue}]
        question = (row.inputs or {}).get("query") if isinstance(row.inputs, dict) else None
        if question:
            messages.append({"role": "user", "content": str(question)})
        resolved = await self.svc.flows.document_for_run(row.flow_id, row.version, row.document)
        mapper = RagflowEvents(output_nodes(resolved.plan), nodes_of_type(resolved.plan, "retrieval"))
        for e in await self.svc.runs.events_after(run_id, 0):
            for item in mapper.translate(e):
                if item.event == "message":
                    messages.append(
                        {
                            "role": "assistant",
                            "content": item.data["answer"],
                            "reference": item.data["reference"],
                        }
                    )
        return {
            "id": row.id,
            "agent_id": flow.id,
            "user_id": row.owner_id or "",
            "source": "agent",
            "status": row.status,
            "message": messages,
            "create_time": millis(row.created_at),
            "create_date": http_date(row.created_at),
        }

    async def create_session(self, who: Principal, flow: FlowRow, body: Any) -> dict[str, Any]:
        """`POST /sessions`: with Begin inputs in the body (or a `question`), the session's run
        starts now and the session is that run. Without, nothing runs yet: the id is new and the
        first completion under it starts a run tagged with it (see `completion_session`)."""
        body = body_object(body)
        prologue = await self.prologue(flow)
        inputs = plain_inputs({k: v for k, v in body.items() if k not in ("user_id", "question")})
        question = text_field(body, "question")
        if inputs or question:
            session = await self._start(who, flow, inputs, question, None)
            return await self.session_view(flow, session.run_id, prologue)
        return {
            "id": uuid.uuid4().hex,
            "agent_id": flow.id,
            "user_id": who.user_id or "",
            "source": "agent",
            "status": "new",
            "message": [{"role": "assistant", "content": prologue}],
        }

    async def list_sessions(
        self, who: Principal, flow: FlowRow, *, page: int, page_size: int, session_id: str | None, desc: bool
    ) -> builtins.list[dict[str, Any]]:
        """The agent's sessions (its runs the caller may see), newest first unless `desc` is false."""
        if page < 1 or not 1 <= page_size <= MAX_PAGE_SIZE:
            raise Invalid(f"page must be >= 1 and page_size between 1 and {MAX_PAGE_SIZE}")
        if session_id:
            row = await self.svc.access.run(who, session_id)
            if row.flow_id != flow.id:
                raise NotFound(f"You don't own the session {session_id}")
            ids = [row.id]
        else:
            runs = await self.svc.runs.list(
                flow_id=flow.id,
                visible_to=None if who.is_admin else who.user_id,
                limit=page_size,
                offset=(page - 1) * page_size,
            )
            ids = [r["id"] for r in runs]
            if not desc:
                ids.reverse()
        prologue = await self.prologue(flow)
        return [await self.session_view(flow, i, prologue) for i in ids]

    async def delete_sessions(self, who: Principal, flow: FlowRow, body: Any) -> None:
        """`{ids: [...]}`: delete those sessions (runs), cancelling any still going."""
        body = body_object(body)
        ids = body.get("ids")
        if not isinstance(ids, builtins.list) or not ids or not all(isinstance(i, str) for i in ids):
            raise Invalid("`ids` must be a list of session ids")
        rows = []
        for session_id in ids:
            row = await self.svc.access.run(who, session_id, control=True)
            if row.flow_id != flow.id:
                raise NotFound(f"The agent doesn't own the session {session_id}")
            rows.append(row)
        for row in rows:
            if not RunStatus(row.status).terminal:
                await self.svc.runs.cancel(row.id)
                await self.svc.runs.wait(row.id)
            await self.svc.store.runs.delete(row.id)

    async def completion_session(self, who: Principal, flow: FlowRow, body: Any) -> Session:
        """`POST /completions`: a session's turn. The first question of a session starts its run
        (`question` -> `sys.query`, `inputs` -> Begin inputs); a question to a session whose run
        waits answers the pending UserFillUp (its one field, else `query`); to an ended one, a
        new run of the same session.

        A session is its newest run: the run whose id it is, or a later one started under it,
        which carries the session's id as its `ragflow_session` input (so a client that keeps
        the id it created, as ragflow-sdk does, goes on with the same session)."""
        body = body_object(body)
        question = text_field(body, "question") or ""
        inputs = plain_inputs(body.get("inputs"))
        session_id = text_field(body, "session_id")
        if not session_id:
            return await self._start(who, flow, inputs, question or None, None)
        row = await self._session_run(who, flow, session_id)
        if row is None or RunStatus(row.status).terminal:
            return await self._start(who, flow, inputs, question or None, None, session=session_id)
        if row.status == RunStatus.WAITING and question and not inputs:
            inputs = await self._fill_up_answer(row.id, row.last_seq, question)
        return await self.open_session(
            who, flow, {"session_id": row.id, "inputs": inputs, "question": question}, None
        )

    async def _session_run(self, who: Principal, flow: FlowRow, session_id: str) -> Run | None:
        """The session's newest run: the latest started under its id, else the run it names;
        None for a session created empty whose first turn has not come."""
        recent = await self.svc.store.runs.list_runs(
            flow_id=flow.id,
            top_level=True,
            visible_to=None if who.is_admin else who.user_id,
            limit=MAX_SESSION_RUNS,
        )
        for candidate in recent:  # newest first
            if isinstance(candidate.inputs, dict) and candidate.inputs.get(SESSION_INPUT) == session_id:
                return await self.svc.access.run(who, candidate.id, control=True)
        try:
            row = await self.svc.access.run(who, session_id, control=True)
        except NotFound:
            return None
        if row.flow_id != flow.id:
            raise NotFound(f"You don't own the session {session_id}")
        return row

    async def _fill_up_answer(self, run_id: str, last_seq: int, question: str) -> dict[str, Any]:
        """The question as the answer of the run's pending UserFillUp: its one field, else `query`."""
        for e in await self.svc.runs.events_after(run_id, max(last_seq - 1, 0)):
            data = e.data
            if isinstance(data, ev.RunFinished) and data.interrupts:
                fields = user_form(data.interrupts[0])["inputs"]
                if len(fields) == 1:
                    return {next(iter(fields)): question}
        return {"query": question}

    async def completion(self, who: Principal, flow: FlowRow, body: Any) -> dict[str, Any]:
        """A non-streaming completion: the turn's answers, their reference, the session."""
        session = await self.completion_session(who, flow, body)
        answers: list[str] = []
        ref: dict[str, Any] | builtins.list[Any] = []
        waiting: builtins.list[dict[str, Any]] = []
        error: str | None = None
        async for item in self.events(session):
            if item is None:
                continue
            if item.event == "message":
                answers.append(item.data["answer"])
                ref = item.data["reference"] or ref
            elif item.event == "waiting_for_user":
                waiting.append(item.data)
                answers.append(str(item.data.get("tips") or ""))
            elif item.event == "error":
                error = item.data["error"]
        if error is not None:
            raise RagflowRunError(error)
        answer = "\n".join(a for a in answers if a)
        return {
            "answer": answer,
            "reference": ref,
            "id": f"{session.run_id}-{session.after}",
            "session_id": session.run_id,
            "waiting_for_user": waiting,
            # what ragflow-sdk's Session.ask(stream=False) reads: data.data.content
            "data": {"content": answer, "reference": ref},
        }

    async def completion_stream(self, session: Session) -> AsyncIterator[dict[str, Any] | None]:
        """A streaming completion's `data:` payloads (None: a heartbeat): one per answer (and per
        question a UserFillUp asks), an error as RAGFlow's `code` 500, then `message_end` (the
        turn's answers and reference) and finally `data: true`.

        Each payload is RAGFlow's older wire (`{code, message, data: {answer, reference, id,
        session_id}}`, which ends at `data: true`) and carries what ragflow-sdk's `Session.ask()`
        reads too: `event` (`message`, `message_end`, `error`) and `data.content`."""
        answers: list[str] = []
        ref: dict[str, Any] | builtins.list[Any] = []

        def line(event: str, answer: str, base: dict[str, Any], **more: Any) -> dict[str, Any]:
            data = {
                "answer": answer,
                "content": answer,
                "reference": more.pop("reference", []),
                **base,
                **more,
            }
            return {"code": SUCCESS, "message": "", "event": event, "data": data}

        base = {"id": f"{session.run_id}-{session.after}", "session_id": session.run_id}
        async for item in self.events(session):
            if item is None:
                yield None
                continue
            base = {"id": f"{session.run_id}-{item.seq}", "session_id": session.run_id}
            if item.event == "message":
                answers.append(item.data["answer"])
                ref = item.data["reference"] or ref
                yield line("message", item.data["answer"], base, reference=item.data["reference"])
            elif item.event == "waiting_for_user":
                tips = str(item.data.get("tips") or "")
                answers.append(tips)
                yield line("message", tips, base, waiting_for_user=item.data)
            elif item.event == "error":
                error = item.data["error"]
                failed = line("error", f"**ERROR**: {error}", base)
                yield {**failed, "code": SERVER_ERROR, "message": error}
        yield line("message_end", "\n".join(a for a in answers if a), base, reference=ref)
        yield {"code": SUCCESS, "message": "", "data": True}

    # ------------------------------------------------------------------ versions
    async def versions(self, flow: FlowRow) -> builtins.list[dict[str, Any]]:
        found = await self.svc.flows.list_versions(flow.id)
        return [version_view(flow, v) for v in sorted(found, key=lambda v: v["version"], reverse=True)]

    async def publish(self, flow: FlowRow, body: Any) -> dict[str, Any]:
        body = body_object(body)
        note = text_field(body, "title") or text_field(body, "note") or ""
        return version_view(flow, await self.svc.flows.publish(flow.id, note=note))

    async def version(self, flow: FlowRow, version_id: str) -> dict[str, Any]:
        number = self._version_number(version_id)
        view = version_view(flow, await self.svc.flows.get_version(flow.id, number))
        view["dsl"], error = await self._dsl(flow.id, str(number))
        if error is not None:
            view["dsl_error"] = error
        return view

    async def delete_version(self, flow: FlowRow, version_id: str) -> None:
        await self.svc.flows.delete_version(flow.id, self._version_number(version_id))

    @staticmethod
    def _version_number(version_id: str) -> int:
        spec = version_spec(version_id)
        if not isinstance(spec, int):
            raise Invalid(f"not a version id: {version_id!r}")
        return spec


__all__ = [
    "ARGUMENT_ERROR",
    "DATA_ERROR",
    "SUCCESS",
    "RagflowAgents",
    "RagflowRunError",
    "Session",
    "agent_view",
    "plain_inputs",
    "ragflow_code",
    "version_spec",
]
