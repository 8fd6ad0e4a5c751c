import { describe, expect, it } from "vitest";
import { groupTypes } from "./editor/Palette";
import { hasInputs } from "./editor/RunDialog";
import { runDurationMs } from "./editor/SidePanels";
import { slugify } from "./pages/Library";
import { taskValues } from "./pages/TaskPage";
import { matchRoute } from "./router";
import types from "./test/node-types.fixture.json";
import type { NodeType, RunSummary } from "./types";

describe("palette", () => {
  it("groups the registry by category, triggers first, and searches names and descriptions", () => {
    const groups = groupTypes(types as NodeType[], "");
    expect(groups[0][0]).toBe("triggers");
    expect(groups.flatMap(([, l]) => l).length).toBe((types as NodeType[]).length);
    const found = groupTypes(types as NodeType[], "case");
    expect(found.flatMap(([, l]) => l.map((t) => t.name))).toContain("switch");
    expect(groupTypes(types as NodeType[], "zzzz-nothing")).toEqual([]);
  });
});

describe("routes", () => {
  it("maps paths to screens", () => {
    expect(matchRoute("/")).toEqual({ name: "library" });
    expect(matchRoute("/flows/a%20b")).toEqual({ name: "editor", flowId: "a b" });
    expect(matchRoute("/runs/r1/")).toEqual({ name: "run", runId: "r1" });
    expect(matchRoute("/tasks/tok")).toEqual({ name: "task", token: "tok" });
    expect(matchRoute("/x/y/z").name).toBe("not_found");
  });
});

describe("small helpers", () => {
  it("slugifies flow names into ids", () => {
    expect(slugify("My First Flow!")).toBe("my-first-flow");
    expect(slugify("   ")).toBe("flow");
  });

  it("converts human-task values to what the server validates", () => {
    const fields = [
      { name: "amount", type: "number" as const },
      { name: "comment", type: "text" as const, required: false },
      { name: "ok", type: "boolean" as const },
    ];
    expect(taskValues(fields, { amount: "12.5", comment: "", ok: false })).toEqual({ amount: 12.5, ok: false });
    expect(taskValues(fields, { amount: "abc" })).toEqual({ amount: "abc" }); // the server says why
  });

  it("knows when a flow declares inputs and how long a run took", () => {
    expect(hasInputs({ type: "object", properties: { q: {} } })).toBe(true);
    expect(hasInputs({ type: "object" })).toBe(false);
    expect(hasInputs(undefined)).toBe(false);
    const r = { started_at: 10, finished_at: 12.5, status: "completed" } as RunSummary;
    expect(runDurationMs(r)).toBe(2500);
    expect(runDurationMs({ ...r, duration_ms: 7 })).toBe(7);
    expect(runDurationMs({ ...r, started_at: null })).toBeNull();
  });
});
