/**
 * Layout: the "Auto-layout" button uses dagre (@dagrejs/dagre, imported lazily: it stays out of
 * the initial JavaScript); a small layered layout of our own places imported nodes that come
 * without positions (synchronously, at load); `freePosition` / `freeOffset` keep drops and pastes
 * off the nodes already there.
 */
import type { FlowDocument, NodeSpec, Position } from "../types";

/** A node card's size on the canvas before it is measured (14rem x ~5rem at 14 px). */
export const NODE_W = 196;
export const NODE_H = 76;
const MARGIN = 16;

export type Sizes = Record<string, { width: number; height: number }>;

/** Positions from dagre (left to right), top-left corners as the canvas wants them. */
export async function dagreLayout(doc: FlowDocument, sizes: Sizes = {}): Promise<Record<string, Position>> {
  const { default: dagre } = await import("@dagrejs/dagre");
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 40, ranksep: 70, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  const known = new Set<string>();
  for (const n of doc.nodes) {
    const s = sizes[n.id] ?? { width: NODE_W, height: NODE_H };
    g.setNode(n.id, { width: s.width, height: s.height });
    known.add(n.id);
  }
  doc.edges.forEach((e, i) => {
    if (known.has(e.source) && known.has(e.target) && e.source !== e.target) g.setEdge(e.source, e.target, {}, `e${i}`);
  });
  dagre.layout(g);
  const out: Record<string, Position> = {};
  for (const id of known) {
    const n = g.node(id) as { x: number; y: number; width: number; height: number };
    out[id] = { x: Math.round(n.x - n.width / 2), y: Math.round(n.y - n.height / 2) };
  }
  return out;
}

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

function boxOf(n: NodeSpec, sizes: Sizes): Box | null {
  if (!n.position) return null;
  const s = sizes[n.id];
  return { x: n.position.x, y: n.position.y, w: s?.width ?? NODE_W, h: s?.height ?? NODE_H };
}

function overlaps(a: Box, b: Box): boolean {
  return a.x < b.x + b.w + MARGIN && b.x < a.x + a.w + MARGIN && a.y < b.y + b.h + MARGIN && b.y < a.y + a.h + MARGIN;
}

/** `want`, or the nearest free spot below / right of it where a new card touches no node. */
export function freePosition(nodes: NodeSpec[], want: Position, sizes: Sizes = {}): Position {
  const boxes = nodes.map((n) => boxOf(n, sizes)).filter((b): b is Box => b !== null);
  const free = (p: Position) => !boxes.some((b) => overlaps(b, { x: p.x, y: p.y, w: NODE_W, h: NODE_H }));
  const dy = NODE_H + MARGIN + 8;
  const dx = NODE_W + MARGIN + 8;
  for (let r = 0; r < 60; r++) {
    for (const p of [
      { x: want.x, y: want.y + r * dy },
      { x: want.x, y: want.y - r * dy },
      { x: want.x + r * dx, y: want.y },
      { x: want.x + r * dx, y: want.y + r * dy },
    ])
      if (free(p)) return p;
  }
  return want;
}

/** The offset (a multiple of `step`) at which pasted nodes touch none of the nodes there. */
export function freeOffset(nodes: NodeSpec[], pasted: NodeSpec[], step: Position = { x: 40, y: 40 }, sizes: Sizes = {}): Position {
  const boxes = nodes.map((n) => boxOf(n, sizes)).filter((b): b is Box => b !== null);
  const mine = pasted.map((n) => boxOf(n, sizes)).filter((b): b is Box => b !== null);
  for (let k = 1; k < 200; k++) {
    const off = { x: step.x * k, y: step.y * k };
    if (!mine.some((m) => boxes.some((b) => overlaps(b, { ...m, x: m.x + off.x, y: m.y + off.y })))) return off;
  }
  return step;
}

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
