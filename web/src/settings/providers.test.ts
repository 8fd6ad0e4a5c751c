import { describe, expect, it } from "vitest";
import { normalizeProviders } from "./providers";

describe("normalizeProviders", () => {
  it("keeps the contract fields and drops nulls from the optional ones", () => {
    const list = normalizeProviders([
      { name: "openai", label: "OpenAI-compatible", configured: true, models: ["a", 3, "b"], default_model: "a", kind: "openai", key_set: true },
      { name: "scripted", label: "scripted (no model)", configured: true, models: [], default_model: null, kind: "scripted" },
      { label: "nameless" },
    ]);
    expect(list.map((p) => p.name)).toEqual(["openai", "scripted"]);
    expect(list[0]).toMatchObject({ models: ["a", "b"], default_model: "a", key_set: true });
    expect("default_model" in list[1]).toBe(false);
  });

  it("accepts a {providers} envelope and rejects anything else", () => {
    expect(normalizeProviders({ providers: [{ name: "groq", configured: false }] })[0]).toMatchObject({ name: "groq", label: "groq", models: [] });
    expect(normalizeProviders("nope")).toEqual([]);
  });
});
