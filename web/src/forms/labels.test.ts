import { describe, expect, it } from "vitest";
import types from "../test/node-types.fixture.json";
import type { NodeType } from "../types";
import { formatDuration, parseDuration } from "./duration";
import { autoTitle, humanLabel, isDurationField, itemLabel, singular } from "./labels";
import { describeSchema } from "./schema";

const byName = new Map((types as NodeType[]).map((t) => [t.name, t]));

describe("labels people read", () => {
  it("rebuilds pydantic's automatic titles from the key, units in brackets", () => {
    expect(autoTitle("timeout_s")).toBe("Timeout S");
    expect(humanLabel("timeout_s", "Timeout S")).toBe("Timeout (s)");
    expect(humanLabel("timeout_s", "Timeout S", true)).toBe("Timeout");
    expect(humanLabel("memory_mb", "Memory Mb")).toBe("Memory (MB)");
    expect(humanLabel("max_response_bytes")).toBe("Max response (bytes)");
    expect(humanLabel("url")).toBe("URL");
    expect(humanLabel("input_param", "Input Param")).toBe("Input param");
    // a title a person wrote stays, minus a seconds unit the duration input shows itself
    expect(humanLabel("timeout_s", "Timeout (s)", true)).toBe("Timeout");
    expect(humanLabel("fail_on_status", "Fail on HTTP error")).toBe("Fail on HTTP error");
  });

  it("names list items by what they are or by their content", () => {
    expect(singular("Headers")).toBe("Header");
    expect(singular("Categories")).toBe("Category");
    expect(singular("Cases")).toBe("Case");
    expect(singular("When")).toBe("Condition");
    expect(singular("Actions")).toBe("Action");
    expect(singular("Flows as tools")).toBe("Flow");
    expect(singular("Query parameters")).toBe("Query parameter");
    expect(itemLabel("Cases", 0, { when: [] })).toBe("Case 1");
    expect(itemLabel("Categories", 1, { name: "billing" })).toBe("Category 2: billing");
    expect(itemLabel("Actions", 2, "approve")).toBe("Action 3");
  });

  it("marks seconds fields as durations", () => {
    expect(isDurationField("timeout_s", {})).toBe(true);
    expect(isDurationField("backoff_s", { title: "Backoff (s)" })).toBe(true);
    expect(isDurationField("memory_mb", {})).toBe(false);
    expect(isDurationField("wait", { format: "duration" })).toBe(true);
    const code = describeSchema(byName.get("code")!.config_schema);
    const timeout = code.find((f) => f.key === "timeout_s")!;
    expect(timeout).toMatchObject({ widget: "duration", label: "Timeout" });
    expect(code.find((f) => f.key === "memory_mb")!.label).toBe("Memory (MB)");
    expect(code.find((f) => f.key === "code")).toMatchObject({ widget: "code", language: "python" });
    // a number or a template of one (the delay node): a duration that keeps templates
    const delay = describeSchema(byName.get("delay")!.config_schema)[0];
    expect(delay).toMatchObject({ kind: "number", widget: "duration", template: true, label: "Duration" });
    expect(singular("Script")).toBe("Step");
  });
});

describe("durations", () => {
  it("parses what people write", () => {
    expect(parseDuration("30")).toBe(30);
    expect(parseDuration("30 s")).toBe(30);
    expect(parseDuration("2 min")).toBe(120);
    expect(parseDuration("2m")).toBe(120);
    expect(parseDuration("1 h 30 min")).toBe(5400);
    expect(parseDuration("1.5h")).toBe(5400);
    expect(parseDuration("500 ms")).toBe(0.5);
    expect(parseDuration("soon")).toBeNull();
    expect(parseDuration("3 parsecs")).toBeNull();
    expect(parseDuration("")).toBeNull();
  });

  it("formats seconds back, round trip", () => {
    expect(formatDuration(30)).toBe("30 s");
    expect(formatDuration(120)).toBe("2 min");
    expect(formatDuration(90)).toBe("1 min 30 s");
    expect(formatDuration(3600)).toBe("1 h");
    expect(formatDuration(5400)).toBe("1 h 30 min");
    expect(formatDuration(0.5)).toBe("500 ms");
    expect(formatDuration(2.5)).toBe("2.5 s");
    for (const s of [0.25, 1, 10, 59, 61, 600, 7200, 86400]) expect(parseDuration(formatDuration(s))).toBe(s);
  });
});
