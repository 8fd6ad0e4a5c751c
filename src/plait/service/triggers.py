"""`TriggerService`: what starts runs without a caller: schedules (cron in a time zone) and
webhooks with their own secret. Runs a trigger starts act as the flow's owner and carry the
trigger's id (`runs.trigger_id`).

Exactly once, however many servers run: every firing is first a row `(trigger_id, fire_key)` in
`trigger_fires` (unique). Each server's scheduler looks at the due schedules once a second; for a
due one it computes the tick to fire (the latest cron time not after now), INSERTs "at:<tick>",
and only the server whose INSERT went through starts the run. A signed webhook delivery INSERTs
"sig:<signature>", so the same delivery sent again is refused (a replay) on any server.

Missed-run policy (`missed`): after a pause (the servers were down, the scheduler was late by more
than `grace_s`), `skip` fires nothing for the ticks it missed and waits for the next one;
`run_once` fires one run for all of them. Overlap policy (`overlap`): `skip` records the tick as
skipped while a run this trigger started is still queued, running or waiting; `allow` starts it
anyway.

Firings older than PLAIT_TRIGGER_FIRES_RETENTION_DAYS (30) are pruned by the scheduler loop, in
batches, about once an hour (`prune_fires`); the rows that still guard a tick or an active run stay.

The clock is injectable (`clock`, or `tick(now)`): tests freeze it and run several schedulers over
one database.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from plait import validate_inputs
from plait.service.errors import Conflict, Invalid, NotFound, Unauthorized
from plait.service.flows import FlowService
from plait.service.metrics import TRIGGERS_FIRED
from plait.service.runs import RunService
from plait.store import Store
from plait.store.models import Trigger, TriggerFire

log = logging.getLogger("plait.service.triggers")
UTC_ZONE = ZoneInfo("UTC")

KINDS = ("schedule", "webhook")
POLL_S = 1.0  # how often a scheduler looks for due schedules
PRUNE_EVERY_S = 3600.0  # how often a scheduler prunes old firings (and once at start)
PRUNE_BATCH = 1000  # firings deleted per statement (short transactions, no long lock)
DAY_S = 86400.0
# Firings are kept at least this long whatever the setting: longer than a signature may be old
# (WebhookConfig.tolerance_s, at most an hour), so a pruned delivery cannot be replayed.
MIN_RETENTION_S = 2 * 3600.0
SIGNATURE_HEADER = "x-plait-signature"
SECRET_HEADER = "x-plait-secret"
IDEMPOTENCY_HEADER = "idempotency-key"
HOOK_PATH = "/api/v1/hooks/{id}"
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def cron_of(expr: str, zone_info: ZoneInfo) -> Callable[[datetime, bool], CronSim]:
    """A CronSim factory for `expr` (an alias such as @daily is spelled out first)."""
    spelled = ALIASES.get(expr.strip().lower(), expr)
    return lambda start, reverse: CronSim(spelled, start.astimezone(zone_info), reverse=reverse)


class ScheduleConfig(BaseModel):
    """A schedule trigger's `config`."""

    model_config = ConfigDict(extra="forbid")

    cron: str = Field(description="A cron expression (5 fields; @hourly, @daily... too).")
    timezone: str = Field("UTC", description="The IANA time zone the cron expression is read in.")
    missed: Literal["skip", "run_once"] = Field(
        "skip", description="Ticks missed (servers down, late by over grace_s): skip them, or run once."
    )
    overlap: Literal["skip", "allow"] = Field(
        "skip", description="While a run of this trigger is active: skip the tick, or start another."
    )
    grace_s: float = Field(60.0, ge=1, le=86400, description="How late a tick may still fire.")
    inputs: dict[str, Any] = Field(default_factory=dict, description="The inputs of each run.")
    node_id: str | None = Field(
        None,
        description="Set on a schedule a start node of the flow declares (`trigger: schedule`, "
        "`schedule: <cron>`): plait keeps it in step with the latest published version.",
    )


class WebhookConfig(BaseModel):
    """A webhook trigger's `config`."""

    model_config = ConfigDict(extra="forbid")

    require_signature: bool = Field(
        False, description="Refuse the secret as a bearer token: only HMAC-signed deliveries."
    )
    tolerance_s: float = Field(300.0, ge=1, le=3600, description="How old a signature's timestamp may be.")


def parse_config(kind: str, config: Mapping[str, Any] | None) -> ScheduleConfig | WebhookConfig:
    """The validated config of a trigger kind; Invalid names the field that is wrong."""
    if kind not in KINDS:
        raise Invalid(f"unknown trigger kind {kind!r}; use one of {', '.join(KINDS)}")
    model: type[ScheduleConfig] | type[WebhookConfig] = (
        ScheduleConfig if kind == "schedule" else WebhookConfig
    )
    try:
        parsed = model.model_validate(dict(config or {}))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "config"
        raise Invalid(f"config.{where}: {err['msg']}", details=exc.errors(include_url=False)) from exc
    if isinstance(parsed, ScheduleConfig):
        zone(parsed.timezone)
        try:
            cron_of(parsed.cron, UTC_ZONE)(datetime.now(UTC), False)
        except CronSimError as exc:
            raise Invalid(f"config.cron: {parsed.cron!r} is not a cron expression: {exc}") from exc
    return parsed


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise Invalid(f"config.timezone: unknown time zone {name!r} (use an IANA name)") from exc


def next_tick(cfg: ScheduleConfig, after: float) -> float:
    """The first cron time strictly after `after` (epoch seconds)."""
    start = datetime.fromtimestamp(after, zone(cfg.timezone)).replace(microsecond=0)
    return next(iter(cron_of(cfg.cron, zone(cfg.timezone))(start, False))).timestamp()


def last_tick(cfg: ScheduleConfig, now: float) -> float:
    """The latest cron time at or before `now`."""
    start = datetime.fromtimestamp(now, zone(cfg.timezone)).replace(microsecond=0) + timedelta(seconds=1)
    return next(iter(cron_of(cfg.cron, zone(cfg.timezone))(start, True))).timestamp()


def sign(secret: str, timestamp: int | str, body: bytes) -> str:
    """The `X-Plait-Signature` header of a delivery: `t=<unix time>,v1=<hex HMAC-SHA256 of
    "<t>." + body with the trigger's secret>`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def parse_signature(header: str) -> tuple[int, str]:
    parts: dict[str, str] = {}
    for item in header.split(","):
        key, _, value = item.strip().partition("=")
        parts.setdefault(key, value)
    try:
        return int(parts["t"]), parts["v1"]
    except (KeyError, ValueError) as exc:
        raise Unauthorized(
            f"malformed {SIGNATURE_HEADER} header", hint="send t=<unix time>,v1=<hex HMAC-SHA256>"
        ) from exc


def declared_id(flow_id: str, node_id: str) -> str:
    """The id of the schedule a start node declares: the same on every server, so they add it once."""
    return "d" + hashlib.sha256(f"{flow_id}\0{node_id}".encode()).hexdigest()[:31]


def declared_schedules(document: Mapping[str, Any]) -> dict[str, str]:
    """The start nodes of a flow document that declare a schedule: node id -> cron."""
    found: dict[str, str] = {}
    for node in document.get("nodes") or []:
        if not isinstance(node, dict) or node.get("type") != "start":
            continue
        config = node.get("config") or {}
        cron = config.get("schedule") if isinstance(config, dict) else None
        if (
            isinstance(config, dict)
            and config.get("trigger") == "schedule"
            and isinstance(cron, str)
            and cron.strip()
        ):
            found[str(node.get("id"))] = cron.strip()
    return found


def trigger_view(row: Trigger, fires: list[TriggerFire] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": row.id,
        "flow_id": row.flow_id,
        "kind": row.kind,
        "config": row.config,
        "enabled": row.enabled,
        "last_fired_at": row.last_fired_at,
        "next_fire_at": row.next_fire_at,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "url": HOOK_PATH.format(id=row.id) if row.kind == "webhook" else None,
    }
    if fires is not None:
        view["fires"] = [
            {
                "fire_at": f.fire_at,
                "status": f.status,
                "run_id": f.run_id,
                "error": f.error,
            }
            for f in fires
        ]
    return view


class TriggerService:
    def __init__(
        self,
        store: Store,
        flows: FlowService,
        runs: RunService,
        *,
        clock: Callable[[], float] = time.time,
        poll_s: float = POLL_S,
    ) -> None:
        self.store = store
        self.flows = flows
        self.runs = runs
        self.clock = clock
        self.poll_s = poll_s
        days = runs.settings.trigger_fires_retention_days
        self.retention_s = max(days * DAY_S, MIN_RETENTION_S) if days > 0 else 0.0  # 0: never prune
        self._task: asyncio.Task[None] | None = None
        self._next_prune = 0.0  # time.monotonic() of the next prune
        self._versions_seen = 0  # the last flow version whose declared schedules were synced

    # ------------------------------------------------------------------ management
    async def create(
        self, flow_id: str, kind: str, config: Mapping[str, Any] | None, *, enabled: bool = True
    ) -> dict[str, Any]:
        """A new trigger of the flow. A webhook's secret is in the answer, once (`secret`)."""
        cfg = parse_config(kind, config)
        await self._check_inputs(flow_id, cfg)
        secret = None
        next_at = None
        if isinstance(cfg, ScheduleConfig):
            next_at = next_tick(cfg, self.clock()) if enabled else None
        else:
            secret = "whsec_" + secrets.token_urlsafe(32)
        row = await self.store.triggers.create(
            flow_id,
            kind,
            cfg.model_dump(),
            enabled=enabled,
            secret=secret,
            secret_enc=self.store.box.encrypt(secret) if secret else None,
            next_fire_at=next_at,
        )
        view = trigger_view(row)
        if secret is not None:
            view["secret"] = secret
        return view

    async def _check_inputs(self, flow_id: str, cfg: ScheduleConfig | WebhookConfig) -> None:
        """A schedule's inputs against the input schema of the flow's latest published version
        (422 naming the field), when there is one; they are checked again at each run's start."""
        if not isinstance(cfg, ScheduleConfig):
            return
        try:
            flow, _, _ = await self.flows.resolve_for_run(flow_id, "latest")
        except Conflict:  # nothing published yet
            return
        validate_inputs(flow, cfg.inputs)

    async def require(self, flow_id: str, trigger_id: str) -> Trigger:
        row = await self.store.triggers.get(trigger_id)
        if row is None or row.flow_id != flow_id:
            raise NotFound(f"flow {flow_id!r} has no trigger {trigger_id!r}")
        return row

    async def list_for_flow(self, flow_id: str) -> list[dict[str, Any]]:
        return [trigger_view(r) for r in await self.store.triggers.list_triggers(flow_id=flow_id)]

    async def get(self, flow_id: str, trigger_id: str) -> dict[str, Any]:
        row = await self.require(flow_id, trigger_id)
        return trigger_view(row, await self.store.trigger_fires.list_fires(row.id))

    async def update(
        self,
        flow_id: str,
        trigger_id: str,
        *,
        config: Mapping[str, Any] | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """Change the config (a whole new one) or switch it on or off. A schedule's next tick is
        computed again from now: ticks that passed while it was off are not fired."""
        row = await self.require(flow_id, trigger_id)
        cfg = parse_config(row.kind, config if config is not None else row.config)
        if config is not None:
            await self._check_inputs(flow_id, cfg)
        now_on = row.enabled if enabled is None else enabled
        next_at: float | None = None
        if isinstance(cfg, ScheduleConfig) and now_on:
            next_at = next_tick(cfg, self.clock())
        updated = await self.store.triggers.update(
            row.id,
            config=cfg.model_dump() if config is not None else None,
            enabled=enabled,
            next_fire_at=next_at,
        )
        if updated is None:
            raise NotFound(f"flow {flow_id!r} has no trigger {trigger_id!r}")
        return trigger_view(updated)

    async def delete(self, flow_id: str, trigger_id: str) -> None:
        row = await self.require(flow_id, trigger_id)
        await self.store.triggers.delete(row.id)

    # ------------------------------------------------------------------ firing
    async def _fire(self, row: Trigger, fire_key: str, fire_at: float, inputs: dict[str, Any]) -> str | None:
        """Claim the firing and, when this call won it, start the run as the flow's owner.
        Returns the run id; None when another server (or delivery) had it, or it was skipped."""
        fires = self.store.trigger_fires
        fire_id = await fires.claim(row.id, fire_key, fire_at)
        if fire_id is None:
            return None
        if row.kind == "schedule" and row.config.get("overlap", "skip") == "skip":
            active = await fires.active_runs(row.id)
            if active:
                await fires.finish(fire_id, "skipped", error=f"overlap: run {active[0]} is still active")
                return None
        try:
            run_id, _ = await self.runs.start(row.flow_id, inputs, version="latest", owner_id=None)
        except Exception as exc:
            await fires.finish(fire_id, "failed", error=str(getattr(exc, "message", exc)))
            raise
        await fires.mark_run(run_id, row.id)
        await fires.finish(fire_id, "started", run_id=run_id)
        TRIGGERS_FIRED.labels(kind=row.kind).inc()
        await self.store.triggers.update(row.id, last_fired_at=self.clock())
        return run_id

    async def tick(self, now: float | None = None) -> list[str]:
        """One look at the due schedules: fire what is due (once across servers), move each to
        its next tick. Returns the runs this call started."""
        now = self.clock() if now is None else now
        started: list[str] = []
        for row in await self.store.triggers.due(now):
            if row.kind != "schedule":
                continue
            try:
                run_id = await self._tick_one(row, now)
            except Exception as exc:  # noqa: BLE001 - one broken trigger must not stop the others
                log.warning("trigger %s of flow %s did not fire: %s", row.id, row.flow_id, exc)
                continue
            if run_id is not None:
                started.append(run_id)
        return started

    async def _tick_one(self, row: Trigger, now: float) -> str | None:
        try:
            cfg = ScheduleConfig.model_validate(row.config)
            latest = last_tick(cfg, now)
            following = next_tick(cfg, now)
        except (ValidationError, CronSimError, Invalid) as exc:
            await self.store.triggers.update(row.id, enabled=False, next_fire_at=None)
            raise Invalid(f"bad schedule, disabled: {exc}") from exc
        # Fire (or record the skip) first, then move on: a server that dies in between leaves the
        # trigger due, and whichever server looks next finds the tick taken and only moves it on.
        try:
            on_time = now - latest <= cfg.grace_s
            if not on_time and cfg.missed == "skip":
                fires = self.store.trigger_fires
                fire_id = await fires.claim(row.id, f"at:{latest:.0f}", latest, status="skipped")
                if fire_id is not None:
                    await fires.finish(fire_id, "skipped", error="missed: later than grace_s")
                return None
            return await self._fire(row, f"at:{latest:.0f}", latest, dict(cfg.inputs))
        finally:
            # Every server computes the same next tick; a trigger changed meanwhile is left alone.
            await self.store.triggers.advance(row.id, row.next_fire_at, following)

    async def sync_declared(self) -> int:
        """Keep the schedules start nodes declare in step with each flow's latest published
        version (added, changed, removed). Every server does it; the trigger's id is derived from
        flow and node, so they add it once. Returns how many versions were looked at."""
        versions = await self.store.triggers.latest_versions_after(self._versions_seen)
        for version in versions:
            try:
                await self._sync_flow(version.flow_id, declared_schedules(version.document))
            except Exception as exc:  # noqa: BLE001 - one flow's bad schedule must not stop the rest
                log.warning("flow %s: its declared schedule is not scheduled: %s", version.flow_id, exc)
            self._versions_seen = max(self._versions_seen, version.id)
        return len(versions)

    async def _sync_flow(self, flow_id: str, declared: dict[str, str]) -> None:
        triggers = self.store.triggers
        existing = {
            t.config.get("node_id"): t
            for t in await triggers.list_triggers(flow_id=flow_id, kind="schedule")
            if t.config.get("node_id")
        }
        for node_id, old in existing.items():
            if node_id not in declared and old.id == declared_id(flow_id, str(node_id)):
                await triggers.delete(old.id)
        for node_id, cron in declared.items():
            row = existing.get(node_id)
            if row is not None and row.config.get("cron") == cron:
                continue
            cfg = parse_config("schedule", {**(row.config if row else {}), "cron": cron, "node_id": node_id})
            assert isinstance(cfg, ScheduleConfig)
            next_at = next_tick(cfg, self.clock())
            if row is None:
                await triggers.create_if_absent(
                    declared_id(flow_id, node_id), flow_id, "schedule", cfg.model_dump(), next_fire_at=next_at
                )
            else:
                await triggers.update(
                    row.id, config=cfg.model_dump(), next_fire_at=next_at if row.enabled else None
                )

    async def start(self) -> None:
        """Start this server's scheduler loop (every server may run one)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="plait-scheduler")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def prune_fires(self, now: float | None = None) -> int:
        """Delete the firings older than the retention that guard nothing any more, a batch at
        a time (see TriggerFireRepo.prune). Returns how many were deleted."""
        if self.retention_s <= 0:
            return 0
        before = (self.clock() if now is None else now) - self.retention_s
        total = 0
        while True:
            deleted = await self.store.trigger_fires.prune(before, batch=PRUNE_BATCH)
            total += deleted
            if deleted < PRUNE_BATCH:
                break
            await asyncio.sleep(0)  # let the server's other work in between batches
        if total:
            log.info("pruned %d trigger firing(s) older than %.0f day(s)", total, self.retention_s / DAY_S)
        return total

    async def _loop(self) -> None:
        while True:
            try:
                await self.sync_declared()
                await self.tick()
                if time.monotonic() >= self._next_prune:
                    self._next_prune = time.monotonic() + PRUNE_EVERY_S
                    await self.prune_fires()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the database may be briefly away; try again
                log.exception("scheduler tick failed")
            await asyncio.sleep(self.poll_s)

    # ------------------------------------------------------------------ webhooks
    async def deliver(self, trigger_id: str, headers: Mapping[str, str], body: bytes) -> str:
        """A webhook delivery: authenticate it (the trigger's secret as a bearer token or
        `X-Plait-Secret`, or an `X-Plait-Signature` HMAC of timestamp and body), validate the
        JSON body against the flow's input schema, refuse a replay (409), start the run. Returns
        the run id."""
        row = await self.store.triggers.get(trigger_id)
        if row is None or row.kind != "webhook" or not row.enabled:
            raise NotFound(f"no enabled webhook trigger {trigger_id!r}")
        cfg = WebhookConfig.model_validate(row.config)
        now = self.clock()
        signature = headers.get(SIGNATURE_HEADER)
        if signature:
            stamp, given = parse_signature(signature)
            if abs(now - stamp) > cfg.tolerance_s:
                raise Unauthorized(
                    "the signature's timestamp is too old or in the future",
                    hint=f"sign with the current time (tolerance {cfg.tolerance_s:.0f} s)",
                )
            secret = self.store.box.decrypt(row.secret_enc) if row.secret_enc else None
            if not isinstance(secret, str) or not hmac.compare_digest(
                sign(secret, stamp, body), f"t={stamp},v1={given}"
            ):
                raise Unauthorized("bad signature")
            fire_key = f"sig:{given[:128]}"
        else:
            auth = headers.get("authorization", "")
            given_secret = auth[7:].strip() if auth[:7].lower() == "bearer " else headers.get(SECRET_HEADER)
            if not given_secret:
                raise Unauthorized(
                    "this webhook needs its secret",
                    hint=f"send Authorization: Bearer <secret>, or sign the body ({SIGNATURE_HEADER})",
                )
            if cfg.require_signature:
                raise Unauthorized(f"this webhook only takes signed deliveries ({SIGNATURE_HEADER})")
            if row.secret_hash is None or not self.store.triggers.check_secret(row, given_secret):
                raise Unauthorized("bad secret")
            key = headers.get(IDEMPOTENCY_HEADER)
            fire_key = f"key:{key[:120]}" if key else f"req:{secrets.token_hex(16)}"
        inputs = self._json_body(body)
        flow, _, _ = await self.flows.resolve_for_run(row.flow_id, "latest")
        validate_inputs(flow, inputs)  # 422 naming the field, before the delivery is recorded
        run_id = await self._fire(row, fire_key, now, inputs)
        if run_id is None:
            raise Conflict("this delivery was received already (a replay)", code="replayed")
        return run_id

    @staticmethod
    def _json_body(body: bytes) -> dict[str, Any]:
        if not body.strip():
            return {}
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise Invalid(f"the body is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise Invalid("the body must be a JSON object (the run's inputs)")
        return data


__all__ = [
    "HOOK_PATH",
    "declared_id",
    "declared_schedules",
    "ScheduleConfig",
    "TriggerService",
    "WebhookConfig",
    "last_tick",
    "next_tick",
    "parse_config",
    "sign",
    "trigger_view",
]
