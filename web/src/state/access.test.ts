import { describe, expect, it } from "vitest";
import { shareTarget } from "../editor/ShareDialog";
import { matchRoute, paths } from "../router";
import type { User } from "../types";
import { accessLabel, allowedScopes, canEdit, canManage, defaultScopes, signinNotice, toggleScope } from "./access";

describe("key scopes", () => {
  it("a key carries at most what its user's role allows", () => {
    expect(allowedScopes("admin")).toEqual(["read", "write", "run", "admin"]);
    expect(allowedScopes("editor")).toEqual(["read", "write", "run"]);
    expect(allowedScopes("viewer")).toEqual(["read"]);
    expect(defaultScopes("admin")).toEqual(["read", "write", "run"]); // admin is opt-in
  });

  it("ticking keeps the canonical order and brings read along; unticking read clears all", () => {
    expect(toggleScope([], "run", true)).toEqual(["read", "run"]);
    expect(toggleScope(["read", "run"], "write", true)).toEqual(["read", "write", "run"]);
    expect(toggleScope(["read", "write", "run"], "write", false)).toEqual(["read", "run"]);
    expect(toggleScope(["read", "write"], "read", false)).toEqual([]);
  });
});

describe("flow access", () => {
  it("viewers may not edit; owners and admins manage; a server without users allows all", () => {
    expect(canEdit("viewer")).toBe(false);
    expect(["owner", "editor", "admin", undefined].map((a) => canEdit(a as any))).toEqual([true, true, true, true]);
    expect(["owner", "admin", "editor", "viewer", undefined].map((a) => canManage(a as any))).toEqual([true, true, false, false, true]);
    expect(accessLabel("viewer")).toBe("shared with you · viewer");
    expect(accessLabel("owner")).toBeNull();
  });
});

describe("sign-in link notices", () => {
  it("explains an expired link and ignores other queries", () => {
    expect(signinNotice("?signin=expired")).toMatch(/expired or was already used/);
    expect(signinNotice("?signin=whatever")).toMatch(/did not work/);
    expect(signinNotice("?q=1")).toBeNull();
    expect(signinNotice("")).toBeNull();
  });
});

describe("routes", () => {
  it("has pages for keys and users", () => {
    expect(matchRoute(paths.keys())).toEqual({ name: "keys" });
    expect(matchRoute(paths.users())).toEqual({ name: "users" });
    expect(matchRoute("/users/x")).toMatchObject({ name: "not_found" });
  });
});

describe("share target", () => {
  const users = [{ id: "u2", email: "Bo@Example.com" }] as User[];
  it("sends a known user's id, else what was typed", () => {
    expect(shareTarget(" bo@example.com ", users)).toBe("u2");
    expect(shareTarget("u2", users)).toBe("u2");
    expect(shareTarget("cy@example.com", users)).toBe("cy@example.com");
    expect(shareTarget("cy@example.com", null)).toBe("cy@example.com");
  });
});
