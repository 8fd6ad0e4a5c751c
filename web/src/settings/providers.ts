/**
 * The model providers the signed-in user can call (`GET /api/v1/llm/providers`): the node forms'
 * provider and model dropdowns and the Models page read the same list. One request is shared by
 * every component that asks; `reload()` (after the Models page saves or removes an endpoint)
 * refetches it for all of them, so the dropdowns follow the settings without a page reload.
 */
import { useEffect, useState } from "react";
import { request } from "../api";

export interface ProviderInfo {
  name: string;
  label: string;
  configured: boolean;
  models: string[];
  default_model?: string;
  kind?: string;
  /** "endpoint": listed by the server now; "known": the models plait knows for it. */
  models_source?: "endpoint" | "known" | null;
  models_error?: string | null;
  base_url?: string | null;
  default_base_url?: string | null;
  key_set?: boolean;
  key_optional?: boolean;
  key_variable?: string | null;
  base_url_variable?: string | null;
  model_variable?: string | null;
}

export interface ProvidersState {
  providers: ProviderInfo[];
  loading: boolean;
  error?: string;
  reload(): void;
}

type Snapshot = { providers: ProviderInfo[]; loading: boolean; error?: string };

/** The wire entry as a ProviderInfo (nulls dropped from the optional contract fields). */
export function normalizeProvider(raw: any): ProviderInfo {
  const models = Array.isArray(raw?.models) ? raw.models.filter((m: unknown) => typeof m === "string") : [];
  const out: ProviderInfo = {
    ...raw,
    name: String(raw?.name ?? ""),
    label: String(raw?.label || raw?.name || ""),
    configured: Boolean(raw?.configured),
    models,
  };
  if (raw?.default_model == null) delete out.default_model;
  if (raw?.kind == null) delete out.kind;
  return out;
}

export function normalizeProviders(raw: unknown): ProviderInfo[] {
  const list = Array.isArray(raw) ? raw : Array.isArray((raw as any)?.providers) ? (raw as any).providers : [];
  return list.map(normalizeProvider).filter((p: ProviderInfo) => p.name);
}

let snapshot: Snapshot = { providers: [], loading: true };
let loaded = false;
const listeners = new Set<(s: Snapshot) => void>();

function publish(next: Snapshot): void {
  snapshot = next;
  listeners.forEach((fn) => fn(next));
}

/** Fetch the list (again); every mounted `useProviders` gets the answer. */
export function reloadProviders(): Promise<void> {
  publish({ ...snapshot, loading: true });
  const p = request<unknown>("GET", "/api/v1/llm/providers").then(
    (raw) => publish({ providers: normalizeProviders(raw), loading: false }),
    (e: any) => publish({ providers: snapshot.providers, loading: false, error: String(e?.message ?? e) }),
  );
  loaded = true;
  return p;
}

/** For tests: forget the shared list. */
export function resetProvidersCache(): void {
  snapshot = { providers: [], loading: true };
  loaded = false;
}

export function useProviders(): ProvidersState {
  const [state, setState] = useState<Snapshot>(snapshot);
  useEffect(() => {
    listeners.add(setState);
    if (!loaded) void reloadProviders();
    else setState(snapshot);
    return () => {
      listeners.delete(setState);
    };
  }, []);
  return { ...state, reload: () => void reloadProviders() };
}
