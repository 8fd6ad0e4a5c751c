import { describe, expect, it } from "vitest";
import { NODE_H, NODE_W } from "../state/layout";
import type { FlowDocument } from "../types";
import { freshId, idPrefix, MERGE_GAP, mergeFlow, mergeInputs, randomSuffix, renameRefs, replaceFlow } from "./merge";

function canvas(): FlowDocument {
  return {
    schema: "plait/flow@1",
    id: "flow-1",
    name: "My flow",
    inputs: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    nodes: [
      { id: "start", type: "start", position: { x: 0, y: 100 } },
      { id: "out", type: "output", config: { name: "result", value: "{{start.text}}" }, position: { x: 300, y: 100 } },
    ],
    edges: [{ id: "e1", source: "start", target: "out" }],
  };
}

function proposal(): FlowDocument {
  return {
    schema: "plait/flow@1",
    id: "proposal-id",
    name: "Reverser",
    inputs: { type: "object", properties: { text: { type: "string", default: "x" }, lang: { type: "string" } }, required: ["lang"] },
    nodes: [
      { id: "start", type: "start", position: { x: 10, y: 10 } },
      { id: "rev", type: "component", config: { component: "Reverse", inputs: { text: "{{ start.text }}" } }, position: { x: 250, y: 10 } },
      { id: "out", type: "output", config: { name: "result", value: "{{rev}}" }, requires: ["rev"], position: { x: 500, y: 10 } },
    ],
    edges: [
      { id: "e1", source: "start", target: "rev" },
      { source: "rev", target: "out", target_port: "in" },
    ],
  };
}

const seq = (() => {
  let i = 0;
  return () => ((i++ * 7) % 36) / 36;
})();

describe("mergeFlow (Add to canvas)", () => {
  it("M-T41: Add keeps the existing nodes and puts the new flow to the right, with no id collisions", () => {
    const { doc, idMap } = mergeFlow(canvas(), proposal());
    expect(doc.nodes.slice(0, 2)).toEqual(canvas().nodes);
    expect(doc.nodes.length).toBe(5);
    const ids = doc.nodes.map((n) => n.id.toLowerCase());
    expect(new Set(ids).size).toBe(ids.length);
    // "start" and "out" clashed; "rev" did not
    expect(Object.keys(idMap).sort()).toEqual(["out", "start"]);
    expect(idMap.start).toMatch(/^start-[0-9a-z]{6}$/);
    expect(idMap.out).toMatch(/^out-[0-9a-z]{6}$/);
    expect(doc.nodes.find((n) => n.id === "rev")).toBeTruthy();
    // placed right of the canvas's bounding box (right edge 300 + NODE_W) with the gap, top-aligned
    const added = doc.nodes.slice(2);
    const minX = Math.min(...added.map((n) => n.position!.x));
    expect(minX).toBe(300 + NODE_W + MERGE_GAP);
    expect(Math.min(...added.map((n) => n.position!.y))).toBe(100);
    // relative layout kept
    expect(added[1].position!.x - added[0].position!.x).toBe(240);
  });

  it("F26: the canvas keeps its id, name and schema", () => {
    const { doc } = mergeFlow(canvas(), proposal());
    expect(doc.id).toBe("flow-1");
    expect(doc.name).toBe("My flow");
    expect(doc.schema).toBe("plait/flow@1");
  });

  it("M-T46: no ghost edges: the proposal's edges follow the renamed ids", () => {
    const { doc, idMap } = mergeFlow(canvas(), proposal());
    const ids = new Set(doc.nodes.map((n) => n.id));
    for (const e of doc.edges) {
      expect(ids.has(e.source)).toBe(true);
      expect(ids.has(e.target)).toBe(true);
    }
    expect(doc.edges.slice(1)).toEqual([
      expect.objectContaining({ source: idMap.start, target: "rev" }),
      { source: "rev", target: idMap.out, target_port: "in" },
    ]);
    // the canvas's own edge is untouched
    expect(doc.edges[0]).toEqual({ id: "e1", source: "start", target: "out" });
  });

  it("M-T46: edge ids that clash are re-suffixed", () => {
    const { doc } = mergeFlow(canvas(), proposal());
    const edgeIds = doc.edges.map((e) => e.id).filter(Boolean);
    expect(new Set(edgeIds).size).toBe(edgeIds.length);
    expect(doc.edges[1].id).toMatch(/^e1-[0-9a-z]{6}$/);
  });

  it("M-T46: references, requires and ref fields follow the renamed ids", () => {
    const { doc, idMap } = mergeFlow(canvas(), proposal());
    const rev = doc.nodes.find((n) => n.id === "rev")!;
    expect(rev.config!.inputs.text).toBe(`{{ ${idMap.start}.text }}`);
    const out = doc.nodes.find((n) => n.id === idMap.out)!;
    expect(out.requires).toEqual(["rev"]);
    // the canvas's own references are not touched
    expect(doc.nodes[1].config!.value).toBe("{{start.text}}");
  });

  it("M-T42: Add twice gives two copies that do not overlap", () => {
    const once = mergeFlow(canvas(), proposal()).doc;
    const twice = mergeFlow(once, proposal()).doc;
    expect(twice.nodes.length).toBe(8);
    const ids = twice.nodes.map((n) => n.id.toLowerCase());
    expect(new Set(ids).size).toBe(8);
    const boxes = twice.nodes.map((n) => ({ x: n.position!.x, y: n.position!.y }));
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i];
        const b = boxes[j];
        const overlap = a.x < b.x + NODE_W && b.x < a.x + NODE_W && a.y < b.y + NODE_H && b.y < a.y + NODE_H;
        expect(overlap, `${twice.nodes[i].id} vs ${twice.nodes[j].id}`).toBe(false);
      }
    // "rev" clashed the second time
    expect(twice.nodes.filter((n) => n.id.startsWith("rev")).length).toBe(2);
  });

  it("M-T44: on an empty canvas Add gives the proposal as it is (the same result as Replace)", () => {
    const empty: FlowDocument = { schema: "plait/flow@1", id: "flow-1", name: "Empty", nodes: [], edges: [] };
    const added = mergeFlow(empty, proposal());
    expect(added.idMap).toEqual({});
    expect(added.doc.nodes).toEqual(proposal().nodes);
    expect(added.doc.edges).toEqual(proposal().edges);
    expect(added.doc).toEqual(replaceFlow(empty, proposal()));
    expect(added.doc.id).toBe("flow-1");
  });

  it("ids are case-insensitive in plait: 'Start' clashes with 'start'", () => {
    const c = canvas();
    c.nodes[0].id = "Start";
    c.edges[0].source = "Start";
    const { idMap } = mergeFlow(c, proposal());
    expect(idMap.start).toMatch(/^start-/);
  });

  it("the canvas's measured sizes push the merged flow further right", () => {
    const { doc } = mergeFlow(canvas(), proposal(), { out: { width: 500, height: 90 } });
    expect(Math.min(...doc.nodes.slice(2).map((n) => n.position!.x))).toBe(300 + 500 + MERGE_GAP);
  });

  it("proposal nodes without positions are laid out, then placed right", () => {
    const p = proposal();
    for (const n of p.nodes) delete n.position;
    const { doc } = mergeFlow(canvas(), p);
    for (const n of doc.nodes.slice(2)) expect(n.position!.x).toBeGreaterThanOrEqual(300 + NODE_W + MERGE_GAP);
  });

  it("the canvas's inputs schema is kept and the proposal's fields are added", () => {
    const { doc } = mergeFlow(canvas(), proposal());
    expect(doc.inputs).toEqual({
      type: "object",
      properties: { text: { type: "string" }, lang: { type: "string" } },
      required: ["text", "lang"],
    });
    expect(mergeInputs(undefined, { type: "object", properties: { a: {} } })).toEqual({ type: "object", properties: { a: {} } });
    expect(mergeInputs({ type: "object" }, undefined)).toEqual({ type: "object" });
  });

  it("an edge of the proposal naming a node it lacks is dropped, never a ghost", () => {
    const p = proposal();
    p.edges.push({ source: "rev", target: "nowhere" });
    const { doc } = mergeFlow(canvas(), p);
    expect(doc.edges.some((e) => e.target === "nowhere")).toBe(false);
  });

  it("the inputs are not mutated", () => {
    const c = canvas();
    const p = proposal();
    const cj = JSON.stringify(c);
    const pj = JSON.stringify(p);
    mergeFlow(c, p);
    replaceFlow(c, p);
    expect(JSON.stringify(c)).toBe(cj);
    expect(JSON.stringify(p)).toBe(pj);
  });
});

describe("replaceFlow (Replace canvas)", () => {
  it("M-T43: Replace clears the canvas; only the proposal remains, under the canvas's id and name", () => {
    const doc = replaceFlow(canvas(), proposal());
    expect(doc.nodes).toEqual(proposal().nodes);
    expect(doc.edges).toEqual(proposal().edges);
    expect(doc.inputs).toEqual(proposal().inputs);
    expect(doc.id).toBe("flow-1");
    expect(doc.name).toBe("My flow");
  });

  it("nodes without positions get one", () => {
    const p = proposal();
    for (const n of p.nodes) delete n.position;
    expect(replaceFlow(canvas(), p).nodes.every((n) => n.position)).toBe(true);
  });
});

describe("id helpers", () => {
  it("F26: a fresh id keeps the <type>- prefix and adds a 6-character base-36 suffix", () => {
    expect(idPrefix("ChatInput-abc12", "ChatInput")).toBe("ChatInput-");
    expect(idPrefix("start", "start")).toBe("start-");
    expect(idPrefix("my-node-x", "message")).toBe("my-node-");
    const taken = new Set(["start"]);
    const id = freshId("start", taken, "start", seq);
    expect(id).toMatch(/^start-[0-9a-z]{6}$/);
    expect(taken.has(id)).toBe(true);
    expect(randomSuffix()).toMatch(/^[0-9a-z]{6}$/);
  });

  it("a fresh id never repeats a taken one", () => {
    const fixed = () => 0; // always "000000" first
    const taken = new Set(["a-000000"]);
    let calls = 0;
    const id = freshId("a", taken, undefined, () => (calls++ < 6 ? fixed() : 0.5));
    expect(id).not.toBe("a-000000");
  });

  it("renameRefs rewrites templates and ref fields, not look-alikes", () => {
    const map = { start: "start-x1", a: "a-2" };
    expect(renameRefs({ t: "{{start}} {{start.text}} {{ start | upper }} {{startle}} {{inputs.start}}" }, map)).toEqual({
      t: "{{start-x1}} {{start-x1.text}} {{ start-x1 | upper }} {{startle}} {{inputs.start}}",
    });
    expect(renameRefs({ when: [{ ref: "a.x", op: "eq" }, { ref: "ab.x" }] }, map)).toEqual({ when: [{ ref: "a-2.x", op: "eq" }, { ref: "ab.x" }] });
    expect(renameRefs("{{a[0]}}", map)).toBe("{{a-2[0]}}");
    expect(renameRefs(5, map)).toBe(5);
  });
});
