import { describe, expect, it } from "vitest";
import { uiHint } from "./format";

describe("uiHint", () => {
  it("says the UI action instead of a CLI command", () => {
    expect(uiHint({ code: "unknown_type", hint: "run `plait nodes` to list the types" })).toBe("pick a node type from the palette");
    expect(uiHint({ code: "invalid_config", hint: "see `plait nodes llm` for the config schema" })).toBe("the node's settings form shows what this field takes");
    expect(uiHint({ code: "other", hint: "run `plait admin link`" })).toBeUndefined();
  });
  it("keeps hints that name no command", () => {
    expect(uiHint({ code: "unknown_type", hint: "did you mean llm?" })).toBe("did you mean llm?");
    expect(uiHint({ code: "x", hint: null })).toBeUndefined();
  });
});
