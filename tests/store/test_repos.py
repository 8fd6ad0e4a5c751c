from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from plait.engine.events import Event
from plait.store import Heartbeat, Store
from plait.store.models import Variable
from plait.store.repos import REDACTED, ApiKeyRepo, TriggerRepo

DOC = {"schema": "plait/flow@1", "id": "f1", "name": "First", "nodes": [{"id": "start", "type": "start"}]}


# ------------------------------------------------------------------------------------- users
async def test_users(store: Store) -> None:
    u = await store.users.create(email="a@example.com", name="Ann", role="admin")
    assert len(u.id) == 32 and u.created_at > 0 and u.role == "admin" and not u.disabled
    assert (await store.users.get(u.id)).email == "a@example.com"
    assert (await store.users.get_by_email("a@example.com")).id == u.id
    assert await store.users.get_by_email("nobody@example.com") is None
    with pytest.raises(IntegrityError):
        await store.users.create(email="a@example.com")
    b = await store.users.create(name="no email")
    assert [x.id for x in await store.users.list_users()] == [u.id, b.id]
    assert b.role == "editor"
    assert (await store.users.first_admin()).id == u.id
    changed = await store.users.update(u.id, disabled=True, name="Ann B")
    assert changed.disabled and changed.name == "Ann B" and await store.users.first_admin() is None
    with pytest.raises(ValueError, match="cannot change"):
        await store.users.update(u.id, id="other")
    assert await store.users.delete(b.id) is True
    assert await store.users.delete(b.id) is False


# ---------------------------------------------------------------------------------- api keys
async def test_api_keys(store: Store) -> None:
    user = await store.users.create(email="k@example.com")
    row, key = await store.api_keys.create("ci", user_id=user.id)
    assert key.startswith("plait_") and len(key) > 40
    assert row.prefix == key[:12] and row.key_hash == ApiKeyRepo.hash_key(key) and key not in row.key_hash
    assert row.last_used_at is None

    found = await store.api_keys.verify(key, now=1000.0)
    assert found is not None and found.id == row.id and found.last_used_at == 1000.0
    assert (await store.api_keys.get(row.id)).last_used_at == 1000.0
    untouched = await store.api_keys.verify(key, touch=False)
    assert untouched is not None and untouched.last_used_at == 1000.0
    assert await store.api_keys.verify(key + "x") is None
    assert await store.api_keys.verify("") is None

    other, _ = await store.api_keys.create("other")
    assert [k.id for k in await store.api_keys.list_keys(user_id=user.id)] == [row.id]
    assert {k.id for k in await store.api_keys.list_keys()} == {row.id, other.id}

    assert await store.api_keys.revoke(row.id, now=2000.0) is True
    assert await store.api_keys.revoke(row.id) is False
    assert await store.api_keys.verify(key) is None
    assert [k.id for k in await store.api_keys.list_keys()] == [other.id]
    revoked = await store.api_keys.get(row.id)
    assert revoked.revoked and revoked.revoked_at == 2000.0
    assert len(await store.api_keys.list_keys(include_revoked=True)) == 2


# ------------------------------------------------------------------------------------- flows
async def test_flows_crud(store: Store) -> None:
    f = await store.flows.create("f1", DOC, description="d")
    assert f.name == "First" and f.latest_version == 0 and f.draft == DOC
    with pytest.raises(IntegrityError):
        await store.flows.create("f1", DOC)
    g = await store.flows.create("f2", {"id": "f2"}, name="Second")
    assert g.name == "Second"
    assert (await store.flows.get("f1")).description == "d"
    assert await store.flows.get("nope") is None

    new_draft = {**DOC, "nodes": [*DOC["nodes"], {"id": "o", "type": "output"}]}
    updated = await store.flows.update("f1", draft=new_draft, name="Renamed")
    assert updated is not None and updated.draft == new_draft and updated.name == "Renamed"
    assert updated.updated_at >= f.updated_at
    assert await store.flows.update("nope", name="x") is None
    assert [x.id for x in await store.flows.list_flows()] == ["f1", "f2"]  # most recently updated first
    assert len(await store.flows.list_flows(limit=1)) == 1

    assert await store.flows.delete("f2") is True
    assert await store.flows.delete("f2") is False
    assert await store.flows.get("f2") is None


async def test_flow_versions(store: Store) -> None:
    await store.flows.create("f1", DOC)
    v1 = await store.flows.publish("f1", note="first")
    assert v1 is not None and v1.version == 1 and v1.document == DOC and v1.note == "first"
    doc2 = {**DOC, "name": "v2"}
    v2 = await store.flows.publish("f1", document=doc2)
    assert v2 is not None and v2.version == 2 and v2.document == doc2
    assert await store.flows.publish("nope") is None
    assert (await store.flows.get("f1")).latest_version == 2
    assert (await store.flows.get_version("f1")).version == 2
    assert (await store.flows.get_version("f1", 1)).document == DOC
    assert await store.flows.get_version("f1", 9) is None
    assert [v.version for v in await store.flows.list_versions("f1")] == [1, 2]

    # concurrent publishes get distinct numbers
    published = await asyncio.gather(*(store.flows.publish("f1") for _ in range(5)))
    assert sorted(v.version for v in published if v) == [3, 4, 5, 6, 7]

    # deleting the flow deletes its versions
    await store.flows.delete("f1")
    assert await store.flows.list_versions("f1") == []


# -------------------------------------------------------------------------------------- runs
async def test_runs_crud_and_status(store: Store) -> None:
    r = await store.runs.create("r1", "f1", inputs={"x": 1}, version=3, now=100.0)
    assert (r.status, r.version, r.inputs, r.created_at, r.last_seq) == ("queued", 3, {"x": 1}, 100.0, 0)
    with pytest.raises(IntegrityError):
        await store.runs.create("r1", "f1")
    await store.runs.create("r2", "f1", now=200.0, parent_run_id="r1")
    await store.runs.create("r3", "f2", now=300.0, status="running")

    assert (await store.runs.get("r1")).inputs == {"x": 1}
    assert await store.runs.get("nope") is None
    assert [x.id for x in await store.runs.list_runs()] == ["r3", "r2", "r1"]
    assert [x.id for x in await store.runs.list_runs(flow_id="f1")] == ["r2", "r1"]
    assert [x.id for x in await store.runs.list_runs(status="running")] == ["r3"]
    assert [x.id for x in await store.runs.list_runs(status=["queued", "running"], limit=2)] == ["r3", "r2"]
    assert [x.id for x in await store.runs.list_runs(parent_run_id="r1")] == ["r2"]
    assert [x.id for x in await store.runs.list_runs(offset=2)] == ["r1"]

    assert await store.runs.set_status("r1", "running", expected="queued") is True
    assert await store.runs.set_status("r1", "running", expected="queued") is False  # compare-and-set
    assert await store.runs.set_status("r1", "cancelled", expected=["queued", "running"], now=500.0)
    cancelled = await store.runs.get("r1")
    assert cancelled.status == "cancelled" and cancelled.finished_at == 500.0
    assert await store.runs.set_status("r2", "failed", error="boom")
    assert (await store.runs.get("r2")).error == "boom"
    assert await store.runs.set_status("nope", "failed") is False

    assert await store.runs.is_cancel_requested("r3") is False
    assert await store.runs.request_cancel("r3") is True
    assert await store.runs.is_cancel_requested("r3") is True
    assert await store.runs.request_cancel("nope") is False
    assert await store.runs.is_cancel_requested("nope") is False


async def test_run_delete_cascades(store: Store) -> None:
    await store.runs.create("r1", "f1")
    await store.events.append("r1", [Event(1, "run_started", "r1", 1.0)])
    await store.human_tasks.create("r1", "ask", token="t1")
    await store.decisions.add("r1", 1, {"mode": "stop"})
    assert await store.runs.delete("r1") is True
    assert await store.runs.delete("r1") is False
    assert await store.events.list_events("r1") == []
    assert await store.human_tasks.get("t1") is None
    assert await store.decisions.list_decisions("r1") == []


async def test_leases(store: Store) -> None:
    await store.runs.create("r1", "f1", status="running")
    runs = store.runs
    assert await runs.acquire_lease("r1", "w1", 30, now=1000.0) is True
    row = await runs.get("r1")
    assert (row.lease_owner, row.lease_until) == ("w1", 1030.0)
    assert await runs.acquire_lease("r1", "w2", 30, now=1010.0) is False  # held by w1
    assert await runs.acquire_lease("r1", "w1", 30, now=1010.0) is True  # re-entrant for the owner
    assert await runs.renew_lease("r1", "w1", 30, now=1020.0) is True
    assert (await runs.get("r1")).lease_until == 1050.0
    assert await runs.renew_lease("r1", "w2", 30, now=1020.0) is False
    assert await runs.acquire_lease("r1", "w2", 30, now=1051.0) is True  # expired: taken over
    assert await runs.renew_lease("r1", "w1", 30, now=1052.0) is False  # w1 learns it lost the run
    assert await runs.release_lease("r1", "w1") is False
    assert await runs.release_lease("r1", "w2") is True
    row = await runs.get("r1")
    assert (row.lease_owner, row.lease_until) == (None, None)
    assert await runs.acquire_lease("nope", "w1", 30) is False


async def test_heartbeat_renews_own_leases_and_reports_cancel_requests_and_lost_leases(store: Store) -> None:
    runs = store.runs
    for run_id in ("mine", "flagged", "theirs"):
        await runs.create(run_id, "f1", status="running")
    await runs.acquire_lease("mine", "w1", 10, now=1000.0)
    await runs.acquire_lease("flagged", "w1", 10, now=1000.0)
    await runs.acquire_lease("theirs", "w2", 10, now=1000.0)
    await runs.request_cancel("flagged")
    await runs.request_cancel("theirs")
    assert await runs.heartbeat(["mine", "flagged"], "w1", 30, now=1005.0) == Heartbeat(["flagged"], [])
    # A lease w1 does not hold (another process took the run over), and a run that is gone.
    assert await runs.heartbeat(["theirs", "gone"], "w1", 30, now=1005.0) == Heartbeat(
        ["theirs"], ["theirs", "gone"]
    )
    assert (await runs.get("mine")).lease_until == 1035.0
    assert (await runs.get("flagged")).lease_until == 1035.0
    assert (await runs.get("theirs")).lease_until == 1010.0  # not ours: untouched
    assert await runs.heartbeat([], "w1", 30) == Heartbeat([], [])


async def test_acquire_lease_is_atomic(store: Store) -> None:
    await store.runs.create("r1", "f1", status="running")
    won = await asyncio.gather(*(store.runs.acquire_lease("r1", f"w{i}", 30) for i in range(10)))
    assert sum(won) == 1


async def test_find_expired_running(store: Store) -> None:
    runs = store.runs
    await runs.create("no-lease", "f", status="running", now=1.0)
    await runs.create("expired", "f", status="running", now=2.0)
    await runs.create("alive", "f", status="running", now=3.0)
    await runs.create("waiting", "f", status="waiting", now=4.0)
    await runs.create("done", "f", status="completed", now=5.0)
    await runs.acquire_lease("expired", "w", 10, now=100.0)
    await runs.acquire_lease("alive", "w", 10, now=195.0)
    found = await runs.find_expired_running(200.0)
    assert [r.id for r in found] == ["no-lease", "expired"]
    assert [r.id for r in await runs.find_expired_running(200.0, limit=1)] == ["no-lease"]
    assert [r.id for r in await runs.find_expired_running(200.0, statuses=["waiting"])] == ["waiting"]


async def test_node_runs_listing(store: Store) -> None:
    from plait.engine.checkpoint import NodeDelta, RunRecord

    cp = store.checkpointer
    await cp.begin(RunRecord("r1", "f", {}, {}, 1.0), [])
    await cp.save("r1", NodeDelta("a", "ok", 1, attempt=2, duration_ms=3.5, usage={"tokens": 4}), [])
    await cp.save("r1", NodeDelta("b", "error", error="bad"), [])
    rows = await store.runs.node_runs("r1")
    assert [(r.node_id, r.status, r.output, r.attempt, r.error) for r in rows] == [
        ("a", "ok", 1, 2, None),
        ("b", "error", None, 1, "bad"),
    ]
    assert rows[0].usage == {"tokens": 4} and rows[0].duration_ms == 3.5


# ------------------------------------------------------------------------------------ events
async def test_events(store: Store) -> None:
    await store.runs.create("r1", "f1")
    assert await store.events.last_seq("r1") == 0
    events = [
        Event(1, "run_started", "r1", 1.5, None, {"inputs": {"x": 1}}),
        Event(2, "node_started", "r1", 2.5, "a"),
        Event(3, "node_token", "r1", 3.5, "a", {"delta": "hé\u0000"}),
    ]
    await store.events.append("r1", events)
    await store.events.append("r1", [])
    assert await store.events.list_events("r1") == events
    assert await store.events.list_events("r1", after_seq=1) == events[1:]
    assert await store.events.list_events("r1", after_seq=1, limit=1) == events[1:2]
    assert await store.events.last_seq("r1") == 3
    assert (await store.runs.get("r1")).last_seq == 3
    with pytest.raises(IntegrityError):  # seq is unique per run
        await store.events.append("r1", [Event(3, "x", "r1", 4.0)])


# ------------------------------------------------------------------------------- human tasks
async def test_human_tasks(store: Store) -> None:
    await store.runs.create("r1", "f1", status="waiting")
    t = await store.human_tasks.create(
        "r1",
        "ask",
        message="Approve?",
        fields=[{"name": "note", "type": "string"}],
        prefill={"note": "ok"},
        actions=["approve", "reject"],
        expires_at=2000.0,
        now=1000.0,
    )
    assert len(t.token) >= 24 and t.status == "pending" and t.blocking is True
    got = await store.human_tasks.get(t.token)
    assert (got.message, got.fields, got.prefill, got.actions) == (
        "Approve?",
        [{"name": "note", "type": "string"}],
        {"note": "ok"},
        ["approve", "reject"],
    )
    assert (await store.human_tasks.pending_for_node("r1", "ask")).token == t.token
    assert await store.human_tasks.pending_for_node("r1", "other") is None

    assert await store.human_tasks.submit(t.token, {"action": "approve"}, now=2500.0) is None  # too late
    done = await store.human_tasks.submit(t.token, {"action": "approve", "values": {"note": "x"}}, now=1500.0)
    assert done is not None and done.status == "submitted" and done.resolved_at == 1500.0
    assert done.result == {"action": "approve", "values": {"note": "x"}}
    assert await store.human_tasks.submit(t.token, {"action": "reject"}, now=1600.0) is None  # answered once
    assert (await store.human_tasks.get(t.token)).result["action"] == "approve"
    assert await store.human_tasks.pending_for_node("r1", "ask") is None
    assert await store.human_tasks.submit("nope", {}) is None
    assert await store.human_tasks.get("nope") is None


async def test_human_task_submissions_race(store: Store) -> None:
    await store.runs.create("r1", "f1", status="waiting")
    t = await store.human_tasks.create("r1", "ask")
    results = await asyncio.gather(*(store.human_tasks.submit(t.token, {"i": i}) for i in range(8)))
    assert sum(r is not None for r in results) == 1


async def test_human_tasks_expire_cancel_and_list(store: Store) -> None:
    await store.runs.create("r1", "f1", status="waiting")
    await store.runs.create("r2", "f1", status="waiting")
    a = await store.human_tasks.create("r1", "a", expires_at=100.0, now=1.0)
    b = await store.human_tasks.create("r1", "b", expires_at=300.0, now=2.0)
    c = await store.human_tasks.create("r1", "c", now=3.0)
    d = await store.human_tasks.create("r2", "d", blocking=False, now=4.0)
    expired = await store.human_tasks.expire_due(200.0)
    assert [x.token for x in expired] == [a.token] and expired[0].status == "expired"
    assert await store.human_tasks.expire_due(200.0) == []
    assert await store.human_tasks.cancel_for_run("r1", now=250.0) == 2  # b and c
    assert (await store.human_tasks.get(b.token)).status == "cancelled"
    assert [x.token for x in await store.human_tasks.list_tasks(run_id="r1")] == [a.token, b.token, c.token]
    assert [x.token for x in await store.human_tasks.list_tasks(status="pending")] == [d.token]
    assert len(await store.human_tasks.list_tasks(limit=2)) == 2


async def test_human_task_from_interrupt(store: Store) -> None:
    await store.runs.create("r1", "f1", status="waiting")
    interrupt = {
        "id": "ask",
        "node_id": "ask",
        "kind": "human",
        "payload": {
            "message": "Pick",
            "fields": [{"name": "n", "label": None, "type": "string", "required": True, "options": []}],
            "prefill": {"n": "x"},
            "actions": ["ok"],
            "assignees": ["bob"],
        },
        "blocking": False,
        "created_at": 10.0,
        "expires_at": 70.0,
    }
    t = await store.human_tasks.create_from_interrupt("r1", interrupt)
    assert (t.node_id, t.kind, t.message, t.prefill, t.actions, t.assignees) == (
        "ask",
        "human",
        "Pick",
        {"n": "x"},
        ["ok"],
        ["bob"],
    )
    assert (t.blocking, t.created_at, t.expires_at) == (False, 10.0, 70.0)


# --------------------------------------------------------------------------------- decisions
async def test_decisions(store: Store) -> None:
    await store.runs.create("r1", "f1")
    d2 = {"mode": "stop", "next": [], "skips": [], "reason": "done"}
    await store.decisions.add("r1", 2, d2, now=2.0)
    d1 = await store.decisions.add(
        "r1", 1, {"mode": "next", "next": [{"node": "a", "input": {}}]}, node_id="a"
    )
    assert d1.id is not None
    assert [(d.step, d.data) for d in await store.decisions.list_decisions("r1")] == [(1, d1.data), (2, d2)]


# --------------------------------------------------------------------------------- variables
async def test_variables_are_encrypted_at_rest(store: Store) -> None:
    await store.variables.set("API_KEY", "sk-very-secret", is_secret=True, description="the key")
    await store.variables.set("REGION", "eu")
    await store.variables.set("LIMITS", {"max": 3})
    async with store.sessionmaker() as s:
        raw = dict((await s.execute(select(Variable.name, Variable.value))).all())
    assert set(raw) == {"API_KEY", "REGION", "LIMITS"}
    assert all(v.startswith("gAAAAA") for v in raw.values())  # Fernet tokens, not the values
    assert not any("sk-very-secret" in v for v in raw.values())

    assert await store.variables.get("API_KEY") == "sk-very-secret"
    assert await store.variables.get("LIMITS") == {"max": 3}
    assert await store.variables.get("NOPE") is None
    assert await store.variables.get("NOPE", "dflt") == "dflt"
    assert await store.variables.values() == {
        "API_KEY": "sk-very-secret",
        "REGION": "eu",
        "LIMITS": {"max": 3},
    }

    listed = await store.variables.list_variables()
    assert [(v.name, v.value, v.is_secret) for v in listed] == [
        ("API_KEY", REDACTED, True),
        ("LIMITS", {"max": 3}, False),
        ("REGION", "eu", False),
    ]
    assert listed[0].description == "the key"
    assert (await store.variables.list_variables(reveal=True))[0].value == "sk-very-secret"

    await store.variables.set("API_KEY", "sk-new", is_secret=True)  # update keeps the description
    assert await store.variables.get("API_KEY") == "sk-new"
    assert (await store.variables.list_variables())[0].description == "the key"

    assert await store.variables.delete("REGION") is True
    assert await store.variables.delete("REGION") is False
    assert await store.variables.get("REGION") is None


async def test_variables_key_rotation(store: Store) -> None:
    from cryptography.fernet import Fernet

    from plait.store import SecretBox
    from plait.store.repos import VariableRepo

    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    old = VariableRepo(store.sessionmaker, SecretBox(old_key))
    await old.set("A", 1)
    await old.set("B", "two", is_secret=True)
    both = VariableRepo(store.sessionmaker, SecretBox(f"{new_key},{old_key}"))
    assert await both.rotate() == 2
    only_new = VariableRepo(store.sessionmaker, SecretBox(new_key))
    assert await only_new.values() == {"A": 1, "B": "two"}


# -------------------------------------------------------------------------------- components
async def test_components(store: Store) -> None:
    c = await store.components.save("Upper", "def run(x): return x.upper()", spec={"ports": ["out"]})
    assert c.version == 1 and c.kind == "node" and c.spec == {"ports": ["out"]}
    c2 = await store.components.save("Upper", "def run(x): return x.upper() + '!'", description="v2")
    assert c2.id == c.id and c2.version == 2 and c2.code.endswith("'!'") and c2.description == "v2"
    assert c2.created_at == c.created_at
    await store.components.save("Tool", "x", kind="tool")
    assert (await store.components.get("Upper")).version == 2
    assert await store.components.get("Nope") is None
    assert [x.name for x in await store.components.list_components()] == ["Tool", "Upper"]
    assert [x.name for x in await store.components.list_components(kind="tool")] == ["Tool"]
    assert await store.components.delete("Tool") is True
    assert await store.components.delete("Tool") is False


async def test_components_are_scoped_to_their_owner(store: Store) -> None:
    alice = await store.users.create(email="alice@example.com")
    bob = await store.users.create(email="bob@example.com")
    shared = await store.components.save("Upper", "shared")
    a = await store.components.save("Upper", "alice", owner_id=alice.id)
    b = await store.components.save("Upper", "bob", owner_id=bob.id)
    assert len({shared.id, a.id, b.id}) == 3 and a.owner_id == alice.id and shared.owner_id is None
    a2 = await store.components.save("Upper", "alice v2", owner_id=alice.id)
    assert a2.id == a.id and a2.version == 2
    s2 = await store.components.save("Upper", "shared v2")  # the NULL owner upserts too
    assert s2.id == shared.id and s2.version == 2
    assert (await store.components.get("Upper")).code == "shared v2"
    assert (await store.components.get("Upper", owner_id=alice.id)).code == "alice v2"
    assert (await store.components.get("Upper", owner_id=bob.id)).code == "bob"
    await store.components.save("Lower", "alice", owner_id=alice.id)
    assert [c.name for c in await store.components.list_components(owner_id=alice.id)] == ["Lower", "Upper"]
    assert [c.name for c in await store.components.list_components(owner_id=bob.id)] == ["Upper"]
    assert [c.name for c in await store.components.list_components()] == ["Upper"]
    assert await store.components.get("Lower", owner_id=bob.id) is None
    assert await store.components.delete("Lower", owner_id=bob.id) is False
    assert await store.components.delete("Upper", owner_id=bob.id) is True
    assert (await store.components.get("Upper", owner_id=alice.id)).code == "alice v2"
    assert (await store.components.get("Upper")).code == "shared v2"
    await store.users.delete(alice.id)  # a user's components go with the user
    assert await store.components.list_components(owner_id=alice.id) == []


# ---------------------------------------------------------------------------------- triggers
async def test_triggers(store: Store) -> None:
    await store.flows.create("f1", DOC)
    await store.flows.create("f2", DOC)
    hook = await store.triggers.create("f1", "webhook", {"method": "POST"}, secret="s3cret")
    cron = await store.triggers.create("f1", "schedule", {"cron": "* * * * *"}, next_fire_at=100.0)
    other = await store.triggers.create(
        "f2", "schedule", {"cron": "0 * * * *"}, next_fire_at=50.0, enabled=False
    )
    assert hook.secret_hash and "s3cret" not in hook.secret_hash
    assert TriggerRepo.check_secret(hook, "s3cret") is True
    assert TriggerRepo.check_secret(hook, "wrong") is False
    assert TriggerRepo.check_secret(hook, None) is False
    assert TriggerRepo.check_secret(cron, None) is True

    assert (await store.triggers.get(hook.id)).config == {"method": "POST"}
    assert [t.id for t in await store.triggers.list_triggers(flow_id="f1")] == [hook.id, cron.id]
    assert [t.id for t in await store.triggers.list_triggers(kind="schedule")] == [cron.id, other.id]
    assert [t.id for t in await store.triggers.list_triggers(enabled=False)] == [other.id]

    assert [t.id for t in await store.triggers.due(150.0)] == [cron.id]  # disabled one is not due
    assert await store.triggers.claim_fire(cron.id, 100.0, 160.0, now=150.0) is True
    assert await store.triggers.claim_fire(cron.id, 100.0, 160.0, now=150.0) is False  # someone else fired it
    fired = await store.triggers.get(cron.id)
    assert (fired.next_fire_at, fired.last_fired_at) == (160.0, 150.0)
    assert await store.triggers.due(150.0) == []

    updated = await store.triggers.update(other.id, enabled=True, config={"cron": "5 * * * *"})
    assert updated is not None and updated.enabled and updated.next_fire_at == 50.0
    cleared = await store.triggers.update(other.id, next_fire_at=None)
    assert cleared is not None and cleared.next_fire_at is None
    assert await store.triggers.update("nope", enabled=True) is None

    assert await store.triggers.delete(hook.id) is True
    assert await store.triggers.delete(hook.id) is False
    await store.flows.delete("f1")  # cascades to its triggers
    assert await store.triggers.get(cron.id) is None


# -------------------------------------------------------------- ownership: variables, shares
async def test_variables_per_owner_and_deployment_wide(store: Store) -> None:
    ann = await store.users.create(email="ann@example.com")
    bob = await store.users.create(email="bob@example.com")
    await store.variables.set("REGION", "eu")  # deployment-wide
    await store.variables.set("TOKEN", "global-token", is_secret=True)
    await store.variables.set("TOKEN", "ann-token", owner_id=ann.id, is_secret=True)
    await store.variables.set("TOKEN", "ann-token-2", owner_id=ann.id, is_secret=True)  # replaces
    await store.variables.set("ONLY_BOB", "b", owner_id=bob.id)

    ann_run = await store.variables.for_run(ann.id)
    assert ann_run.values == {"REGION": "eu", "TOKEN": "ann-token-2"}  # her own wins
    assert set(ann_run.secrets) == {"global-token", "ann-token-2"}  # both are masked
    assert await store.variables.values(bob.id) == {"REGION": "eu", "TOKEN": "global-token", "ONLY_BOB": "b"}
    assert await store.variables.values() == {"REGION": "eu", "TOKEN": "global-token"}

    listed = await store.variables.list_variables(owner_id=ann.id)
    assert [(v.name, v.owner_id, v.value) for v in listed] == [
        ("REGION", None, "eu"),
        ("TOKEN", None, REDACTED),
        ("TOKEN", ann.id, REDACTED),
    ]
    assert [v.name for v in await store.variables.list_variables(owner_id=ann.id, include_global=False)] == [
        "TOKEN"
    ]
    assert await store.variables.get("TOKEN", owner_id=ann.id) == "ann-token-2"
    assert await store.variables.delete("TOKEN", owner_id=bob.id) is False  # not his
    assert await store.variables.delete("TOKEN", owner_id=ann.id) is True
    assert await store.variables.values(ann.id) == {"REGION": "eu", "TOKEN": "global-token"}


async def test_shares_and_visibility(store: Store) -> None:
    ann = await store.users.create(email="ann@example.com")
    bob = await store.users.create(email="bob@example.com")
    await store.flows.create("a1", {"id": "a1"}, owner_id=ann.id)
    await store.flows.create("a2", {"id": "a2"}, owner_id=ann.id)
    await store.flows.create("b1", {"id": "b1"}, owner_id=bob.id)
    await store.shares.set("a2", bob.id, "viewer")
    await store.shares.set("a2", bob.id, "editor")  # changes the role
    assert (await store.shares.get("a2", bob.id)).role == "editor"
    assert {f.id for f in await store.flows.list_flows(visible_to=bob.id)} == {"a2", "b1"}
    assert {f.id for f in await store.flows.list_flows(visible_to=ann.id)} == {"a1", "a2"}

    await store.runs.create("r-ann", "a1", owner_id=ann.id)
    await store.runs.create("r-bob-on-a2", "a2", owner_id=bob.id)
    await store.runs.create("r-cli", "not-in-library", owner_id=bob.id)
    assert {r.id for r in await store.runs.list_runs(visible_to=ann.id)} == {"r-ann", "r-bob-on-a2"}
    assert {r.id for r in await store.runs.list_runs(visible_to=bob.id)} == {"r-bob-on-a2", "r-cli"}
    assert await store.shares.delete("a2", bob.id) is True
    assert {r.id for r in await store.runs.list_runs(visible_to=bob.id)} == {"r-bob-on-a2", "r-cli"}
    assert {f.id for f in await store.flows.list_flows(visible_to=bob.id)} == {"b1"}


async def test_auth_tokens_are_one_time_and_expire(store: Store) -> None:
    ann = await store.users.create(email="ann@example.com")
    link = await store.auth_tokens.create("signin", ann.id, ttl_s=60, now=1000.0)
    assert await store.auth_tokens.check("session", link, now=1001.0) is None  # another kind
    assert await store.auth_tokens.consume("signin", link, now=1001.0) == ann.id
    assert await store.auth_tokens.consume("signin", link, now=1001.0) is None  # used up
    session = await store.auth_tokens.create("session", ann.id, ttl_s=60, now=1000.0)
    assert await store.auth_tokens.check("session", session, now=1059.0) == ann.id
    assert await store.auth_tokens.check("session", session, now=1060.0) is None  # expired
    assert await store.auth_tokens.revoke_user(ann.id) == 1
