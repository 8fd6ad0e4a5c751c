import { describe, expect, it } from "vitest";
import { addTask, taskFor } from "./buildTasks";
import type { BuildTask, FlowUpdate } from "./types";

describe("build tasks (F37)", () => {
  it("M-S38: add, add, connect, configure give 4 rows in order with their labels", () => {
    const updates: FlowUpdate[] = [
      { action: "add_component", node: { id: "ChatInput-abc", type: "ChatInput" } },
      { action: "add_component", node: { id: "Agent-xyz", type: "Agent" } },
      { action: "connect", edge: { source: "ChatInput-abc", target: "Agent-xyz" } },
      { action: "configure", component_id: "Agent-xyz", params: { temperature: 0 } },
    ];
    const tasks = updates.reduce<BuildTask[]>(addTask, []);
    expect(tasks.map((t) => [t.action, t.label])).toEqual([
      ["add_component", "Added ChatInput-abc"],
      ["add_component", "Added Agent-xyz"],
      ["connect", "Wired ChatInput-abc → Agent-xyz"],
      ["configure", "Configured Agent-xyz"],
    ]);
    expect(tasks[2]).toMatchObject({ sourceId: "ChatInput-abc", targetId: "Agent-xyz" });
  });

  it("M-S39: the same add sent twice gives one row", () => {
    const add: FlowUpdate = { action: "add_component", node: { id: "ChatInput-abc", type: "ChatInput" } };
    const once = addTask([], add);
    expect(addTask(once, add)).toBe(once);
  });

  it("removal rows", () => {
    expect(taskFor({ action: "remove_component", component_id: "llm" })).toEqual({ action: "remove_component", componentId: "llm", label: "Removed llm" });
  });

  it("connections between other nodes are separate rows", () => {
    let t = addTask([], { action: "connect", edge: { source: "a", target: "b" } });
    t = addTask(t, { action: "connect", edge: { source: "c", target: "b" } });
    expect(t.length).toBe(2);
  });

  it("M-S40: set_flow and edit_field never become rows (nor plans, outputs, modes)", () => {
    const none: FlowUpdate[] = [
      { action: "set_flow", flow: { nodes: [], edges: [] } },
      { action: "edit_field", id: "1", component_id: "a", component_type: "t", field: "f", old_value: 1, new_value: 2, patch: [] },
      { action: "propose_plan", markdown: "m" },
      { action: "select_output", component_id: "a", output_name: "o" },
      { action: "set_connection_mode", component_id: "a", enabled: true },
    ];
    for (const u of none) {
      expect(taskFor(u)).toBeNull();
      const empty: BuildTask[] = [];
      expect(addTask(empty, u)).toBe(empty);
    }
  });
});
