/** What saving an endpoint on the Models page writes: pure, so it is unit-tested. A provider is
 * configured by variables (spec/model_settings.py PRESETS): its key as a secret (only when typed:
 * an empty key field keeps the stored one), its base URL and default model as plain values (an
 * emptied field removes the stored value). */
import type { ProviderInfo } from "./providers";

export interface EndpointForm {
  provider: string;
  baseUrl: string;
  apiKey: string;
  model: string;
}

export type VariableWrite =
  | { op: "set"; name: string; value: string; secret: boolean }
  | { op: "delete"; name: string };

export function emptyForm(p?: ProviderInfo): EndpointForm {
  const ownBase = p?.base_url && p.base_url !== p.default_base_url ? p.base_url : "";
  return { provider: p?.name ?? "openai", baseUrl: ownBase ?? "", apiKey: "", model: p?.configured ? (p.default_model ?? "") : "" };
}

/** The variable writes that store `form` for `info` (which says the variable names and what is
 * set now); `userVars` are the names of the user's own variables (an emptied field deletes only
 * the user's, never a deployment-wide one). Throws when the form cannot configure the provider. */
export function endpointWrites(form: EndpointForm, info: ProviderInfo, userVars: string[] = []): VariableWrite[] {
  const keyVar = info.key_variable;
  const baseVar = info.base_url_variable;
  const modelVar = info.model_variable;
  if (!keyVar || !baseVar) throw new Error(`${info.label} is not configured by variables`);
  const baseUrl = form.baseUrl.trim();
  const apiKey = form.apiKey.trim();
  const model = form.model.trim();
  if (baseUrl && !/^https?:\/\/\S+$/i.test(baseUrl)) throw new Error("The base URL must start with http:// or https://");
  const openaiLike = info.kind !== "anthropic";
  if (!apiKey && !info.key_set && !(openaiLike && baseUrl)) {
    throw new Error(openaiLike ? "Give a base URL (a local server needs no key) or an API key." : "Give an API key.");
  }
  const writes: VariableWrite[] = [];
  if (baseUrl) writes.push({ op: "set", name: baseVar, value: baseUrl, secret: false });
  else if (userVars.includes(baseVar)) writes.push({ op: "delete", name: baseVar });
  if (apiKey) writes.push({ op: "set", name: keyVar, value: apiKey, secret: true });
  if (modelVar) {
    if (model) writes.push({ op: "set", name: modelVar, value: model, secret: false });
    else if (userVars.includes(modelVar)) writes.push({ op: "delete", name: modelVar });
  }
  return writes;
}

/** The variables removing the endpoint deletes (those of the user that exist). */
export function removalNames(info: ProviderInfo, userVariables: string[]): string[] {
  return [info.key_variable, info.base_url_variable, info.model_variable].filter((n): n is string => !!n && userVariables.includes(n));
}
