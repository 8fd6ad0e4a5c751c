"""Who may do what: the caller (`Principal`), roles, key scopes, and the access rules for flows
and runs. Every route that reads or changes a resource goes through one of these checks.

The rules (issue 11):
- a user's role caps what any of their credentials can do: `viewer` reads, `editor` also writes
  and runs, `admin` also manages users and deployment-wide variables and sees every resource;
- an API key carries scopes (`read`, `write`, `run`, `admin`); what it may do is its scopes
  within its user's role (a browser session has every scope of the role);
- a flow is its owner's; sharing it with a user as `viewer` lets them read it and its versions
  and runs, as `editor` also change, publish and run it. Only the owner (or an admin) deletes a
  flow or changes its shares;
- a run is visible to the user it acts as (who started it) and to whoever can view its flow;
  cancelling, resuming or retrying it needs `run` and edit access to the flow (or being the
  user who started it). A sub-flow's child run acts as its parent's user and is visible to
  whoever can see its top-level run; it is controlled through that run (409 on the child);
- what a caller may not see is a 404, exactly as if it did not exist (no existence oracle);
  what they can see but may not do is a 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

from plait.service.errors import Conflict, Forbidden, NotFound
from plait.store import Store
from plait.store.models import FlowRow, Run


class Role(StrEnum):
    ADMIN = "admin"
    EDITOR = "editor"
    VIEWER = "viewer"


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    RUN = "run"
    ADMIN = "admin"


ALL_SCOPES: frozenset[Scope] = frozenset(Scope)
ROLE_SCOPES: dict[Role, frozenset[Scope]] = {
    Role.ADMIN: ALL_SCOPES,
    Role.EDITOR: frozenset({Scope.READ, Scope.WRITE, Scope.RUN}),
    Role.VIEWER: frozenset({Scope.READ}),
}


class Access(IntEnum):
    """What a caller may do with one flow, in increasing order."""

    NONE = 0
    VIEW = 1
    EDIT = 2
    OWN = 3  # the owner, or an admin: delete, share


SHARE_ACCESS = {"viewer": Access.VIEW, "editor": Access.EDIT}
MAX_PARENT_HOPS = 64  # sub-flow nesting is bounded well below this (PLAIT_MAX_SUBFLOW_DEPTH)


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller of a request: a user, how they authenticated, and what they may do."""

    user_id: str
    role: Role
    scopes: frozenset[Scope]
    via: str = "key"  # key | session | deployment (PLAIT_API_KEY or auth off)
    key_id: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN and Scope.ADMIN in self.scopes

    def require(self, scope: Scope) -> None:
        """403 unless the caller holds `scope` (in its key and its role)."""
        if scope not in self.scopes:
            if scope in ROLE_SCOPES[self.role]:
                raise Forbidden(
                    f"this API key lacks the `{scope}` scope",
                    hint=f"create a key with the `{scope}` scope (POST /api/v1/api-keys)",
                )
            raise Forbidden(f"a user with the role `{self.role}` cannot do this (it needs `{scope}`)")


def principal(
    user_id: str, role: str, scopes: list[str] | None, *, via: str, key_id: str | None = None
) -> Principal:
    """A caller from stored fields: the key's scopes (None: all) within the user's role."""
    user_role = Role(role) if role in Role._value2member_map_ else Role.VIEWER
    granted = (
        ALL_SCOPES if scopes is None else frozenset(Scope(s) for s in scopes if s in Scope._value2member_map_)
    )
    return Principal(user_id, user_role, granted & ROLE_SCOPES[user_role], via, key_id)


class AccessService:
    """The access checks on stored flows and runs (see the module docstring)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def flow_access(self, who: Principal, flow: FlowRow) -> Access:
        if who.is_admin or flow.owner_id == who.user_id:
            return Access.OWN
        share = await self.store.shares.get(flow.id, who.user_id)
        return Access.NONE if share is None else SHARE_ACCESS.get(share.role, Access.NONE)

    async def flow(self, who: Principal, flow_id: str, need: Access = Access.VIEW) -> FlowRow:
        """The flow, when the caller may `need` it: 404 when they cannot see it, 403 when they can
        see it but not do this."""
        flow = await self.store.flows.get(flow_id)
        have = Access.NONE if flow is None else await self.flow_access(who, flow)
        if flow is None or have < Access.VIEW:
            raise NotFound(f"no flow {flow_id!r}")
        if have < need:
            what = "change" if need is Access.EDIT else "delete or share"
            raise Forbidden(
                f"flow {flow_id!r} is shared with you as a viewer: you cannot {what} it"
                if need is Access.EDIT
                else f"only the owner of flow {flow_id!r} (or an admin) can {what} it"
            )
        return flow

    async def can_view_flow(self, who: Principal, flow_id: str) -> bool:
        flow = await self.store.flows.get(flow_id)
        return flow is not None and await self.flow_access(who, flow) >= Access.VIEW

    async def run(self, who: Principal, run_id: str, *, control: bool = False) -> Run:
        """The run, when the caller may see it (and, with `control`, cancel/resume/retry it)."""
        row = await self.store.runs.get(run_id)
        if row is None:
            raise NotFound(f"no run {run_id!r}")
        if not (who.is_admin or row.owner_id == who.user_id):
            flow = await self.store.flows.get(await self._top_flow_id(row))
            have = Access.NONE if flow is None else await self.flow_access(who, flow)
            if have < Access.VIEW:
                raise NotFound(f"no run {run_id!r}")
            if control and have < Access.EDIT:
                raise Forbidden(
                    f"run {run_id!r} is of a flow shared with you as a viewer: you cannot control it"
                )
        if control and row.parent_run_id is not None:
            raise Conflict(
                f"run {run_id!r} is a sub-flow run of run {row.parent_run_id!r}, which continues it",
                hint=f"cancel, answer or retry run {row.parent_run_id!r} instead",
            )
        return row

    async def _top_flow_id(self, row: Run) -> str:
        """The flow a run is seen through: its own, or for a sub-flow's child run the flow of the
        top-level run above it (a child is visible to whoever can see its parent)."""
        for _ in range(MAX_PARENT_HOPS):
            if row.parent_run_id is None:
                break
            parent = await self.store.runs.get(row.parent_run_id)
            if parent is None:
                break
            row = parent
        return row.flow_id


__all__ = [
    "ALL_SCOPES",
    "ROLE_SCOPES",
    "Access",
    "AccessService",
    "Principal",
    "Role",
    "Scope",
    "principal",
]
