/**
 * The providers the node forms offer in their provider dropdown: the settings' list
 * (`useProviders`, `GET /api/v1/llm/providers`) with the configured ones first and the scripted
 * provider always present and named as such. When the list cannot be read, the provider names
 * every plait knows are offered (models then typed freely).
 */
import { useProviders, type ProviderInfo } from "../../settings/providers";

export type { ProviderInfo };

export interface ProviderChoices {
  providers: ProviderInfo[];
  loading: boolean;
  error?: string;
}

export const SCRIPTED: ProviderInfo = { name: "scripted", label: "scripted (no model)", configured: true, models: [] };

/** The providers of spec/model_settings.py PRESETS, when the server's list is not available. */
export const KNOWN_PROVIDERS: ProviderInfo[] = [
  { name: "openai", label: "OpenAI-compatible", configured: false, models: [] },
  { name: "anthropic", label: "Anthropic", configured: false, models: [] },
  { name: "groq", label: "Groq", configured: false, models: [] },
  { name: "ollama", label: "Ollama", configured: false, models: [] },
  SCRIPTED,
];

export function useProviderChoices(): ProviderChoices {
  const { providers, loading, error } = useProviders();
  const list = providers.length ? providers : loading ? [] : KNOWN_PROVIDERS;
  return { providers: orderProviders(list), loading: loading && !providers.length, error };
}

/** Configured providers first, then "scripted (no model)", then the ones not set up yet. */
export function orderProviders(list: ProviderInfo[]): ProviderInfo[] {
  const withScripted = list.some((p) => p.name === "scripted") ? list : [...list, SCRIPTED];
  const rank = (p: ProviderInfo) => (p.name === "scripted" ? 1 : p.configured ? 0 : 2);
  return [...withScripted].sort((a, b) => rank(a) - rank(b));
}
