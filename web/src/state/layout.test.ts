import { describe, expect, it } from "vitest";
import type { FlowDocument } from "../types";
import { dagreLayout, fillMissingPositions, freeOffset, freePosition, LAYER_GAP, layeredLayout, NODE_H, NODE_W } from "./layout";

describe("auto-layout", () => {
  it("puts each node one layer right of its furthest parent", () => {
    const doc: FlowDocument = {
      nodes: ["a", "b", "c", "d"].map((id) => ({ id, type: "x" })),
      edges: [
        { source: "a", target: "b" },
        { source: "a", target: "c" },
        { source: "b", target: "d" },
        { source: "c", target: "d" },
        { source: "a", target: "d" },
      ],
    };
    const p = layeredLayout(doc);
    expect(p.a.x).toBe(0);
    expect(p.b.x).toBe(LAYER_GAP);
    expect(p.c.x).toBe(LAYER_GAP);
    expect(p.d.x).toBe(2 * LAYER_GAP);
    expect(p.b.y).not.toBe(p.c.y);
  });

  it("lays out a 200-node chain-of-fans without overlap", () => {
    const nodes = Array.from({ length: 200 }, (_, i) => ({ id: `n${i}`, type: "x" }));
    const edges = nodes.slice(1).map((n, i) => ({ source: `n${Math.floor(i / 3)}`, target: n.id }));
    const p = layeredLayout({ nodes, edges });
    const seen = new Set(Object.values(p).map((q) => `${q.x},${q.y}`));
    expect(seen.size).toBe(200);
  });

  it("fills only missing positions", () => {
    const doc: FlowDocument = { nodes: [{ id: "a", type: "x", position: { x: 7, y: 7 } }, { id: "b", type: "x" }], edges: [{ source: "a", target: "b" }] };
    const out = fillMissingPositions(doc);
    expect(out.nodes[0].position).toEqual({ x: 7, y: 7 });
    expect(out.nodes[1].position).toBeDefined();
    const full = fillMissingPositions(out);
    expect(full).toBe(out);
  });
});

describe("dagre auto-layout (lazy)", () => {
  it("places every node left to right along the edges", async () => {
    const doc: FlowDocument = {
      nodes: ["a", "b", "c"].map((id) => ({ id, type: "x" })),
      edges: [
        { source: "a", target: "b" },
        { source: "b", target: "c" },
      ],
    };
    const p = await dagreLayout(doc);
    expect(Object.keys(p).sort()).toEqual(["a", "b", "c"]);
    expect(p.a.x).toBeLessThan(p.b.x);
    expect(p.b.x).toBeLessThan(p.c.x);
  });
});

describe("free spots", () => {
  const nodes = [{ id: "a", type: "x", position: { x: 0, y: 0 } }];
  it("keeps a position nothing covers, moves one that overlaps", () => {
    expect(freePosition(nodes, { x: 600, y: 0 })).toEqual({ x: 600, y: 0 });
    const p = freePosition(nodes, { x: 10, y: 10 });
    expect(p).not.toEqual({ x: 10, y: 10 });
    expect(p.y >= NODE_H || p.y <= -NODE_H || p.x >= NODE_W || p.x <= -NODE_W).toBe(true);
  });
  it("pastes at an offset where no copy touches a node", () => {
    const off = freeOffset(nodes, nodes);
    expect(off.y).toBeGreaterThanOrEqual(NODE_H);
  });
});
