import { afterEach, describe, expect, it } from "vitest";
import { click, fakeServer, mount, q, settle, type, unmount } from "../test/dom";
import { TriggersDialog } from "./TriggersDialog";

const realFetch = globalThis.fetch;
afterEach(() => {
  unmount();
  globalThis.fetch = realFetch;
});

const base = { flow_id: "f", enabled: true, created_at: 0, updated_at: 0 };

describe("triggers dialog", () => {
  it("adds a schedule and a webhook (its secret shown once), disables and deletes", async () => {
    const calls = fakeServer({
      "GET /api/v1/flows/f/triggers": [200, []],
      "POST /api/v1/flows/f/triggers": (init) => {
        const body = JSON.parse(String(init.body));
        if (body.kind === "webhook") return [201, { ...base, id: "w1", kind: "webhook", config: {}, url: "/api/v1/hooks/w1", secret: "whsec_abc" }];
        return [201, { ...base, id: "s1", kind: "schedule", config: { ...body.config, missed: "skip", overlap: "skip" }, next_fire_at: 1e9 }];
      },
      "PATCH /api/v1/flows/f/triggers/s1": [200, { ...base, id: "s1", kind: "schedule", enabled: false, config: { cron: "*/5 * * * *", timezone: "UTC" } }],
      "DELETE /api/v1/flows/f/triggers/w1": [204, undefined],
    });
    mount(<TriggersDialog flowId="f" canEdit onClose={() => undefined} />);
    await settle();
    expect(q("triggers-empty")).not.toBeNull();
    type("trigger-cron", "*/5 * * * *");
    type("trigger-tz", "UTC");
    await click("trigger-add");
    expect(q("trigger-s1")?.textContent).toContain("*/5 * * * * (UTC)");
    type("trigger-kind", "webhook");
    await settle();
    await click("trigger-add");
    expect(q("trigger-secret")?.textContent).toContain("whsec_abc");
    expect(q("trigger-w1")?.textContent).toContain("POST /api/v1/hooks/w1");
    await click("trigger-toggle-s1");
    expect(q("trigger-toggle-s1")?.textContent).toBe("Enable");
    await click("trigger-delete-w1");
    expect(q("trigger-w1")).toBeNull();
    const posts = calls.filter((c) => c.method === "POST").map((c) => c.body);
    expect(posts).toEqual([{ kind: "schedule", config: { cron: "*/5 * * * *", timezone: "UTC" } }, { kind: "webhook", config: {} }]);
  });

  it("a viewer sees the triggers, not the controls; a refused cron is shown", async () => {
    fakeServer({ "GET /api/v1/flows/f/triggers": [200, [{ ...base, id: "s1", kind: "schedule", config: { cron: "0 9 * * *" } }]] });
    mount(<TriggersDialog flowId="f" canEdit={false} onClose={() => undefined} />);
    await settle();
    expect(q("trigger-s1")).not.toBeNull();
    expect(q("trigger-add")).toBeNull();
    expect(q("trigger-toggle-s1")).toBeNull();
    unmount();
    fakeServer({
      "GET /api/v1/flows/f/triggers": [200, []],
      "POST /api/v1/flows/f/triggers": [422, { error: { code: "invalid", message: "config.cron: 'nope' is not a cron expression" } }],
    });
    mount(<TriggersDialog flowId="f" canEdit onClose={() => undefined} />);
    await settle();
    type("trigger-cron", "nope");
    await click("trigger-add");
    expect(q("trigger-error")?.textContent).toContain("config.cron");
  });
});
