/**
 * The model part of a node config (provider, model, script...: spec/model_settings.py). Real
 * providers reject a `script` (it is only replayed by the `scripted` provider), so choosing one
 * removes it, and the form hides the script unless the provider can use it. Pure, unit-tested.
 */

/** Providers that replay the node's script: `scripted`, and `auto` when no model is configured. */
export function usesScript(provider: string | undefined): boolean {
  return provider === "scripted" || provider === "auto";
}

/** Whether a config object is a model config (has the ModelSettings fields). */
export function isModelFields(keys: string[]): boolean {
  return keys.includes("provider") && keys.includes("model");
}

/** The config after choosing `provider`: `script` dropped when the provider does not use it, and
 * the provider's default model filled in when the node names none. */
export function withProvider(config: Record<string, any>, provider: string | undefined, defaultModel?: string): Record<string, any> {
  const next: Record<string, any> = { ...config };
  if (provider === undefined || provider === "") delete next.provider;
  else next.provider = provider;
  if (!usesScript(provider)) delete next.script;
  if (!next.model && defaultModel && !usesScript(provider)) next.model = defaultModel;
  return next;
}
