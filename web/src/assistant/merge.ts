/**
 * Putting a proposed flow on the canvas (F26, F28): **Add** merges it beside what is there,
 * **Replace** swaps the graph. Both return a new document; the panel commits it as one undo step.
 *
 * A merge must never break the canvas: node ids are case-insensitive in plait, so a proposal id
 * that clashes with a canvas id (or with one already given out) gets a fresh one, keeping its
 * prefix and adding a 6-character base-36 suffix; the proposal's edges, `requires` and `{{id...}}`
 * references follow the new ids (no ghost edges), clashing edge ids are re-suffixed, and the new
 * nodes go to the right of the canvas's bounding box with a fixed gap, so Add twice gives two
 * copies side by side.
 */
import { fillMissingPositions, NODE_H, NODE_W, type Sizes } from "../state/layout";
import type { EdgeSpec, FlowDocument, JsonSchema, NodeSpec } from "../types";

/** The horizontal gap between the canvas and a merged flow. */
export const MERGE_GAP = 120;
const SUFFIX_LEN = 6;

export interface MergeResult {
  doc: FlowDocument;
  /** Proposal id -> id on the canvas, for the ids that changed. */
  idMap: Record<string, string>;
}

/** A fresh 6-character base-36 suffix. */
export function randomSuffix(random: () => number = Math.random): string {
  let s = "";
  for (let i = 0; i < SUFFIX_LEN; i++) s += Math.floor(random() * 36).toString(36);
  return s;
}

/** What a renamed id keeps: `<type>-` for `<type>-xxxx` ids, else the id's own stem, plus "-". */
export function idPrefix(id: string, type?: string): string {
  if (type && id.toLowerCase().startsWith(`${type.toLowerCase()}-`)) return id.slice(0, type.length + 1);
  const stem = id.includes("-") ? id.slice(0, id.lastIndexOf("-")) : id;
  return `${(stem || type || "node").replace(/[\s{}@.]+/g, "_")}-`;
}

/** An id not in `taken` (lower-cased ids), with `id`'s prefix and a fresh suffix; adds it to `taken`. */
export function freshId(id: string, taken: Set<string>, type?: string, random: () => number = Math.random): string {
  const prefix = idPrefix(id, type);
  for (;;) {
    const next = `${prefix}${randomSuffix(random)}`;
    if (!taken.has(next.toLowerCase())) {
      taken.add(next.toLowerCase());
      return next;
    }
  }
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `value` with node references renamed: `{{old...}}` templates and `ref: "old..."` fields. */
export function renameRefs(value: unknown, idMap: Record<string, string>): unknown {
  const olds = Object.keys(idMap);
  if (!olds.length) return value;
  const re = new RegExp(`(\\{\\{-?\\s*)(${olds.map(escapeRe).join("|")})(?=\\s*(?:[.}|\\[]|-?\\}))`, "g");
  const refRe = new RegExp(`^(${olds.map(escapeRe).join("|")})(?=$|\\.)`);
  const walk = (v: unknown, key?: string): unknown => {
    if (typeof v === "string") {
      let out = v.replace(re, (_m, open: string, id: string) => `${open}${idMap[id]}`);
      if (key === "ref") out = out.replace(refRe, (id) => idMap[id]);
      return out;
    }
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = walk(x, k);
      return out;
    }
    return v;
  };
  return walk(value);
}

interface Box {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

function bounds(nodes: NodeSpec[], sizes: Sizes = {}): Box | null {
  let box: Box | null = null;
  for (const n of nodes) {
    if (!n.position) continue;
    const s = sizes[n.id];
    const w = s?.width ?? NODE_W;
    const h = s?.height ?? NODE_H;
    const b = { minX: n.position.x, minY: n.position.y, maxX: n.position.x + w, maxY: n.position.y + h };
    box = box
      ? { minX: Math.min(box.minX, b.minX), minY: Math.min(box.minY, b.minY), maxX: Math.max(box.maxX, b.maxX), maxY: Math.max(box.maxY, b.maxY) }
      : b;
  }
  return box;
}

/** The canvas's `inputs` schema with the proposal's fields added (the canvas wins on a clash). */
export function mergeInputs(canvas: JsonSchema | undefined, proposal: JsonSchema | undefined): JsonSchema | undefined {
  if (!proposal || typeof proposal !== "object") return canvas;
  if (!canvas || typeof canvas !== "object") return structuredClone(proposal);
  const props = { ...(proposal.properties ?? {}), ...(canvas.properties ?? {}) };
  const required = Array.from(new Set([...(Array.isArray(canvas.required) ? canvas.required : []), ...(Array.isArray(proposal.required) ? proposal.required : [])]));
  const out: JsonSchema = { ...structuredClone(proposal), ...canvas, properties: props };
  if (required.length) out.required = required;
  return out;
}

/** The canvas with its graph (and inputs) replaced by the proposal's; the canvas keeps its id and name. */
export function replaceFlow(canvas: FlowDocument, proposal: FlowDocument): FlowDocument {
  const next: FlowDocument = { ...structuredClone(proposal), nodes: structuredClone(proposal.nodes ?? []), edges: structuredClone(proposal.edges ?? []) };
  if (canvas.schema !== undefined) next.schema = canvas.schema;
  if (canvas.id !== undefined) next.id = canvas.id;
  else delete next.id;
  if (canvas.name !== undefined) next.name = canvas.name;
  return fillMissingPositions(next);
}

/**
 * Add the proposal to the canvas: fresh ids where they clash, edges and references following them,
 * placed to the right of what exists. An empty canvas gets the proposal as it is (as Replace).
 */
export function mergeFlow(canvas: FlowDocument, proposal: FlowDocument, sizes: Sizes = {}, random: () => number = Math.random): MergeResult {
  if (!canvas.nodes.length) return { doc: replaceFlow(canvas, proposal), idMap: {} };
  const taken = new Set(canvas.nodes.map((n) => n.id.toLowerCase()));
  const idMap: Record<string, string> = {};
  const placed = fillMissingPositions({ nodes: structuredClone(proposal.nodes ?? []), edges: proposal.edges ?? [] }).nodes;
  for (const n of placed) {
    if (taken.has(n.id.toLowerCase())) idMap[n.id] = freshId(n.id, taken, n.type, random);
    else taken.add(n.id.toLowerCase());
  }
  const mv = (id: string) => idMap[id] ?? id;

  // Right of the canvas's bounding box, top-aligned with it.
  const here = bounds(canvas.nodes, sizes);
  const there = bounds(placed);
  const dx = here && there ? here.maxX + MERGE_GAP - there.minX : 0;
  const dy = here && there ? here.minY - there.minY : 0;

  const nodes: NodeSpec[] = placed.map((n) => {
    const out: NodeSpec = { ...n, id: mv(n.id) };
    if (n.config !== undefined) out.config = renameRefs(n.config, idMap) as Record<string, any>;
    if (Array.isArray(n.requires)) out.requires = n.requires.map((r: unknown) => (typeof r === "string" ? mv(r) : r));
    if (n.position) out.position = { x: Math.round(n.position.x + dx), y: Math.round(n.position.y + dy) };
    return out;
  });

  const edgeIds = new Set(canvas.edges.map((e) => e.id).filter((x): x is string => !!x).map((x) => x.toLowerCase()));
  const known = new Set(nodes.map((n) => n.id));
  const edges: EdgeSpec[] = [];
  for (const e of proposal.edges ?? []) {
    const out: EdgeSpec = { ...e, source: mv(e.source), target: mv(e.target) };
    if (!known.has(out.source) || !known.has(out.target)) continue; // never a ghost edge
    if (out.id) {
      if (edgeIds.has(out.id.toLowerCase())) out.id = freshId(out.id, edgeIds, undefined, random);
      else edgeIds.add(out.id.toLowerCase());
    }
    edges.push(out);
  }

  const doc: FlowDocument = { ...canvas, nodes: [...canvas.nodes, ...nodes], edges: [...canvas.edges, ...edges] };
  const inputs = mergeInputs(canvas.inputs, proposal.inputs);
  if (inputs !== undefined) doc.inputs = inputs;
  if (proposal.variables && typeof proposal.variables === "object") doc.variables = { ...proposal.variables, ...(canvas.variables ?? {}) };
  return { doc, idMap };
}
