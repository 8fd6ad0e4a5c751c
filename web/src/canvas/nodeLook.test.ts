import { describe, expect, it } from "vitest";
import { nodeGroup, nodeIcon, nodeSummary } from "./nodeLook";

describe("node look", () => {
  it("groups by type first, then by category", () => {
    expect(nodeGroup("code", { category: "logic" })).toBe("code");
    expect(nodeGroup("switch", { category: "logic" })).toBe("flow");
    expect(nodeGroup("llm", { category: "ai" })).toBe("model");
    expect(nodeGroup("http", { category: "integrations" })).toBe("tool");
    expect(nodeGroup("component:Foo", { category: "components" })).toBe("code");
    expect(nodeGroup("whatever")).toBe("data");
    expect(nodeIcon("loop", "flow")).toBe("↻");
  });
  it("summarises the config in one line", () => {
    expect(nodeSummary({ type: "llm", config: { provider: "openai", model: "gpt-4o" } })).toBe("openai · gpt-4o");
    expect(nodeSummary({ type: "http", config: { method: "post", url: "https://x.io/a" } })).toBe("POST https://x.io/a");
    expect(nodeSummary({ type: "if", config: { when: [{ ref: "a.b", op: ">", value: 3 }, { ref: "c" }] } })).toBe("if a.b > 3 (+1)");
    expect(nodeSummary({ type: "categorize", config: { categories: [{ name: "billing" }, { name: "bug" }] } })).toBe("auto → billing, bug");
    expect(nodeSummary({ type: "code", config: { code: "# doc\n\nresult = 1 + 1\n" } })).toBe("result = 1 + 1");
    expect(nodeSummary({ type: "message", config: { text: "x".repeat(100) } }).length).toBeLessThanOrEqual(60);
    expect(nodeSummary({ type: "start", config: {} })).toBe("");
  });
});
