import { describe, expect, it } from "vitest";
import { emptyForm, endpointWrites, removalNames } from "./endpoint";
import type { ProviderInfo } from "./providers";

const openai: ProviderInfo = {
  name: "openai",
  label: "OpenAI-compatible",
  kind: "openai",
  configured: false,
  models: ["gpt-4o-mini"],
  key_set: false,
  base_url: null,
  default_base_url: null,
  key_variable: "OPENAI_API_KEY",
  base_url_variable: "OPENAI_BASE_URL",
  model_variable: "OPENAI_MODEL",
};
const anthropic: ProviderInfo = { ...openai, name: "anthropic", label: "Anthropic", kind: "anthropic", key_variable: "ANTHROPIC_API_KEY", base_url_variable: "ANTHROPIC_BASE_URL", model_variable: "ANTHROPIC_MODEL" };

describe("endpointWrites", () => {
  it("a local server: base URL and model as plain values, no key", () => {
    const form = { provider: "openai", baseUrl: " http://127.0.0.1:8080/v1 ", apiKey: "", model: "smollm2" };
    expect(endpointWrites(form, openai)).toEqual([
      { op: "set", name: "OPENAI_BASE_URL", value: "http://127.0.0.1:8080/v1", secret: false },
      { op: "set", name: "OPENAI_MODEL", value: "smollm2", secret: false },
    ]);
  });

  it("the key is a secret, written only when typed; emptied fields delete the user's values", () => {
    const form = { provider: "openai", baseUrl: "", apiKey: "sk-1", model: "" };
    expect(endpointWrites(form, openai, ["OPENAI_BASE_URL", "OPENAI_MODEL"])).toEqual([
      { op: "delete", name: "OPENAI_BASE_URL" },
      { op: "set", name: "OPENAI_API_KEY", value: "sk-1", secret: true },
      { op: "delete", name: "OPENAI_MODEL" },
    ]);
    expect(endpointWrites({ ...form, apiKey: "" }, { ...openai, key_set: true })).toEqual([]);
  });

  it("refuses what cannot configure the provider", () => {
    expect(() => endpointWrites({ provider: "anthropic", baseUrl: "http://x", apiKey: "", model: "" }, anthropic)).toThrow(/API key/);
    expect(() => endpointWrites({ provider: "openai", baseUrl: "ftp://x", apiKey: "", model: "" }, openai)).toThrow(/http/);
  });
});

describe("emptyForm and removalNames", () => {
  it("prefills what is set and removes only the user's variables", () => {
    const set = { ...openai, configured: true, base_url: "http://h/v1", default_model: "m" };
    expect(emptyForm(set)).toEqual({ provider: "openai", baseUrl: "http://h/v1", apiKey: "", model: "m" });
    expect(removalNames(set, ["OPENAI_BASE_URL", "OTHER"])).toEqual(["OPENAI_BASE_URL"]);
  });
});
