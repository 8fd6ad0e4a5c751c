/**
 * Which model a message goes to (F6): the saved choice while its provider is still configured and
 * offers it, otherwise the server's default, otherwise the first configured provider's default.
 * No configured provider: no choice, and the panel shows its empty state instead of sending (F7).
 */
import type { AssistantConfig, ModelChoice } from "./types";
import { readJson, STORAGE_KEYS, writeJson } from "./storage";

export interface ModelOption {
  /** "provider/model": the <select>'s value. */
  value: string;
  provider: string;
  model: string;
  label: string;
}

export function choiceValue(c: ModelChoice): string {
  return `${c.provider}/${c.model}`;
}

/** "provider/model" back to a choice (the model may contain slashes). */
export function parseChoiceValue(value: string): ModelChoice | null {
  const i = value.indexOf("/");
  if (i <= 0 || i === value.length - 1) return null;
  return { provider: value.slice(0, i), model: value.slice(i + 1) };
}

/**
 * A model name as stored, repaired when it was JSON-encoded (twice, or the whole option list in
 * it, F8): the first `name` found, else the string as it is.
 */
export function repairModelName(value: unknown): string {
  let v: unknown = value;
  for (let depth = 0; depth < 10; depth++) {
    if (typeof v === "string") {
      const t = v.trim();
      if (!(t.startsWith("[") || t.startsWith("{") || t.startsWith('"'))) return t;
      try {
        v = JSON.parse(t);
      } catch {
        return t;
      }
    } else if (Array.isArray(v)) {
      v = v[0];
    } else if (v && typeof v === "object") {
      const o = v as Record<string, unknown>;
      v = o.name ?? o.model ?? o.value ?? "";
    } else {
      return v === undefined || v === null ? "" : String(v);
    }
  }
  return typeof v === "string" ? v : "";
}

/** Every model of every configured provider, in the server's order. */
export function modelOptions(config: AssistantConfig): ModelOption[] {
  const out: ModelOption[] = [];
  for (const p of config.providers) {
    if (!p.configured) continue;
    const models = p.models.length ? p.models : p.default_model ? [{ name: p.default_model, display_name: p.default_model }] : [];
    for (const m of models) {
      out.push({ value: `${p.name}/${m.name}`, provider: p.name, model: m.name, label: m.display_name || m.name });
    }
  }
  return out;
}

/** Is `choice` usable with this configuration (provider configured, model offered)? */
export function isOffered(config: AssistantConfig, choice: ModelChoice): boolean {
  const p = config.providers.find((x) => x.name === choice.provider);
  if (!p || !p.configured) return false;
  if (!p.models.length) return !!choice.model;
  return p.models.some((m) => m.name === choice.model);
}

function providerDefault(config: AssistantConfig, name: string | null): ModelChoice | null {
  const p = config.providers.find((x) => x.name === name && x.configured);
  if (!p) return null;
  const model = (name === config.default_provider ? config.default_model : null) ?? p.default_model ?? p.models[0]?.name;
  return model ? { provider: p.name, model } : null;
}

/** The model to use: the saved one if still offered, else the default, else the first configured provider's. */
export function pickModel(config: AssistantConfig, saved: ModelChoice | null): ModelChoice | null {
  if (saved && isOffered(config, saved)) return saved;
  const byDefault = providerDefault(config, config.default_provider);
  if (byDefault) return byDefault;
  for (const p of config.providers) {
    const c = providerDefault(config, p.name);
    if (c) return c;
  }
  return null;
}

/** The saved choice (repaired), or null. */
export function readModelChoice(): ModelChoice | null {
  const raw = readJson<unknown>(STORAGE_KEYS.model, null);
  if (!raw || typeof raw !== "object") return null;
  const r = raw as Record<string, unknown>;
  const provider = typeof r.provider === "string" ? r.provider : "";
  const model = repairModelName(r.model);
  return provider && model ? { provider, model } : null;
}

export function writeModelChoice(choice: ModelChoice): void {
  writeJson(STORAGE_KEYS.model, { provider: choice.provider, model: choice.model });
}

/** Load-time choice: pick against the configuration and save it when it changed (A-S5). */
export function resolveModelChoice(config: AssistantConfig): ModelChoice | null {
  const saved = readModelChoice();
  const picked = pickModel(config, saved);
  if (picked && (!saved || choiceValue(saved) !== choiceValue(picked))) writeModelChoice(picked);
  return picked;
}
