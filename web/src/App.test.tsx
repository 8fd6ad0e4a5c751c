import { act } from "react";
import { createRoot } from "react-dom/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import { App } from "./App";

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

const ada = { id: "u1", email: "ada@x.io", name: "Ada", role: "admin", disabled: false, created_at: 0, auth: "session" };
const bo = { ...ada, id: "u2", email: "bo@x.io", name: "Bo", role: "viewer" };

/** A fake server: routes "METHOD /path" to [status, body]; a function answers per call. */
function server(routes: Record<string, any>) {
  const calls: string[] = [];
  const fetch = vi.fn(async (path: string, init: RequestInit = {}) => {
    const key = `${init.method ?? "GET"} ${path.split("?")[0]}`;
    calls.push(key);
    let r = routes[key];
    if (typeof r === "function") r = r(init);
    const [status, body] = r ?? [404, { error: { code: "not_found", message: `no ${key}` } }];
    return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  });
  globalThis.fetch = fetch as any;
  return calls;
}

async function settle() {
  for (let i = 0; i < 5; i++) await act(async () => new Promise((r) => setTimeout(r, 0)));
}

function type(testId: string, value: string) {
  const el = document.querySelector<HTMLInputElement>(`[data-testid="${testId}"]`)!;
  const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!;
  act(() => {
    setter.call(el, value);
    el.dispatchEvent(new Event("input", { bubbles: true }));
  });
}

const q = (id: string) => document.querySelector(`[data-testid="${id}"]`);
const realFetch = globalThis.fetch;
let root: ReturnType<typeof createRoot> | null = null;
afterEach(() => {
  act(() => root?.unmount());
  document.body.innerHTML = "";
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
    const div = document.createElement("div");
    document.body.appendChild(div);
    root = createRoot(div);
    act(() => root!.render(<App />));
    await settle();
    expect(q("auth-checking")).not.toBeNull();
    expect(q("library")).toBeNull();
    expect(calls).not.toContain("GET /api/v1/flows");

    releaseMe();
    await settle();
    expect(q("login-page")).not.toBeNull();
    expect(calls).not.toContain("GET /api/v1/flows");

    type("login-email", "ada@x.io");
    type("login-password", "nope");
    await act(async () => (q("login-submit") as HTMLButtonElement).click());
    await settle();
    expect(q("login-error")?.textContent).toMatch(/Wrong email or password/);
    expect(q("login-page")).not.toBeNull();

    type("login-password", "pw");
    await act(async () => (q("login-submit") as HTMLButtonElement).click());
    await settle();
    expect(q("library")).not.toBeNull();
    expect(q("current-user")?.textContent).toContain("Ada");
    expect(q("current-role")?.textContent).toBe("admin");
    expect(q("nav-users")).not.toBeNull();

    // the session ends: the next 401 brings the login page back, not an error screen
    meAnswer = [401, { error: { code: "unauthorized", message: "sign in" } }];
    server({ "GET /api/v1/api-keys": [401, { error: { code: "unauthorized", message: "sign in" } }] });
    await act(async () => (q("nav-keys") as HTMLAnchorElement).click());
    await settle();
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
    const div = document.createElement("div");
    document.body.appendChild(div);
    root = createRoot(div);
    act(() => root!.render(<App />));
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
