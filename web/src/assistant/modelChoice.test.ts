import { afterEach, describe, expect, it } from "vitest";
import {
  choiceValue,
  isOffered,
  modelOptions,
  parseChoiceValue,
  pickModel,
  readModelChoice,
  repairModelName,
  resolveModelChoice,
  writeModelChoice,
} from "./modelChoice";
import { STORAGE_KEYS } from "./storage";
import type { AssistantConfig } from "./types";

afterEach(() => localStorage.clear());

function config(patch: Partial<AssistantConfig> = {}): AssistantConfig {
  return {
    configured: true,
    configured_providers: ["openai", "anthropic"],
    providers: [
      { name: "openai", configured: true, default_model: "gpt-4o", models: [{ name: "gpt-4o", display_name: "GPT-4o" }, { name: "gpt-4o-mini", display_name: "GPT-4o mini" }] },
      { name: "anthropic", configured: true, default_model: "claude-sonnet", models: [{ name: "claude-sonnet", display_name: "Claude Sonnet" }] },
      { name: "ollama", configured: false, default_model: "llama3", models: [{ name: "llama3", display_name: "Llama 3" }] },
    ],
    default_provider: "anthropic",
    default_model: "claude-sonnet",
    ...patch,
  };
}

describe("model choice", () => {
  it("A-S5: with no saved choice the default is picked and saved", () => {
    expect(resolveModelChoice(config())).toEqual({ provider: "anthropic", model: "claude-sonnet" });
    expect(JSON.parse(localStorage.getItem(STORAGE_KEYS.model)!)).toEqual({ provider: "anthropic", model: "claude-sonnet" });
  });

  it("F6: a saved choice that is still offered wins", () => {
    writeModelChoice({ provider: "openai", model: "gpt-4o-mini" });
    expect(resolveModelChoice(config())).toEqual({ provider: "openai", model: "gpt-4o-mini" });
  });

  it("F6: a saved choice whose provider is gone falls back to the default", () => {
    writeModelChoice({ provider: "ollama", model: "llama3" });
    expect(resolveModelChoice(config())).toEqual({ provider: "anthropic", model: "claude-sonnet" });
    expect(readModelChoice()).toEqual({ provider: "anthropic", model: "claude-sonnet" });
  });

  it("F6: a saved model no longer offered falls back", () => {
    expect(pickModel(config(), { provider: "openai", model: "gpt-3" })).toEqual({ provider: "anthropic", model: "claude-sonnet" });
  });

  it("F6: without a usable default, the first configured provider's default", () => {
    const c = config({ default_provider: "ollama", default_model: "llama3" });
    expect(pickModel(c, null)).toEqual({ provider: "openai", model: "gpt-4o" });
    const noDefault = config({ default_provider: null, default_model: null });
    expect(pickModel(noDefault, null)).toEqual({ provider: "openai", model: "gpt-4o" });
  });

  it("A-S13: no configured provider gives no choice (the empty state, nothing is sent)", () => {
    const c = config({ configured: false, configured_providers: [], providers: config().providers.map((p) => ({ ...p, configured: false })) });
    expect(pickModel(c, { provider: "openai", model: "gpt-4o" })).toBeNull();
    expect(modelOptions(c)).toEqual([]);
  });

  it("options list only configured providers' models, as provider/model values", () => {
    expect(modelOptions(config()).map((o) => o.value)).toEqual(["openai/gpt-4o", "openai/gpt-4o-mini", "anthropic/claude-sonnet"]);
    expect(modelOptions(config())[0].label).toBe("GPT-4o");
  });

  it("a provider without a model list offers its default model", () => {
    const c = config({ providers: [{ name: "custom", configured: true, default_model: "m1", models: [] }], default_provider: null, default_model: null });
    expect(modelOptions(c).map((o) => o.value)).toEqual(["custom/m1"]);
    expect(isOffered(c, { provider: "custom", model: "anything" })).toBe(true);
    expect(pickModel(c, null)).toEqual({ provider: "custom", model: "m1" });
  });

  it("select values round-trip, models with slashes included", () => {
    expect(parseChoiceValue(choiceValue({ provider: "openrouter", model: "meta/llama-3" }))).toEqual({ provider: "openrouter", model: "meta/llama-3" });
    expect(parseChoiceValue("nothing")).toBeNull();
    expect(parseChoiceValue("/x")).toBeNull();
  });

  it("A-S39: a doubly-encoded model value reads as 'gpt-4o', not raw JSON", () => {
    expect(repairModelName("gpt-4o")).toBe("gpt-4o");
    expect(repairModelName(JSON.stringify("gpt-4o"))).toBe("gpt-4o");
    expect(repairModelName(JSON.stringify(JSON.stringify([{ name: "gpt-4o" }, { name: "gpt-4o-mini" }])))).toBe("gpt-4o");
    expect(repairModelName([{ name: JSON.stringify([{ name: "gpt-4o" }]) }])).toBe("gpt-4o");
    localStorage.setItem(STORAGE_KEYS.model, JSON.stringify({ provider: "openai", model: JSON.stringify([{ name: "gpt-4o" }]) }));
    expect(readModelChoice()).toEqual({ provider: "openai", model: "gpt-4o" });
  });

  it("a corrupt saved choice reads as none", () => {
    localStorage.setItem(STORAGE_KEYS.model, "garbage");
    expect(readModelChoice()).toBeNull();
    localStorage.setItem(STORAGE_KEYS.model, JSON.stringify({ provider: 3 }));
    expect(readModelChoice()).toBeNull();
  });
});
