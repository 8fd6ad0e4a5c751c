import { afterEach, describe, expect, it } from "vitest";
import { click, fakeServer, mount, q, settle, type, unmount } from "../test/dom";
import type { Me } from "../types";
import { ApiKeysPage } from "./ApiKeys";
import { UsersPage } from "./Users";

const ada: Me = { id: "u1", email: "ada@x.io", name: "Ada", role: "admin", disabled: false, created_at: 0 };
const bo = { ...ada, id: "u2", email: "bo@x.io", name: "Bo", role: "viewer" as const };
const realFetch = globalThis.fetch;
afterEach(() => {
  unmount();
  globalThis.fetch = realFetch;
});

describe("API keys page", () => {
  it("creates a key with the picked scopes, shows it once, and lists it by prefix only", async () => {
    const secret = "plait_k_abcdefghijklmnopqrstuvwxyz";
    let listed: any[] = [];
    const calls = fakeServer({
      "GET /api/v1/api-keys": () => [200, listed],
      "POST /api/v1/api-keys": (init) => {
        const body = JSON.parse(String(init.body));
        const row = { id: "k1", name: body.name, prefix: "plait_k_ab", scopes: body.scopes, created_at: 1, last_used_at: null };
        listed = [row];
        return [201, { ...row, key: secret }];
      },
      "DELETE /api/v1/api-keys/k1": () => {
        listed = [];
        return [204, undefined];
      },
    });
    mount(<ApiKeysPage me={{ ...ada, role: "editor" }} />);
    await settle();
    expect(q("keys-empty")).not.toBeNull();
    await click("new-key");
    // an editor's key can read, write and run, never admin
    expect(q<HTMLInputElement>("scope-admin")!.disabled).toBe(true);
    expect(q<HTMLInputElement>("scope-run")!.checked).toBe(true);
    await click("scope-write"); // untick
    await click("create-key-submit");
    expect(q("create-key-error")?.textContent).toMatch(/name/);
    type("key-name", "ci");
    await click("create-key-submit");
    expect(calls.find((c) => c.method === "POST")!.body).toEqual({ name: "ci", scopes: ["read", "run"] });
    expect(q<HTMLInputElement>("secret-value")!.value).toBe(secret);
    expect(q("key-created")!.textContent).toMatch(/you will not see this key again/);
    await click("key-created-done");
    expect(q("key-row-k1")!.textContent).toContain("plait_k_ab…");
    expect(document.body.innerHTML).not.toContain(secret);

    await click("revoke-k1");
    await click("revoke-confirm");
    expect(q("keys-empty")).not.toBeNull();
  });
});

describe("users page", () => {
  it("creates a user, changes a role, disables with a confirm, and never lets an admin lock themselves out", async () => {
    let users: any[] = [ada];
    const calls = fakeServer({
      "GET /api/v1/users": () => [200, users],
      "POST /api/v1/users": (init) => {
        const b = JSON.parse(String(init.body));
        const u = { ...bo, email: b.email, name: b.name, role: b.role };
        users = [...users, u];
        return [201, u];
      },
      "PATCH /api/v1/users/u2": (init) => {
        users = users.map((u) => (u.id === "u2" ? { ...u, ...JSON.parse(String(init.body)) } : u));
        return [200, users[1]];
      },
    });
    mount(<UsersPage me={ada} />);
    await settle();
    expect(q<HTMLSelectElement>("user-role-ada@x.io")!.disabled).toBe(true);
    expect(q<HTMLButtonElement>("user-disable-ada@x.io")!.disabled).toBe(true);

    await click("new-user");
    type("new-user-email", "bo@x.io");
    type("new-user-name", "Bo");
    type("new-user-role", "viewer");
    type("new-user-password", "short");
    await click("new-user-submit");
    expect(q("new-user-error")?.textContent).toMatch(/at least 8/);
    type("new-user-password", "long enough");
    await click("new-user-submit");
    expect(calls.find((c) => c.method === "POST")!.body).toEqual({ email: "bo@x.io", name: "Bo", role: "viewer", password: "long enough" });
    expect(q("user-row-bo@x.io")).not.toBeNull();

    type("user-role-bo@x.io", "editor");
    await settle();
    expect(calls.filter((c) => c.method === "PATCH").map((c) => c.body)).toEqual([{ role: "editor" }]);
    await click("user-disable-bo@x.io");
    expect(calls.filter((c) => c.method === "PATCH")).toHaveLength(1); // not before the confirm
    await click("disable-confirm");
    expect(q("user-status-bo@x.io")!.textContent).toBe("disabled");
    expect(q("user-enable-bo@x.io")).not.toBeNull();
  });

  it("creates a key for another user within that user's role", async () => {
    fakeServer({ "GET /api/v1/users": [200, [ada, bo]], "POST /api/v1/users/u2/api-keys": [201, { id: "k9", name: "bot", prefix: "p", scopes: ["read"], created_at: 0, last_used_at: null, key: "secret-9" }] });
    mount(<UsersPage me={ada} />);
    await settle();
    await click("user-key-bo@x.io");
    expect(q<HTMLInputElement>("scope-write")!.disabled).toBe(true); // bo is a viewer
    type("key-name", "bot");
    await click("create-key-submit");
    expect(q<HTMLInputElement>("secret-value")!.value).toBe("secret-9");
  });
});
