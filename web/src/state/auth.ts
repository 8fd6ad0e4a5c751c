/**
 * Who is signed in, as one small store the shell renders from. The session cookie is httpOnly, so
 * the only way to know is to ask (`GET /me`): until the answer the shell shows nothing, so the
 * library never flashes before the login page. A 401 from any later call signs the UI out (the
 * session ended); signing in again as someone else reloads the page, so no cache of the previous
 * user (node types with their components, tools, open tabs) survives.
 */
import { useSyncExternalStore } from "react";
import { ApiError, authApi, getApiKey, setApiKey } from "../api";
import type { Me } from "../types";

export type AuthState =
  | { status: "checking" }
  | { status: "signed_out"; reason: "none" | "expired" }
  | { status: "signed_in"; me: Me }
  | { status: "error"; message: string };

export interface AuthClient {
  me(): Promise<Me>;
  login(email: string, password: string): Promise<unknown>;
  logout(): Promise<unknown>;
}

export interface AuthDeps {
  client: AuthClient;
  getKey(): string;
  setKey(key: string): void;
  /** Load `/` afresh (drops every per-user cache). */
  reload(): void;
  /** Forget what the browser keeps for the signed-in user (open tabs, clipboard). */
  forget(): void;
}

/** localStorage entries that belong to whoever is signed in. */
export const USER_STORAGE = ["plait.openFlows", "plait.clipboard"];

function isUnauthorized(e: unknown): boolean {
  return e instanceof ApiError && e.status === 401;
}

export class AuthStore {
  private state: AuthState = { status: "checking" };
  private listeners = new Set<() => void>();
  private checking: Promise<void> | null = null;
  private lastUserId: string | null = null;

  constructor(private readonly deps: AuthDeps) {}

  get = (): AuthState => this.state;

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  private set(next: AuthState): void {
    this.state = next;
    if (next.status === "signed_in") this.lastUserId = next.me.id;
    this.listeners.forEach((fn) => fn());
  }

  /** Ask the server who we are (once at a time). */
  check(): Promise<void> {
    if (this.checking) return this.checking;
    if (this.state.status !== "checking") this.set({ status: "checking" });
    this.checking = this.deps.client
      .me()
      .then(
        (me) => this.set({ status: "signed_in", me }),
        (e) => {
          if (isUnauthorized(e)) {
            if (this.deps.getKey()) this.deps.setKey(""); // a stored key the server no longer takes
            this.set({ status: "signed_out", reason: "none" });
          } else this.set({ status: "error", message: e instanceof Error ? e.message : String(e) });
        },
      )
      .finally(() => {
        this.checking = null;
      });
    return this.checking;
  }

  /** Sign in with a password; throws the server's error (a 401 for wrong credentials). */
  async signIn(email: string, password: string): Promise<void> {
    await this.deps.client.login(email, password);
    this.deps.setKey(""); // the session replaces a key kept from before
    this.enter(await this.deps.client.me());
  }

  /** Use an API key instead of a session (programs' credential; kept in this browser). */
  async useKey(key: string): Promise<void> {
    const before = this.deps.getKey();
    this.deps.setKey(key);
    try {
      const me = await this.deps.client.me();
      this.enter(me);
    } catch (e) {
      this.deps.setKey(before);
      throw e;
    }
  }

  private enter(me: Me): void {
    if (this.lastUserId !== null && this.lastUserId !== me.id) {
      // someone else than before: start from a clean page
      this.deps.forget();
      this.deps.reload();
      return;
    }
    this.set({ status: "signed_in", me });
  }

  async signOut(): Promise<void> {
    try {
      await this.deps.client.logout();
    } catch {
      /* the cookie may be gone already: signed out either way */
    }
    this.deps.setKey("");
    this.deps.forget();
    this.deps.reload();
  }

  /** A call answered 401: the session ended (or the key was revoked). */
  unauthorized(): void {
    if (this.state.status !== "signed_in") return;
    if (this.deps.getKey()) this.deps.setKey("");
    this.set({ status: "signed_out", reason: "expired" });
  }

  /** The signed-in user changed (an admin renamed themselves, say). */
  refresh(me: Me): void {
    if (this.state.status === "signed_in" && this.state.me.id === me.id) this.set({ status: "signed_in", me: { ...this.state.me, ...me } });
  }
}

export const authStore = new AuthStore({
  client: authApi,
  getKey: getApiKey,
  setKey: setApiKey,
  reload: () => window.location.replace("/"),
  forget: () => USER_STORAGE.forEach((k) => localStorage.removeItem(k)),
});

export function useAuth(store: AuthStore = authStore): AuthState {
  return useSyncExternalStore(store.subscribe, store.get);
}
