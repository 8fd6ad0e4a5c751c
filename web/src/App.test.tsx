import { afterEach, describe, expect, it } from "vitest";
import { App } from "./App";
import { click, fakeServer as server, mount, q, settle, type, unmount } from "./test/dom";

const ada = { id: "u1", email: "ada@x.io", name: "Ada", role: "admin", disabled: false, created_at: 0, auth: "session" };
const bo = { ...ada, id: "u2", email: "bo@x.io", name: "Bo", role: "viewer" };

const realFetch = globalThis.fetch;
afterEach(() => {
  unmount();
  globalThis.fetch = realFetch;
});

describe("the shell and sign-in", () => {
  it("shows nothing of the library before /me answers, then the login page; signing in opens the library", async () => {
    history.replaceState(null, "", "/");
    let meAnswer: [number, any] = [401, { error: { code: "unauthorized", message: "sign in" } }];
    let releaseMe!: () => void;
    const meGate = new Promise<void>((r) => (releaseMe = r));
    const calls = server({
      "GET /api/v1/me": () => meAnswer,
      "POST /api/v1/auth/login": (init: RequestInit) => {
        const { password } = JSON.parse(String(init.body));
        if (password !== "pw") return [401, { error: { code: "unauthorized", message: "wrong email or password" } }];
        meAnswer = [200, ada];
        return [200, { user: ada }];
      },
      "GET /api/v1/flows": [200, []],
      "GET /api/v1/node-types": [200, []],
    });
    const slowFetch = globalThis.fetch;
    globalThis.fetch = (async (p: string, i?: RequestInit) => {
      if (p === "/api/v1/me") await meGate;
      return slowFetch(p, i);
    }) as any;
    mount(<App />);
    await settle();
    expect(q("auth-checking")).not.toBeNull();
    expect(q("library")).toBeNull();
    expect(calls.map((c) => c.path)).not.toContain("/api/v1/flows?limit=500");

    releaseMe();
    await settle();
    expect(q("login-page")).not.toBeNull();
    expect(calls.map((c) => c.path)).not.toContain("/api/v1/flows?limit=500");

    type("login-email", "ada@x.io");
    type("login-password", "nope");
    await click("login-submit");
    expect(q("login-error")?.textContent).toMatch(/Wrong email or password/);
    expect(q("login-page")).not.toBeNull();

    type("login-password", "pw");
    await click("login-submit");
    expect(q("library")).not.toBeNull();
    expect(q("current-user")?.textContent).toContain("Ada");
    expect(q("current-role")?.textContent).toBe("admin");
    expect(q("nav-users")).not.toBeNull();

    // the session ends: the next 401 brings the login page back, not an error screen
    meAnswer = [401, { error: { code: "unauthorized", message: "sign in" } }];
    server({ "GET /api/v1/api-keys": [401, { error: { code: "unauthorized", message: "sign in" } }] });
    await click("nav-keys");
    expect(q("login-page")).not.toBeNull();
    expect(q("login-expired")).not.toBeNull();
    expect(q("keys-error")).toBeNull();
    expect(location.pathname).toBe("/keys"); // signing in again continues there
  });

  it("hides the users link from non-admins and shows a viewer's flow controls read-only", async () => {
    history.replaceState(null, "", "/");
    server({
      "GET /api/v1/me": [200, bo],
      "GET /api/v1/flows": [200, [{ id: "f1", name: "F1", description: "", latest_version: 0, created_at: 0, updated_at: 0, owner_id: "u1", access: "viewer" }]],
      "GET /api/v1/node-types": [200, []],
    });
    const { authStore } = await import("./state/auth");
    await authStore.check();
    mount(<App />);
    await settle();
    expect(q("library")).not.toBeNull();
    expect(q("nav-users")).toBeNull();
    expect(q("nav-keys")).not.toBeNull();
    expect(q("access-f1")?.textContent).toBe("shared with you · viewer");
    expect(q("rename-f1")).toBeNull();
    expect(q("delete-f1")).toBeNull();
    expect(q("share-f1")).toBeNull();
    expect(q("export-f1")).not.toBeNull();
  });
});
