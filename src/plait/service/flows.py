"""Flow library use cases: drafts, published versions, import and export."""

from __future__ import annotations

import builtins
import copy
import hashlib
import json
import re
import secrets
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from plait.engine.context import operator_keys
from plait.engine.flow import Flow, PlanCache, load_flow
from plait.net.redact import SecretMask
from plait.nodes.registry import NodeRegistry, default_registry
from plait.service.access import Access, AccessService, Principal
from plait.service.errors import Conflict, Forbidden, Invalid, NotFound
from plait.service.scrub import scrub_secrets
from plait.spec.formats.ragflow import RagflowImportError, import_ragflow, is_ragflow
from plait.spec.formats.ragflow_export import RagflowExportError, export_ragflow
from plait.spec.loader import check_document_data, read_document_data
from plait.spec.problems import FlowValidationError
from plait.store import Store
from plait.store.models import FlowRow, FlowShare, FlowVersion
from plait.tools import default_tools

FORMAT_RAGFLOW = "ragflow"
VERSIONS_KEPT = 256  # published versions `document_for_run` keeps compiled, by (flow, version)
DEFAULT_RAGFLOW_ID = "ragflow-agent"  # what the importer names a flow when no id is given
FLOW_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")


def check_flow_id(flow_id: str) -> str:
    if not isinstance(flow_id, str) or not FLOW_ID_RE.match(flow_id):
        raise Invalid(
            f"invalid flow id {flow_id!r}",
            details={
                "hint": "1-128 characters: letters, digits, '_', '-', '.'; starting with a letter or digit"
            },
        )
    return flow_id


def problems_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        load_flow(copy.deepcopy(document))
    except FlowValidationError as exc:
        return [p.to_dict() for p in exc.problems]
    return []


def invalid_flow(exc: FlowValidationError) -> Invalid:
    """The 422 of a flow with problems: every problem, with its node and field, in the details."""
    return Invalid(
        "the flow has problems",
        details={"problems": [p.to_dict() for p in exc.problems]},
        code="invalid_flow",
    )


def flow_summary(row: FlowRow, access: str | None = None) -> dict[str, Any]:
    """A flow without its draft; `access`: what the caller may do (owner, admin, editor, viewer)."""
    out = {
        "id": row.id,
        "name": row.name,
        "description": row.description,
        "latest_version": row.latest_version,
        "owner_id": row.owner_id,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if access is not None:
        out["access"] = access
    return out


def access_name(who: Principal, row: FlowRow, share_role: str | None) -> str:
    if row.owner_id == who.user_id:
        return "owner"
    if who.is_admin:
        return "admin"
    return share_role or "viewer"


def version_view(row: FlowVersion, *, document: bool = True) -> dict[str, Any]:
    out = {"flow_id": row.flow_id, "version": row.version, "note": row.note, "created_at": row.created_at}
    if document:
        out["document"] = row.document
    return out


class FlowService:
    """Flows and their versions. Which version is "latest" is cached per flow for `cache_ttl_s`
    (every run asks): publishing or deleting here updates it at once; another process's changes
    are seen within the TTL."""

    def __init__(
        self, store: Store, *, access: AccessService | None = None, cache_ttl_s: float = 1.0
    ) -> None:
        self.store = store
        self.access = access or AccessService(store)
        self.cache_ttl_s = cache_ttl_s
        # Compiled flows: published versions by version row, drafts by content (the engine
        # keeps no cache; the owner of the flows does).
        self.plans = PlanCache(256)
        self._latest: dict[str, tuple[float, Flow, int]] = {}
        # The published versions runs used lately: (flow, version) -> (version row, compiled),
        # the row as (id, created_at). A version is immutable, but a flow deleted and created
        # again numbers its versions anew: an entry is used only for the row the caller read with
        # the run (see `document_for_run`).
        self._versions: OrderedDict[tuple[str, int], tuple[tuple[int, float], Flow]] = OrderedDict()

    # ------------------------------------------------------------------ drafts
    async def create(
        self,
        document: dict[str, Any],
        *,
        flow_id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        overwrite: bool = False,
        owner_id: str | None = None,
        who: Principal | None = None,
    ) -> dict[str, Any]:
        """Store a new flow draft, owned by `who` (or `owner_id`; a run of the flow uses its
        owner's custom components). Overwriting keeps the owner and needs edit access.

        Flow ids are global, but a caller never learns of a flow they cannot see: when the id is
        taken by one, theirs gets a free id (`<id>-<6 hex>`) instead of a conflict."""
        if not isinstance(document, dict):
            raise Invalid("the flow document must be a JSON object")
        check_document_data(document)  # size and nesting limits: FlowValidationError, a 422
        fid = check_flow_id(flow_id or str(document.get("id") or ""))
        if who is not None:
            owner_id = who.user_id
        existing = await self.store.flows.get(fid)
        if existing is not None:
            have = Access.OWN if who is None else await self.access.flow_access(who, existing)
            if have is Access.NONE:
                fid = await self._free_id(fid)
            elif overwrite and have < Access.EDIT:
                raise Forbidden(f"flow {fid!r} is shared with you as a viewer: you cannot overwrite it")
            elif overwrite:
                await self.update(fid, {**document, "id": fid}, name=name, description=description)
                return await self.get(fid, who=who)
        doc = {**document, "id": fid}
        doc.setdefault("schema", "plait/flow@1")
        try:
            await self.store.flows.create(
                fid,
                doc,
                name=name if name is not None else str(doc.get("name") or fid),
                description=description if description is not None else str(doc.get("description") or ""),
                owner_id=owner_id,
            )
        except IntegrityError as exc:
            raise Conflict(f"flow {fid!r} already exists", details={"hint": "update it with PUT"}) from exc
        return await self.get(fid, who=who)

    async def _free_id(self, taken: str) -> str:
        while True:
            candidate = f"{taken[:120]}-{secrets.token_hex(3)}"
            if await self.store.flows.get(candidate) is None:
                return candidate

    async def get_row(self, flow_id: str) -> FlowRow:
        row = await self.store.flows.get(flow_id)
        if row is None:
            raise NotFound(f"no flow {flow_id!r}")
        return row

    async def get(self, flow_id: str, *, who: Principal | None = None) -> dict[str, Any]:
        row = await self.get_row(flow_id)
        access = None
        if who is not None:
            share = None if row.owner_id == who.user_id else await self.store.shares.get(row.id, who.user_id)
            access = access_name(who, row, share.role if share is not None else None)
        return {**flow_summary(row, access), "draft": row.draft, "problems": problems_of(row.draft)}

    async def list(
        self, who: Principal | None = None, *, limit: int = 100, offset: int = 0
    ) -> builtins.list[dict[str, Any]]:
        """Newest first; with `who`, only what they may see (an admin: everything)."""
        if who is None:
            return [flow_summary(r) for r in await self.store.flows.list_flows(limit=limit, offset=offset)]
        visible_to = None if who.is_admin else who.user_id
        rows = await self.store.flows.list_flows(visible_to=visible_to, limit=limit, offset=offset)
        async with self.store.sessionmaker() as session:
            shared = dict(
                (
                    await session.execute(
                        select(FlowShare.flow_id, FlowShare.role).where(FlowShare.user_id == who.user_id)
                    )
                ).all()
            )
        return [flow_summary(r, access_name(who, r, shared.get(r.id))) for r in rows]

    # ------------------------------------------------------------------ shares
    async def shares(self, flow_id: str) -> builtins.list[dict[str, Any]]:
        out = []
        for share in await self.store.shares.list_for_flow(flow_id):
            user = await self.store.users.get(share.user_id)
            out.append(
                {
                    "user_id": share.user_id,
                    "email": user.email if user else None,
                    "name": user.name if user else "",
                    "role": share.role,
                }
            )
        return out

    async def share(self, flow: FlowRow, user: str, role: str) -> dict[str, Any]:
        """Share with a user named by id or by email (what a non-admin, who cannot list users,
        knows of a colleague)."""
        found = (
            await self.store.users.get_by_email(user.strip().lower())
            if "@" in user
            else await self.store.users.get(user)
        )
        if found is None or found.disabled:
            raise NotFound(f"no user {user!r}")
        user_row = found
        if user_row.id == flow.owner_id:
            raise Conflict("the flow's owner has every right on it already; share it with someone else")
        if role not in ("viewer", "editor"):
            raise Invalid(f"unknown share role {role!r}: use viewer or editor")
        await self.store.shares.set(flow.id, user_row.id, role)
        return {"user_id": user_row.id, "email": user_row.email, "name": user_row.name, "role": role}

    async def unshare(self, flow_id: str, user_id: str) -> None:
        if not await self.store.shares.delete(flow_id, user_id):
            raise NotFound(f"flow {flow_id!r} is not shared with user {user_id!r}")

    async def count(self) -> int:
        async with self.store.sessionmaker() as session:
            return int((await session.execute(select(func.count()).select_from(FlowRow))).scalar_one())

    async def update(
        self,
        flow_id: str,
        document: dict[str, Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> dict[str, Any]:
        if document is not None:
            if not isinstance(document, dict):
                raise Invalid("the flow document must be a JSON object")
            check_document_data(document)  # size and nesting limits: FlowValidationError, a 422
            document = {**document, "id": flow_id}
            document.setdefault("schema", "plait/flow@1")
        row = await self.store.flows.update(flow_id, draft=document, name=name, description=description)
        if row is None:
            raise NotFound(f"no flow {flow_id!r}")
        return await self.get(flow_id)

    async def duplicate(
        self,
        flow_id: str,
        *,
        new_id: str | None = None,
        name: str | None = None,
        owner_id: str | None = None,
        who: Principal | None = None,
    ) -> dict[str, Any]:
        """A new flow whose draft is a copy of `flow_id`'s draft (versions and runs stay behind).
        Without `new_id`: `<id>-copy`, `<id>-copy-2`, ... whichever is free."""
        row = await self.get_row(flow_id)
        if new_id is None:
            base = f"{flow_id}-copy"[:120]
            new_id, n = base, 1
            while await self.store.flows.get(new_id) is not None:
                n += 1
                new_id = f"{base}-{n}"
        return await self.create(
            copy.deepcopy(row.draft),
            flow_id=new_id,
            name=name if name is not None else f"{row.name} (copy)",
            description=row.description,
            owner_id=owner_id,
            who=who,
        )

    async def delete(self, flow_id: str) -> None:
        self._latest.pop(flow_id, None)
        if not await self.store.flows.delete(flow_id):
            raise NotFound(f"no flow {flow_id!r}")

    # ------------------------------------------------------------------ versions
    async def publish(self, flow_id: str, *, note: str = "") -> dict[str, Any]:
        row = await self.get_row(flow_id)
        problems = problems_of(row.draft)
        if problems:
            raise Invalid(
                "the draft has problems; fix them before publishing",
                details={"problems": problems},
                code="invalid_flow",
            )
        self._latest.pop(flow_id, None)
        version = await self.store.flows.publish(flow_id, document=row.draft, note=note)
        if version is None:
            raise NotFound(f"no flow {flow_id!r}")
        return version_view(version)

    async def list_versions(self, flow_id: str) -> builtins.list[dict[str, Any]]:
        await self.get_row(flow_id)
        return [version_view(v, document=False) for v in await self.store.flows.list_versions(flow_id)]

    async def get_version(self, flow_id: str, version: int) -> dict[str, Any]:
        row = await self.store.flows.get_version(flow_id, version)
        if row is None:
            raise NotFound(f"flow {flow_id!r} has no version {version}")
        return version_view(row)

    async def delete_version(self, flow_id: str, version: int) -> None:
        # The store has no delete for versions: one DELETE here (runs keep their version number).
        self._latest.pop(flow_id, None)
        async with self.store.sessionmaker.begin() as session:
            result = await session.execute(
                delete(FlowVersion).where(FlowVersion.flow_id == flow_id, FlowVersion.version == version)
            )
            if not result.rowcount:  # type: ignore[attr-defined]
                raise NotFound(f"flow {flow_id!r} has no version {version}")

    async def resolve(self, flow_id: str, version: str | int | None) -> tuple[Flow, int | None]:
        """The compiled flow to run: `version` N, "latest" (published), "draft", or None (latest
        published, else the draft). Raises NotFound / Conflict / Invalid (with the problems)."""
        flow, number, _draft = await self.resolve_for_run(flow_id, version)
        return flow, number

    async def resolve_for_run(
        self, flow_id: str, version: str | int | None
    ) -> tuple[Flow, int | None, dict[str, Any] | None]:
        """As `resolve`, plus the draft document when it is the draft that runs (the run keeps
        it: drafts change, and a resumed run must continue the graph it started with)."""
        number: int | None
        spec = "default" if version is None else str(version).strip().lower()
        if spec == "draft":
            draft = (await self.get_row(flow_id)).draft
            return self.compile(flow_id, draft), None, draft
        if spec in ("latest", "default"):
            now = time.monotonic()
            cached = self._latest.get(flow_id)
            if cached is not None and cached[0] > now:
                return cached[1], cached[2], None
            # A version implies its flow (versions are deleted with it): the flow row is read
            # only when there is no published version.
            v = await self.store.flows.get_version(flow_id, None)
            if v is None:
                row = await self.get_row(flow_id)
                if spec == "latest":
                    raise Conflict(
                        f"flow {flow_id!r} has no published version",
                        details={"hint": "publish it, or run the draft with version=draft"},
                    )
                return self.compile(flow_id, row.draft), None, row.draft
            flow = self._compiled_version(v)
            if self.cache_ttl_s > 0:
                if len(self._latest) >= 1024:
                    self._latest.pop(next(iter(self._latest)))
                self._latest[flow_id] = (now + self.cache_ttl_s, flow, v.version)
            return flow, v.version, None
        try:
            number = int(spec)
        except ValueError as exc:
            await self.get_row(flow_id)
            raise Invalid(f"version must be a number, 'latest' or 'draft', not {version!r}") from exc
        v = await self.store.flows.get_version(flow_id, number)
        if v is None:
            await self.get_row(flow_id)
            raise NotFound(f"flow {flow_id!r} has no version {number}")
        return self._compiled_version(v), number, None

    async def load_subflow(self, ref: str) -> Flow | None:
        """Sub-flow nodes name other flows of the library by id: their latest published version."""
        try:
            flow, _ = await self.resolve(ref, None)
        except NotFound:
            return None
        return flow

    async def document_for_run(
        self,
        flow_id: str,
        version: int | None,
        document: dict[str, Any] | None = None,
        *,
        version_row: tuple[int, float] | None = None,
    ) -> Flow:
        """The flow a stored run continues with: its version, else the draft document it kept
        (`Run.document`), else (runs from before drafts were kept) the current draft.
        `version_row`: which row the version is, (id, created_at), read with the run
        (`RunRepo.take_over_with_version`): a version compiled here lately from that row is not
        read again."""
        if version is None:
            if document is not None:
                return self.compile(flow_id, document)
            return self.compile(flow_id, (await self.get_row(flow_id)).draft)
        key = (flow_id, version)
        if version_row is not None:
            known = self._versions.get(key)
            if known is not None and known[0] == version_row:
                self._versions.move_to_end(key)
                return known[1]
        v = await self.store.flows.get_version(flow_id, version)
        if v is None:
            raise NotFound(f"flow {flow_id!r} has no version {version}")
        flow = self._compiled_version(v)
        self._versions[key] = ((v.id, v.created_at), flow)
        self._versions.move_to_end(key)
        if len(self._versions) > VERSIONS_KEPT:
            self._versions.popitem(last=False)
        return flow

    def _compiled_version(self, v: FlowVersion) -> Flow:
        """Published versions are immutable: each is compiled once (a compiled `Flow` is shared
        by its runs; the engine keeps per-run state in the runner). Keyed by the version row's
        id and creation time, so a number published again after a delete is compiled anew."""
        return self.compile(v.flow_id, v.document, key=(v.flow_id, v.version, v.id, v.created_at))

    def compile(self, flow_id: str, document: dict[str, Any], *, key: Any = None) -> Flow:
        """The compiled flow of `document` as flow `flow_id`, from the plan cache (by `key`, else
        by content); raises Invalid with the flow's problems."""
        try:
            return self.plans.load({**document, "id": flow_id}, key=key)
        except FlowValidationError as exc:
            raise invalid_flow(exc) from exc

    # ------------------------------------------------------------------ import / export
    async def import_document(
        self,
        source: str | dict[str, Any],
        *,
        overwrite: bool = False,
        publish: bool = False,
        owner_id: str | None = None,
        who: Principal | None = None,
        fmt: str | None = None,
        flow_id: str | None = None,
    ) -> dict[str, Any]:
        """Import a plait flow or a RAGFlow agent (JSON or YAML text, or a dict); problems are
        reported, not fatal (the draft is stored), unless `publish` is asked.

        `fmt` is "plait" or "ragflow"; None detects it (a RAGFlow document has `components` or
        `graph`, never `schema`). A RAGFlow import adds `format` and the importer's `warnings` to
        the answer; its flow id is `flow_id`, else one derived from the document's content."""
        if fmt not in (None, "plait", FORMAT_RAGFLOW):
            raise Invalid(f"unknown format {fmt!r}", details={"hint": "use plait or ragflow"})
        if isinstance(source, str):
            if not source.strip():
                raise Invalid("the document is empty")
            try:
                # The trailing newline keeps the loader from ever reading it as a file path.
                data = read_document_data(source + "\n")
            except FlowValidationError as exc:
                raise Invalid(
                    "cannot parse the document",
                    details={"problems": [p.to_dict() for p in exc.problems]},
                    code="invalid_flow",
                ) from exc
        else:
            data = source
        if not isinstance(data, dict):
            raise Invalid("the flow document must be a JSON/YAML object")
        warnings: builtins.list[str] | None = None
        if fmt == FORMAT_RAGFLOW or (fmt is None and is_ragflow(data)):
            data, warnings = self._from_ragflow(data, flow_id)
        elif fmt is None and not ({"schema", "nodes"} & data.keys()):
            raise Invalid(
                "unknown document: neither a plait flow (schema, nodes) nor a RAGFlow agent "
                "(components, or graph.nodes)",
                details={"hint": "import a plait/flow@1 document or a RAGFlow agent's DSL JSON"},
            )
        elif flow_id:
            data = {**data, "id": flow_id}
        if not data.get("id"):
            raise Invalid("the document has no id", details={"hint": 'add "id": "my-flow"'})
        flow = await self.create(data, overwrite=overwrite, owner_id=owner_id, who=who)
        if publish:
            await self.publish(flow["id"], note="imported")
            flow = await self.get(flow["id"], who=who)
        if warnings is not None:
            flow = {**flow, "format": FORMAT_RAGFLOW, "warnings": warnings}
        return flow

    def _from_ragflow(
        self, data: dict[str, Any], flow_id: str | None
    ) -> tuple[dict[str, Any], builtins.list[str]]:
        """The plait flow of a RAGFlow document, and the importer's warnings; refusals are 422s
        that name every component at fault (docs/ragflow.md)."""
        try:
            result = import_ragflow(
                data,
                catalog=self.plans.registry or default_registry(),
                tools=default_tools().names(),
                flow_id=flow_id,
            )
        except RagflowImportError as exc:
            details: dict[str, Any] = {"hint": exc.hint} if exc.hint else {}
            if exc.components:
                details["components"] = exc.components
            raise Invalid(exc.message, details=details, code=exc.code) from exc
        document = result.document
        if not flow_id and document.get("id") == DEFAULT_RAGFLOW_ID:
            digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()
            document["id"] = f"ragflow-{digest[:10]}"
        return document, result.warnings

    async def import_file(
        self, path: Path, *, publish: bool = True, owner_id: str | None = None
    ) -> dict[str, Any]:
        return await self.import_document(
            path.read_text(encoding="utf-8"), publish=publish, owner_id=owner_id
        )

    async def export(self, flow_id: str, version: str | None = None, fmt: str = "json") -> str:
        """The flow as JSON or YAML text, or as a RAGFlow agent document (`fmt` "ragflow"), with
        the secrets its runs read scrubbed."""
        row = await self.get_row(flow_id)
        spec = (version or "draft").strip().lower()
        if spec == "draft":
            document = row.draft
        else:
            if spec == "latest":
                v = await self.store.flows.get_version(flow_id, None)
            else:
                try:
                    v = await self.store.flows.get_version(flow_id, int(spec))
                except ValueError as exc:
                    raise Invalid(f"version must be a number, 'latest' or 'draft', not {version!r}") from exc
            if v is None:
                raise NotFound(f"flow {flow_id!r} has no version {version}")
            document = v.document
        # By value: the secrets the flow's runs read by default (its owner's and the deployment's).
        run_variables = await self.store.variables.for_run(row.owner_id)
        clean = scrub_secrets(document, SecretMask([*run_variables.secrets, *operator_keys()]))
        if fmt == "yaml":
            return yaml.safe_dump(clean, sort_keys=False, allow_unicode=True)
        if fmt == FORMAT_RAGFLOW:
            exported = _to_ragflow({**clean, "id": flow_id}, self.plans.registry or default_registry())
            return json.dumps(exported, indent=2, ensure_ascii=False)
        if fmt != "json":
            raise Invalid("format must be json, yaml or ragflow")
        return json.dumps(clean, indent=2, ensure_ascii=False)


def _to_ragflow(document: dict[str, Any], registry: NodeRegistry) -> dict[str, Any]:
    """A flow as a RAGFlow agent document; a flow that cannot be one is a 422 naming its nodes."""
    try:
        return export_ragflow(document, catalog=registry)
    except RagflowExportError as exc:
        details: dict[str, Any] = {"hint": exc.hint} if exc.hint else {}
        if exc.nodes:
            details["nodes"] = exc.nodes
        raise Invalid(exc.message, details=details, code=exc.code) from exc
    except FlowValidationError as exc:
        raise invalid_flow(exc) from exc
