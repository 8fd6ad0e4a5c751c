import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { api, ApiError, authApi, onUnauthorized, request, setApiKey } from "./api";

function respond(status: number, body?: unknown) {
  return vi.fn(async (_path: string, _init: RequestInit) => new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { "content-type": "application/json" } }));
}

const realFetch = globalThis.fetch;
beforeEach(() => localStorage.clear());
afterEach(() => {
  globalThis.fetch = realFetch;
});

describe("api client", () => {
  it("sends the session cookie (same-origin) and no key header when no key is kept", async () => {
    const fetch = respond(200, []);
    globalThis.fetch = fetch as any;
    await api.listFlows();
    const init = fetch.mock.calls[0][1];
    expect(init.credentials).toBe("same-origin");
    expect(init.headers).not.toHaveProperty("x-api-key");
  });

  it("sends a kept API key as x-api-key, and forgets it when set to blank", async () => {
    const fetch = respond(200, []);
    globalThis.fetch = fetch as any;
    setApiKey("  k-1 ");
    await api.listFlows();
    expect((fetch.mock.calls[0][1].headers as any)["x-api-key"]).toBe("k-1");
    setApiKey("");
    expect(localStorage.getItem("plait.apiKey")).toBeNull();
  });

  it("tells the listeners about a 401 and throws the server's error", async () => {
    globalThis.fetch = respond(401, { error: { code: "unauthorized", message: "sign in first" } }) as any;
    const seen = vi.fn();
    const off = onUnauthorized(seen);
    const err = await request("GET", "/api/v1/flows").catch((e) => e);
    off();
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 401, code: "unauthorized", message: "sign in first" });
    expect(seen).toHaveBeenCalledTimes(1);
  });

  it("a wrong password is not a lost session: login's 401 tells no listener", async () => {
    const fetch = respond(401, { error: { code: "unauthorized", message: "wrong email or password" } });
    globalThis.fetch = fetch as any;
    const seen = vi.fn();
    const off = onUnauthorized(seen);
    await expect(authApi.login("a@b.c", "nope")).rejects.toMatchObject({ status: 401 });
    off();
    expect(seen).not.toHaveBeenCalled();
    expect(fetch.mock.calls[0][0]).toBe("/api/v1/auth/login");
    expect(JSON.parse(fetch.mock.calls[0][1].body as string)).toEqual({ email: "a@b.c", password: "nope" });
  });

  it("builds the sharing and user routes with encoded ids", async () => {
    const fetch = respond(200, {});
    globalThis.fetch = fetch as any;
    await authApi.share("my flow", "u@x.io", "viewer");
    await authApi.updateUser("u/1", { disabled: true });
    await authApi.createUserKey("u1", { name: "ci", scopes: ["read"] });
    expect(fetch.mock.calls.map((c) => [c[1].method, c[0]])).toEqual([
      ["PUT", "/api/v1/flows/my%20flow/shares/u%40x.io"],
      ["PATCH", "/api/v1/users/u%2F1"],
      ["POST", "/api/v1/users/u1/api-keys"],
    ]);
    expect(JSON.parse(fetch.mock.calls[0][1].body as string)).toEqual({ role: "viewer" });
  });

  it("returns nothing for a 204", async () => {
    globalThis.fetch = vi.fn(async () => new Response(null, { status: 204 })) as any;
    await expect(authApi.revokeKey("k1")).resolves.toBeUndefined();
  });
});
