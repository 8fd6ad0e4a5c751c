/**
 * The model providers a node may use, for the provider and model dropdowns. The settings pages own
 * the list (`settings/providers.ts`, `useProviders`); until that module is in the build this reads
 * `GET /api/v1/llm/providers` itself, and when that fails too the dropdown offers the provider
 * names every plait knows, with the model as free text.
 */
import { useEffect, useState } from "react";
import { request } from "../../api";

export interface ProviderInfo {
  name: string;
  label: string;
  configured: boolean;
  models: string[];
  default_model?: string;
}

export interface ProvidersState {
  providers: ProviderInfo[];
  loading: boolean;
  error?: string;
}

type Hook = () => ProvidersState;

export const SCRIPTED: ProviderInfo = { name: "scripted", label: "scripted (no model)", configured: true, models: [] };

/** The providers every plait knows (spec/model_settings.py PRESETS), when the server says nothing. */
export const KNOWN_PROVIDERS: ProviderInfo[] = [
  { name: "openai", label: "OpenAI-compatible", configured: false, models: [] },
  { name: "anthropic", label: "Anthropic", configured: false, models: [] },
  { name: "groq", label: "Groq", configured: false, models: [] },
  { name: "ollama", label: "Ollama", configured: false, models: [] },
  SCRIPTED,
];

let cache: Promise<ProviderInfo[]> | null = null;

function useServerProviders(): ProvidersState {
  const [state, setState] = useState<ProvidersState>({ providers: [], loading: true });
  useEffect(() => {
    let live = true;
    cache ??= request<any>("GET", "/api/v1/llm/providers").then((r) => (Array.isArray(r) ? r : (r?.providers ?? [])));
    cache.then(
      (providers) => live && setState({ providers, loading: false }),
      (e) => {
        cache = null;
        if (live) setState({ providers: [], loading: false, error: String(e?.message ?? e) });
      },
    );
    return () => {
      live = false;
    };
  }, []);
  return state;
}

// The settings module, when it is part of the build (a glob, so its absence is not an error).
const settings = import.meta.glob<{ useProviders?: Hook }>("../../settings/providers.ts", { eager: true });
const fromSettings = Object.values(settings)[0]?.useProviders;

/** The providers to offer: configured first, the scripted provider always, named explicitly. */
export function useProviderChoices(): ProvidersState {
  const state = (fromSettings ?? useServerProviders)();
  return { ...state, providers: orderProviders(state.providers.length ? state.providers : state.loading ? [] : KNOWN_PROVIDERS) };
}

export function orderProviders(list: ProviderInfo[]): ProviderInfo[] {
  const withScripted = list.some((p) => p.name === "scripted") ? list : [...list, SCRIPTED];
  const rank = (p: ProviderInfo) => (p.name === "scripted" ? 1 : p.configured ? 0 : 2);
  return [...withScripted].sort((a, b) => rank(a) - rank(b));
}
