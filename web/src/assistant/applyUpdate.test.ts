import { describe, expect, it } from "vitest";
import { NODE_W } from "../state/layout";
import type { FlowDocument } from "../types";
import { applyFlowUpdate, applyProposal, besidePosition, remapUpdate, replayProposal } from "./applyUpdate";
import type { FlowProposal, FlowUpdate } from "./types";

function doc(): FlowDocument {
  return {
    schema: "plait/flow@1",
    id: "f",
    name: "F",
    nodes: [
      { id: "start", type: "start", position: { x: 0, y: 0 } },
      { id: "llm", type: "llm", config: { model: "gpt-4o", temperature: 0.2 }, position: { x: 300, y: 0 } },
    ],
    edges: [{ source: "start", target: "llm" }],
  };
}

function editField(patch: Partial<Extract<FlowUpdate, { action: "edit_field" }>> = {}): FlowUpdate {
  return {
    action: "edit_field",
    id: "e1",
    component_id: "llm",
    component_type: "llm",
    field: "system",
    old_value: "",
    new_value: "You are a bakery assistant",
    patch: [{ op: "replace", path: "/nodes/7/config/system", value: "ignored" }],
    ...patch,
  };
}

describe("applyFlowUpdate (F22)", () => {
  it("add_component adds the node; without a position it goes beside the others", () => {
    const d = applyFlowUpdate(doc(), { action: "add_component", node: { id: "out", type: "output", config: { value: "{{llm}}" } } });
    const out = d.nodes.find((n) => n.id === "out")!;
    expect(out.config).toEqual({ value: "{{llm}}" });
    expect(out.position!.x).toBeGreaterThanOrEqual(300 + NODE_W);
    expect(out.position!.y).toBe(0);
  });

  it("add_component keeps a given position", () => {
    const d = applyFlowUpdate(doc(), { action: "add_component", node: { id: "out", type: "output", position: { x: 5, y: 500 } } });
    expect(d.nodes[2].position).toEqual({ x: 5, y: 500 });
  });

  it("add_component on an empty canvas goes to the origin", () => {
    const empty: FlowDocument = { nodes: [], edges: [] };
    expect(applyFlowUpdate(empty, { action: "add_component", node: { id: "a", type: "start" } }).nodes[0].position).toEqual({ x: 0, y: 0 });
    expect(besidePosition(empty)).toEqual({ x: 0, y: 0 });
  });

  it("add_component with an id already on the canvas changes nothing", () => {
    const d = doc();
    expect(applyFlowUpdate(d, { action: "add_component", node: { id: "LLM", type: "llm" } })).toBe(d);
  });

  it("remove_component removes the node and its edges", () => {
    const d = applyFlowUpdate(doc(), { action: "remove_component", component_id: "llm" });
    expect(d.nodes.map((n) => n.id)).toEqual(["start"]);
    expect(d.edges).toEqual([]);
  });

  it("connect adds the edge (its id and non-default ports kept, default ports left out as the editor does)", () => {
    let d = applyFlowUpdate(doc(), { action: "add_component", node: { id: "out", type: "output", position: { x: 600, y: 0 } } });
    d = applyFlowUpdate(d, { action: "connect", edge: { id: "x1", source: "llm", source_port: "out", target: "out", target_port: "in" } });
    expect(d.edges[1]).toEqual({ id: "x1", source: "llm", target: "out" });
    d = applyFlowUpdate(d, { action: "connect", edge: { source: "start", source_port: "text", target: "out", target_port: "extra" } });
    expect(d.edges[2]).toEqual({ source: "start", source_port: "text", target: "out", target_port: "extra" });
  });

  it("connect of an edge already there, a cycle, or an unknown end changes nothing", () => {
    const d = doc();
    expect(applyFlowUpdate(d, { action: "connect", edge: { source: "start", source_port: "out", target: "llm" } })).toBe(d);
    expect(applyFlowUpdate(d, { action: "connect", edge: { source: "llm", target: "start" } })).toBe(d);
    expect(applyFlowUpdate(d, { action: "connect", edge: { source: "ghost", target: "llm" } })).toBe(d);
  });

  it("configure merges the params into the config", () => {
    const d = applyFlowUpdate(doc(), { action: "configure", component_id: "llm", params: { temperature: 0.9, prompt: "hi" } });
    expect(d.nodes[1].config).toEqual({ model: "gpt-4o", temperature: 0.9, prompt: "hi" });
  });

  it("configure with a null value removes the field (its default applies), as on the server", () => {
    const d = applyFlowUpdate(doc(), { action: "configure", component_id: "llm", params: { temperature: null, prompt: "p" } });
    expect(d.nodes[1].config).toEqual({ model: "gpt-4o", prompt: "p" });
  });

  it("edit_field sets config[field] on component_id, ignoring the patch's index path", () => {
    const d = applyFlowUpdate(doc(), editField());
    expect(d.nodes[1].config).toEqual({ model: "gpt-4o", temperature: 0.2, system: "You are a bakery assistant" });
  });

  it("set_flow replaces the graph and keeps the canvas's id", () => {
    const d = applyFlowUpdate(doc(), { action: "set_flow", flow: { id: "other", name: "P", nodes: [{ id: "a", type: "start", position: { x: 1, y: 1 } }], edges: [] } });
    expect(d.id).toBe("f");
    expect(d.nodes.map((n) => n.id)).toEqual(["a"]);
  });

  it("select_output, set_connection_mode and propose_plan leave the document unchanged", () => {
    const d = doc();
    expect(applyFlowUpdate(d, { action: "select_output", component_id: "llm", output_name: "text" })).toBe(d);
    expect(applyFlowUpdate(d, { action: "set_connection_mode", component_id: "llm", enabled: true })).toBe(d);
    expect(applyFlowUpdate(d, { action: "propose_plan", markdown: "x" })).toBe(d);
  });

  it("never throws on unknown ids or malformed updates: the document comes back unchanged", () => {
    const d = doc();
    const bad: any[] = [
      { action: "remove_component", component_id: "ghost" },
      { action: "configure", component_id: "ghost", params: { a: 1 } },
      { action: "configure", component_id: "llm", params: null },
      editField({ component_id: "ghost" }),
      { action: "add_component" },
      { action: "add_component", node: { type: "x" } },
      { action: "connect" },
      { action: "set_flow" },
      { action: "set_flow", flow: { nodes: "no" } },
      { action: "something_new" },
    ];
    for (const u of bad) expect(applyFlowUpdate(d, u as FlowUpdate)).toBe(d);
  });
});

function proposal(tail: FlowUpdate[] = []): FlowProposal {
  return {
    flow: {
      name: "P",
      nodes: [
        { id: "start", type: "start", position: { x: 0, y: 0 } },
        { id: "out", type: "output", position: { x: 300, y: 0 } },
      ],
      edges: [{ source: "start", target: "out" }],
    },
    name: "P",
    nodeCount: 2,
    edgeCount: 1,
    status: "pending",
    tail,
  };
}

describe("proposal replay (F23)", () => {
  it("M-S13: replay order is the set_flow first, then the tail in arrival order", () => {
    const tail: FlowUpdate[] = [
      { action: "add_component", node: { id: "x", type: "text" } },
      { action: "configure", component_id: "x", params: { text: "a" } },
    ];
    const p = proposal(tail);
    const order = replayProposal(p);
    expect(order[0]).toEqual({ action: "set_flow", flow: p.flow });
    expect(order.slice(1)).toEqual(tail);
  });

  it("M-S2 / M-S13: Replace then the buffered add: the canvas equals the preview plus the tail, with a warning", () => {
    const r = applyProposal(doc(), proposal([{ action: "add_component", node: { id: "x", type: "text" } }, { action: "connect", edge: { source: "out", target: "x" } }]), "replace");
    expect(r.doc.id).toBe("f");
    expect(r.doc.nodes.map((n) => n.id)).toEqual(["start", "out", "x"]);
    expect(r.doc.edges.length).toBe(2);
    expect(r.warning).toMatch(/Replayed 2 buffered canvas changes/);
  });

  it("no tail, no warning; replace is the default mode", () => {
    const r = applyProposal(doc(), proposal());
    expect(r.warning).toBeNull();
    expect(r.doc.nodes.map((n) => n.id)).toEqual(["start", "out"]);
  });

  it("Add: the tail follows the ids the merge renamed (no ghost edges)", () => {
    const tail: FlowUpdate[] = [
      { action: "configure", component_id: "start", params: { note: "n" } },
      { action: "add_component", node: { id: "llm", type: "llm" } }, // clashes with the canvas's llm
      { action: "connect", edge: { source: "out", target: "llm" } },
    ];
    const r = applyProposal(doc(), proposal(tail), "add");
    const newStart = r.idMap.start;
    expect(newStart).toMatch(/^start-[0-9a-z]{6}$/);
    expect(r.doc.nodes.find((n) => n.id === newStart)!.config).toEqual({ note: "n" });
    const newLlm = r.idMap.llm;
    expect(newLlm).toMatch(/^llm-[0-9a-z]{6}$/);
    expect(r.doc.nodes.length).toBe(2 + 2 + 1);
    expect(r.doc.edges).toContainEqual({ source: "out", target: newLlm });
    const ids = new Set(r.doc.nodes.map((n) => n.id));
    for (const e of r.doc.edges) expect(ids.has(e.source) && ids.has(e.target)).toBe(true);
    // the canvas's own llm is untouched
    expect(r.doc.nodes[1]).toEqual(doc().nodes[1]);
  });

  it("remapUpdate renames component ids and edge ends", () => {
    const map = { a: "a-1" };
    expect(remapUpdate({ action: "remove_component", component_id: "a" }, map)).toEqual({ action: "remove_component", component_id: "a-1" });
    expect(remapUpdate({ action: "connect", edge: { source: "a", target: "b" } }, map)).toEqual({ action: "connect", edge: { source: "a-1", target: "b" } });
    expect(remapUpdate({ action: "add_component", node: { id: "a", type: "t" } }, map)).toEqual({ action: "add_component", node: { id: "a-1", type: "t" } });
    const plan: FlowUpdate = { action: "propose_plan", markdown: "m" };
    expect(remapUpdate(plan, map)).toBe(plan);
  });
});
