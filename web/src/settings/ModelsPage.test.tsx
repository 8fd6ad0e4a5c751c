import { afterEach, describe, expect, it } from "vitest";
import { click, fakeServer, mount, settle, type, unmount } from "../test/dom";
import ModelsPage from "./ModelsPage";
import { resetProvidersCache } from "./providers";

const realFetch = globalThis.fetch;
afterEach(() => {
  unmount();
  globalThis.fetch = realFetch;
  resetProvidersCache();
});

const openai = {
  name: "openai",
  label: "OpenAI-compatible",
  kind: "openai",
  configured: false,
  models: ["gpt-4o-mini"],
  default_model: "gpt-4o-mini",
  key_set: false,
  base_url: null,
  default_base_url: null,
  key_variable: "OPENAI_API_KEY",
  base_url_variable: "OPENAI_BASE_URL",
  model_variable: "OPENAI_MODEL",
};
const scripted = { name: "scripted", label: "scripted (no model)", kind: "scripted", configured: true, models: [] };
const text = (id: string) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? "";

describe("ModelsPage", () => {
  it("tests an endpoint, saves the key as a secret and the base URL and model as plain values, then reloads the providers", async () => {
    let configured = false;
    const calls = fakeServer({
      "GET /api/v1/llm/providers": () => [200, [configured ? { ...openai, configured: true, key_set: true, base_url: "http://127.0.0.1:8080/v1", models: ["smol"], models_source: "endpoint" } : openai, scripted]],
      "GET /api/v1/variables": [200, []],
      "POST /api/v1/llm/test": [200, { ok: true, provider: "openai", base_url: "http://127.0.0.1:8080/v1", models: ["smol"], reason: null, error: null, hint: null }],
      "PUT /api/v1/variables/OPENAI_BASE_URL": [200, {}],
      "PUT /api/v1/variables/OPENAI_API_KEY": () => {
        configured = true;
        return [200, {}];
      },
      "PUT /api/v1/variables/OPENAI_MODEL": [200, {}],
    });
    mount(<ModelsPage />);
    await settle();
    expect(text("provider-status-openai")).toBe("not configured");
    expect(text("provider-card-scripted")).toContain("scripted (no model)");
    await click("add-endpoint");
    type("endpoint-base-url", "http://127.0.0.1:8080/v1");
    type("endpoint-key", "sk-1");
    await click("test-connection");
    await settle();
    expect(text("test-models")).toContain("smol");
    type("endpoint-model", "smol");
    await click("save-endpoint");
    await settle();
    const puts = calls.filter((c) => c.method === "PUT").map((c) => [c.path, c.body.is_secret]);
    expect(puts).toEqual([
      ["/api/v1/variables/OPENAI_BASE_URL", false],
      ["/api/v1/variables/OPENAI_API_KEY", true],
      ["/api/v1/variables/OPENAI_MODEL", false],
    ]);
    expect(text("provider-status-openai")).toBe("configured");
  });
});
