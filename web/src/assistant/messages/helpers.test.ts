import { describe, expect, it } from "vitest";
import type { ChatMessage, CompleteData } from "../types";
import { baseName, fileSize } from "./FileCards";
import { componentOf, failedComponent } from "./MessageView";
import { layoutOf } from "./MiniFlow";
import { attemptText, stepText } from "./ProgressCard";
import { slashMatches } from "./SlashHints";
import { runMetricsText, usageText } from "./UsageBadge";

const done = (extra: Partial<CompleteData>): CompleteData => ({
  result: "",
  validated: false,
  class_name: null,
  component_code: null,
  validation_attempts: 0,
  intent: "question",
  provider: "scripted",
  model: null,
  usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
  duration_seconds: 0.1,
  ...extra,
});
const msg = (m: Partial<ChatMessage>): ChatMessage => ({ id: "a", role: "assistant", text: "", status: "complete", createdAt: 0, ...m });

describe("message helpers", () => {
  it("Attempt X of Y only on retries, never above the maximum (F14, A-T26)", () => {
    expect(attemptText({ event: "progress", step: "generating_component", attempt: 1, max_attempts: 3 })).toBeNull();
    expect(attemptText({ event: "progress", step: "retrying", attempt: 2, max_attempts: 3 })).toBe("Attempt 2 of 3");
    expect(attemptText({ event: "progress", step: "retrying", attempt: 5, max_attempts: 3 })).toBe("Attempt 3 of 3");
    expect(stepText({ event: "progress", step: "validating", attempt: 1, max_attempts: 3 })).toBe("Checking the code");
  });

  it("the usage badge in ms and the run metrics line (F19, F21)", () => {
    expect(usageText({ input_tokens: 1200, output_tokens: 30, total_tokens: 1230 }, 1.2345)).toBe("1,200 in · 30 out · 1,230 tokens · 1,235 ms");
    expect(usageText(undefined, undefined)).toBe("0 in · 0 out · 0 tokens · 0 ms");
    expect(runMetricsText({ duration_seconds: 0.5, input_tokens: 1, output_tokens: 2, total_tokens: 3 })).toBe("ran in 0.50 s · 3 tokens");
  });

  it("a validated component gets the card; the fallback needs the generation steps and a Component class (F17)", () => {
    expect(componentOf(msg({ complete: done({ validated: true, class_name: "Up", component_code: "x" }) }))).toEqual({ className: "Up", code: "x" });
    const text = "Here:\n```python\nclass Rev(Component):\n    pass\n```";
    expect(componentOf(msg({ text, complete: done({}) }))).toBeNull(); // Q&A with example code: no card (F13)
    expect(componentOf(msg({ text, steps: ["generating_component", "extracting_code"], complete: done({}) }))).toEqual({ className: "Rev", code: "class Rev(Component):\n    pass\n" });
  });

  it("a failed generation is a failure card, not a component card (F16)", () => {
    const m = msg({ complete: done({ validated: false, class_name: "X", component_code: "bad", validation_attempts: 3, error: "boom" }) });
    expect(failedComponent(m)).toBe(true);
    expect(failedComponent(msg({ complete: done({}) }))).toBe(false);
  });

  it("slash hints while the text starts with '/'", () => {
    expect(slashMatches("/sk").map((c) => c.command)).toEqual(["/skip-all"]);
    expect(slashMatches("/")).toHaveLength(1);
    expect(slashMatches("hello /skip-all")).toEqual([]);
    expect(slashMatches("/nothing")).toEqual([]);
  });

  it("file names and sizes; the preview lays out flows without positions left to right", () => {
    expect(baseName("docs/a/readme.md")).toBe("readme.md");
    expect(fileSize(2048)).toBe("2.0 KB");
    const at = layoutOf({ nodes: [{ id: "a", type: "start" }, { id: "b", type: "output" }], edges: [{ source: "a", target: "b" }] });
    expect(at.get("b")!.x).toBeGreaterThan(at.get("a")!.x);
  });
});
