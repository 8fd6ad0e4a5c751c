/**
 * Auto-layout: a layered (Sugiyama-style) layout small enough to keep here — longest-path layers
 * left to right, a few barycenter sweeps to reduce crossings. O(V + E) per sweep.
 */
import type { FlowDocument, Position } from "../types";

export const LAYER_GAP = 260;
export const ROW_GAP = 110;

export function layeredLayout(doc: FlowDocument): Record<string, Position> {
  const idsList = doc.nodes.map((n) => n.id);
  const known = new Set(idsList);
  const succ = new Map<string, string[]>(idsList.map((id) => [id, []]));
  const pred = new Map<string, string[]>(idsList.map((id) => [id, []]));
  const indeg = new Map<string, number>(idsList.map((id) => [id, 0]));
  for (const e of doc.edges) {
    if (!known.has(e.source) || !known.has(e.target) || e.source === e.target) continue;
    succ.get(e.source)!.push(e.target);
    pred.get(e.target)!.push(e.source);
    indeg.set(e.target, indeg.get(e.target)! + 1);
  }
  // Longest-path layering over a topological order (nodes left on a cycle go to layer 0).
  const layer = new Map<string, number>();
  const queue = idsList.filter((id) => indeg.get(id) === 0);
  const deg = new Map(indeg);
  for (let i = 0; i < queue.length; i++) {
    const n = queue[i];
    if (!layer.has(n)) layer.set(n, 0);
    for (const t of succ.get(n)!) {
      layer.set(t, Math.max(layer.get(t) ?? 0, layer.get(n)! + 1));
      deg.set(t, deg.get(t)! - 1);
      if (deg.get(t) === 0) queue.push(t);
    }
  }
  for (const id of idsList) if (!layer.has(id)) layer.set(id, 0);
  const layers: string[][] = [];
  for (const id of idsList) {
    const l = layer.get(id)!;
    (layers[l] ??= []).push(id);
  }
  const order = new Map<string, number>();
  const setOrder = () => layers.forEach((ids) => ids?.forEach((id, i) => order.set(id, i)));
  setOrder();
  const bary = (id: string, nbrs: Map<string, string[]>) => {
    const list = nbrs.get(id)!;
    if (!list.length) return order.get(id)!;
    return list.reduce((s, x) => s + order.get(x)!, 0) / list.length;
  };
  for (let sweep = 0; sweep < 4; sweep++) {
    const down = sweep % 2 === 0;
    const range = down ? layers.map((_, i) => i) : layers.map((_, i) => layers.length - 1 - i);
    for (const i of range) {
      const ids = layers[i];
      if (!ids) continue;
      const nbrs = down ? pred : succ;
      const key = new Map(ids.map((id) => [id, bary(id, nbrs)]));
      ids.sort((a, b) => key.get(a)! - key.get(b)!);
      ids.forEach((id, j) => order.set(id, j));
    }
  }
  const out: Record<string, Position> = {};
  layers.forEach((ids, l) => {
    if (!ids) return;
    const offset = ((ids.length - 1) * ROW_GAP) / 2;
    ids.forEach((id, i) => {
      out[id] = { x: l * LAYER_GAP, y: i * ROW_GAP - offset + 300 };
    });
  });
  return out;
}

/** Positions for nodes that have none (imported documents often omit them). */
export function fillMissingPositions(doc: FlowDocument): FlowDocument {
  if (doc.nodes.every((n) => n.position)) return doc;
  const auto = layeredLayout(doc);
  return { ...doc, nodes: doc.nodes.map((n) => (n.position ? n : { ...n, position: auto[n.id] })) };
}
