import { describe, expect, it, vi } from "vitest";
import { ApiError } from "../api";
import type { Me } from "../types";
import { AuthStore, type AuthClient } from "./auth";

const ada: Me = { id: "u1", email: "ada@x.io", name: "Ada", role: "admin", disabled: false, created_at: 0, auth: "session" };
const bo: Me = { ...ada, id: "u2", email: "bo@x.io", name: "Bo", role: "editor" };
const unauthorized = () => new ApiError(401, "unauthorized", "sign in");

function store(client: Partial<AuthClient>, key = "") {
  let kept = key;
  const deps = {
    client: { me: vi.fn(), login: vi.fn(async () => ({})), logout: vi.fn(async () => undefined), ...client } as AuthClient,
    getKey: () => kept,
    setKey: vi.fn((k: string) => {
      kept = k;
    }),
    reload: vi.fn(),
    forget: vi.fn(),
  };
  return { s: new AuthStore(deps), deps, key: () => kept };
}

describe("auth store", () => {
  it("starts unknown, then signed in when /me answers", async () => {
    const { s } = store({ me: async () => ada });
    expect(s.get()).toEqual({ status: "checking" });
    const seen: string[] = [];
    s.subscribe(() => seen.push(s.get().status));
    await s.check();
    expect(s.get()).toEqual({ status: "signed_in", me: ada });
    expect(seen).toEqual(["signed_in"]);
  });

  it("a 401 from /me is the login page, not an error; other failures are errors", async () => {
    const out = store({ me: async () => Promise.reject(unauthorized()) }, "stale-key");
    await out.s.check();
    expect(out.s.get()).toEqual({ status: "signed_out", reason: "none" });
    expect(out.key()).toBe(""); // the rejected key is dropped
    const down = store({ me: async () => Promise.reject(new TypeError("Failed to fetch")) });
    await down.s.check();
    expect(down.s.get()).toEqual({ status: "error", message: "Failed to fetch" });
  });

  it("asks once while a check is under way", async () => {
    const me = vi.fn(async () => ada);
    const { s } = store({ me });
    await Promise.all([s.check(), s.check()]);
    expect(me).toHaveBeenCalledTimes(1);
  });

  it("signs in with a password, drops a kept key, and reports a wrong password by throwing", async () => {
    const login = vi.fn(async (_e: string, p: string) => (p === "right" ? {} : Promise.reject(unauthorized())));
    const { s, key } = store({ me: vi.fn().mockRejectedValueOnce(unauthorized()).mockResolvedValue(ada), login }, "old");
    await s.check();
    await expect(s.signIn("ada@x.io", "wrong")).rejects.toMatchObject({ status: 401 });
    expect(s.get().status).toBe("signed_out");
    await s.signIn("ada@x.io", "right");
    expect(s.get()).toEqual({ status: "signed_in", me: ada });
    expect(key()).toBe("");
  });

  it("a 401 during the session shows the login page again; the same user carries on", async () => {
    const me = vi.fn(async () => ada);
    const { s, deps } = store({ me });
    await s.check();
    s.unauthorized();
    expect(s.get()).toEqual({ status: "signed_out", reason: "expired" });
    s.unauthorized(); // several calls fail at once: one transition
    await s.signIn("ada@x.io", "pw");
    expect(s.get().status).toBe("signed_in");
    expect(deps.reload).not.toHaveBeenCalled();
  });

  it("someone else signing in after an expiry starts from a clean page", async () => {
    const me = vi.fn().mockResolvedValueOnce(ada).mockResolvedValue(bo);
    const { s, deps } = store({ me });
    await s.check();
    s.unauthorized();
    await s.signIn("bo@x.io", "pw");
    expect(deps.forget).toHaveBeenCalled();
    expect(deps.reload).toHaveBeenCalled();
  });

  it("an API key instead: kept when the server takes it, restored when it does not", async () => {
    const me = vi.fn().mockRejectedValueOnce(unauthorized()).mockRejectedValueOnce(unauthorized()).mockResolvedValue({ ...ada, auth: "key" });
    const { s, key } = store({ me });
    await s.check();
    await expect(s.useKey("bad")).rejects.toMatchObject({ status: 401 });
    expect(key()).toBe("");
    await s.useKey("good");
    expect(key()).toBe("good");
    expect(s.get()).toMatchObject({ status: "signed_in", me: { auth: "key" } });
  });

  it("signing out forgets the user's local state and reloads, even when the server call fails", async () => {
    const { s, deps, key } = store({ me: async () => ada, logout: async () => Promise.reject(new Error("offline")) }, "k");
    await s.check();
    await s.signOut();
    expect(key()).toBe("");
    expect(deps.forget).toHaveBeenCalled();
    expect(deps.reload).toHaveBeenCalled();
  });
});
