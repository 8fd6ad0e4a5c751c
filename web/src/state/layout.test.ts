import { describe, expect, it } from "vitest";
import type { FlowDocument } from "../types";
import { fillMissingPositions, LAYER_GAP, layeredLayout } from "./layout";

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
