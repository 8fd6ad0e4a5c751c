/**
 * What the signed-in user may do, as pure functions the pages share: which key scopes a role may
 * grant, which flow controls the caller's `access` allows, and the message for a `?signin=` reason
 * the server redirects to. The server decides; these only keep the UI from offering what it refuses.
 */
import type { FlowAccess, Role, Scope } from "../types";

/** The server's minimum password length (service/users.py). */
export const MIN_PASSWORD = 8;

export const ALL_SCOPES: readonly Scope[] = ["read", "write", "run", "admin"];

export const SCOPE_HELP: Record<Scope, string> = {
  read: "list and read flows, runs and variables",
  write: "create, change and delete flows and variables",
  run: "start, stop and retry runs",
  admin: "manage users and deployment-wide settings",
};

/** The scopes a key of a user with `role` can carry (a key never does more than its user). */
export function allowedScopes(role: Role): Scope[] {
  if (role === "admin") return [...ALL_SCOPES];
  if (role === "editor") return ["read", "write", "run"];
  return ["read"];
}

/** The scopes ticked when the create-key form opens. */
export function defaultScopes(role: Role): Scope[] {
  return allowedScopes(role).filter((s) => s !== "admin");
}

/** Tick or untick `scope`, keeping the canonical order; `read` goes with any other scope. */
export function toggleScope(scopes: readonly Scope[], scope: Scope, on: boolean): Scope[] {
  const set = new Set(scopes);
  if (on) {
    set.add(scope);
    set.add("read");
  } else {
    set.delete(scope);
    if (scope === "read") set.clear(); // nothing works without read
  }
  return ALL_SCOPES.filter((s) => set.has(s));
}

/** May the caller change the flow (draft, publish, run)? Absent `access`: a server without users. */
export function canEdit(access: FlowAccess | undefined): boolean {
  return access === undefined || access !== "viewer";
}

/** May the caller share, rename away or delete the flow? */
export function canManage(access: FlowAccess | undefined): boolean {
  return access === undefined || access === "owner" || access === "admin";
}

/** A short label for a flow the caller does not own ("shared · viewer"), or null. */
export function accessLabel(access: FlowAccess | undefined): string | null {
  if (access === "viewer" || access === "editor") return `shared with you · ${access}`;
  return null;
}

/** The login page's notice for the query the server redirected to (`/?signin=expired`). */
export function signinNotice(search: string): string | null {
  const reason = new URLSearchParams(search).get("signin");
  if (!reason) return null;
  if (reason === "expired" || reason === "invalid" || reason === "used")
    return "That sign-in link has expired or was already used. Run `plait admin link` on the server for a new one, or sign in with your email and password.";
  return "Sign-in did not work. Sign in with your email and password.";
}

export const ROLE_HELP: Record<Role, string> = {
  admin: "everything, including users and deployment-wide variables",
  editor: "creates flows and changes what is shared with them as editor",
  viewer: "reads what is shared with them",
};
